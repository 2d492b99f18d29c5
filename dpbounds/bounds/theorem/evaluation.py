r"""Vectorised and exact evaluation of a bound (:meth:`Bound.evaluate` and friends).

:meth:`Bound.evaluate` lambdifies the expression once (cached on the bound) and broadcasts
NumPy arrays; every value is checked (finite, positive or nonnegative as its symbol is
declared) and every stated assumption with a relation is checked elementwise.
:meth:`Bound.evaluate_symbolic` substitutes exactly and evaluates with ``evalf`` (the oracle of
the tests).

Example
-------
>>> from dpbounds.bounds.theorem import Assumption, Lemma, sym
>>> from dpbounds.provenance import Provenance, Source
>>> N, eps = sym("N"), sym("eps")
>>> b = Lemma(name="toy", quantity="q", expr=1 / (N * eps),
...           sources=(Source("toy", "eq. (1)", Provenance.DERIVED),),
...           assumptions=(Assumption("eps <= 10", eps <= 10),))
>>> b.evaluate(N=[10.0, 100.0], eps=0.5)
array([0.2 , 0.02])
>>> b.evaluate(N=10.0, eps=20.0)
Traceback (most recent call last):
    ...
ValueError: toy: assumption violated: eps <= 10 (eps <= 10)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy as sp

from dpbounds._validation import _show
from dpbounds.bounds.theorem.symbols import names as _names
from dpbounds.bounds.theorem.symbols import sym
from dpbounds.notation import did_you_mean

if TYPE_CHECKING:
    from dpbounds.bounds.theorem.structure import _BoundLike

__all__ = []


class EvaluationMixin:
    """The evaluation methods of :class:`~dpbounds.bounds.theorem.Bound`."""

    def _function(self: _BoundLike, expr_key: str, expr: sp.Expr,
                  names: tuple[str, ...], *, cse: bool = True) -> Callable:
        # kept with the expression and its argument names: a copy made by
        # dataclasses.replace shares the cache dict, and an id in a key may be reused, so a
        # function compiled for another expression under the same key is compiled again
        hit = self._cache.get(expr_key)
        if hit is None or hit[0] is not expr or hit[1] != names:
            fn = sp.lambdify([sym(n) for n in names], expr, modules="numpy", cse=cse)
            hit = self._cache[expr_key] = (expr, tuple(names), fn)
        return hit[2]

    def _needed(self: _BoundLike, index: int, rel: Any) -> tuple[str, ...]:
        """The parameter names of assumption ``index``'s relation ``rel``, kept with the
        compiled functions: sympy walks the expression tree for ``free_symbols`` on every
        call (0.5 of the 1.5 CPU-s that Yang et al.'s planner spent in 2,208 evaluations)."""
        key = f"needed:{index}:{id(rel)}"
        hit = self._cache.get(key)
        if hit is None or hit[0] is not rel:  # the relation itself kept: an id may be reused
            hit = self._cache[key] = (rel, tuple(_names(rel.free_symbols)))
        return hit[1]

    def _check_params(self: _BoundLike, names: Sequence[str], params: Mapping[str, Any],
                      ignore_extra: bool) -> dict[str, np.ndarray]:
        missing = [n for n in names if n not in params]
        if missing:
            hint = did_you_mean(params, [*names, *self.assumption_parameters])
            raise ValueError(f"{self.name}: missing parameter(s) {missing}; "
                             f"this bound needs {list(names)}" + (f"; {hint}" if hint else ""))
        if not ignore_extra:
            allowed = set(names) | set(self.assumption_parameters)
            extra = [k for k in params if k not in allowed]
            if extra:
                raise ValueError(f"{self.name}: {did_you_mean(extra, names)}; "
                                 f"this bound needs {list(names)}")
        values: dict[str, np.ndarray] = {}
        for n in names:
            given = params[n]
            if type(given) is float or type(given) is int:
                # a Python number: the same checks and 0-d array by scalar arithmetic (NumPy's
                # reductions cost ~40 us a parameter: 0.1 CPU-s of a Yang et al. plan's
                # 1,589 bound evaluations)
                try:
                    x = float(given)
                except OverflowError:  # an int beyond float: not finite (shown 1.00e+400)
                    raise ValueError(f"{n} must be finite, got {_show(given)}") from None
                if not math.isfinite(x):
                    raise ValueError(f"{n} must be finite, got {given!r}")
                if sym(n).is_positive and not x > 0:
                    raise ValueError(f"{n} must be > 0 (valid range (0, inf)), got {given!r}")
                if sym(n).is_nonnegative and not x >= 0:
                    raise ValueError(f"{n} must be >= 0 (valid range [0, inf)), got {given!r}")
                values[n] = np.asarray(x)
                continue
            if isinstance(given, np.ndarray | np.generic) and np.ndim(given) == 0:
                given = given.item()  # messages show 1.5, not array(1.5)
            try:
                arr = np.asarray(given, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{n} must be a real number, got {given!r}") from None
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{n} must be finite, got {given!r}")
            if sym(n).is_positive and not np.all(arr > 0):
                raise ValueError(f"{n} must be > 0 (valid range (0, inf)), got {given!r}")
            if sym(n).is_nonnegative and not np.all(arr >= 0):
                raise ValueError(f"{n} must be >= 0 (valid range [0, inf)), got {given!r}")
            values[n] = arr
        return values

    def _check_assumptions(self: _BoundLike, values: Mapping[str, np.ndarray],
                           invalid: str = "raise") -> np.ndarray | bool:
        """Check the relations; return the mask of points where all hold (``invalid="nan"``)."""
        ok_all: np.ndarray | bool = True
        for i, a in enumerate(self.assumptions):
            rel = a.relation
            if rel is None or rel is sp.true:
                continue
            if rel is sp.false:
                raise ValueError(f"{self.name}: assumption violated: {a.text}")
            needed = self._needed(i, rel)
            if not all(n in values for n in needed):
                continue
            # keyed by position (a bound's assumptions never change; printing the relation
            # for a key cost more than the check), compiled without common-subexpression
            # elimination (a relation is small; CSE cost a notebook's first draw ~0.2 CPU-s)
            fn = self._function(f"assumption:{i}:{id(rel)}", rel, needed, cse=False)
            with np.errstate(all="ignore"):
                ok = np.asarray(fn(*(values[n] for n in needed)), dtype=bool)
            if invalid == "raise" and not np.all(ok):
                raise ValueError(f"{self.name}: assumption violated: {a.text} "
                                 f"({sp.sstr(rel)})")
            ok_all = ok_all & ok
        return ok_all

    def _assumption_holds_at(self: _BoundLike, index: int,
                             values: Mapping[str, float]) -> bool:
        """Whether assumption ``index`` holds at the scalar ``values`` by the compiled check
        :meth:`evaluate` uses (``False`` also where it cannot be evaluated: the caller then
        asks sympy, which is exact and ~100x slower)."""
        rel = self.assumptions[index].relation
        if rel is None:
            return True
        needed = self._needed(index, rel)
        fn = self._function(f"assumption:{index}:{id(rel)}", rel, needed, cse=False)
        try:
            with np.errstate(all="ignore"):
                return bool(np.all(np.asarray(fn(*(np.float64(values[n]) for n in needed)),
                                              dtype=bool)))
        except (TypeError, ValueError, KeyError, ZeroDivisionError, OverflowError):
            return False

    def evaluate(self: _BoundLike, *, ignore_extra: bool = False, invalid: str = "raise",
                 **params: Any) -> np.ndarray | float:
        """Evaluate the bound; NumPy arrays broadcast against each other.

        Parameters
        ----------
        ignore_extra:
            Accept (and ignore) keywords the bound does not use, e.g. a shared problem
            dictionary passed to several bounds.
        invalid:
            ``"raise"`` (default): a violated assumption or a non-finite value raises
            :class:`ValueError`. ``"nan"``: such points are returned as NaN (for scans over
            grids that leave the valid range; the caller must handle them).
        **params:
            One value (scalar or array) per name in :attr:`parameters`.

        Returns
        -------
        float for scalar inputs, otherwise an array of the broadcast shape.

        Raises
        ------
        ValueError
            A parameter is missing, unknown, non-finite, not positive, or (with
            ``invalid="raise"``) a stated assumption with a relation is violated.
        """
        if invalid not in ("raise", "nan"):
            raise ValueError(f"invalid must be 'raise' or 'nan', got {invalid!r}")
        names = self.parameters
        values = self._check_params(names, params, ignore_extra)
        for k in self.assumption_parameters:
            if k in params:
                values.update(self._check_params((k,), {k: params[k]}, True))
        ok = self._check_assumptions(values, invalid)
        fn = self._function("expr", self.expr, names)
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*(values[n] for n in names)), dtype=float)
        shape = np.broadcast_shapes(*(v.shape for v in values.values())) if values else ()
        out = np.broadcast_to(out, shape) if out.shape != shape else out
        if invalid == "nan":
            keep = np.broadcast_to(ok, shape) & np.isfinite(out)
            if self.nonnegative:
                keep = keep & (out >= 0)
            out = np.where(keep, out, np.nan)
        elif not np.all(np.isfinite(out)):
            raise ValueError(f"{self.name}: bound is not finite at these parameters "
                             "(overflow or a parameter outside the valid range)")
        elif self.nonnegative and np.any(out < 0):
            raise ValueError(f"{self.name}: bound is negative at these parameters (it bounds "
                             "an error, >= 0: the formula is outside its valid range there)")
        return float(out) if out.ndim == 0 else np.array(out)

    def evaluate_symbolic(self: _BoundLike, precision: int = 30, **params: Any) -> sp.Float:
        """Exact substitution and ``evalf`` at ``precision`` digits (slow; the oracle of tests)."""
        names = self.parameters
        self._check_params(names, params, ignore_extra=True)
        subs = {sym(n): sp.Float(str(float(params[n])), precision + 10) for n in names}
        return sp.N(self.expr.subs(subs), precision)

    def evaluate_hyperparameters(self: _BoundLike, *, ignore_extra: bool = True,
                                 **params: Any) -> dict[str, np.ndarray | float]:
        """The closed-form hyper-parameter choices evaluated at the problem parameters."""
        # type(self), not an import of structure (which imports this module: a cycle); Lemma
        # and Theorem add no fields to Bound, so the evaluation is the same
        # one bound per choice, kept with this one: built afresh per call, each compiled its
        # expression again (lambdify, ~5 ms), 90% of a Yang et al. plan's CPU and 2 of
        # normalized_sgd's full-study planning seconds. Keyed by what the choices are made of
        # (a copy by dataclasses.replace shares the cache dict; the mapping may be edited)
        key = ("hyperparameter_bounds", self.name, tuple(self.hyperparameters.items()),
               tuple(self.definitions.items()))
        bounds = self._cache.get(key)  # type: ignore[call-overload]
        if bounds is None:
            cls: Any = type(self)
            bounds = {k: cls(name=f"{self.name}:{k}", quantity=k, expr=e, sources=self.sources)
                      for k, e in self.resolved_hyperparameters().items()}
            self._cache[key] = bounds  # type: ignore[index]
        return {k: b.evaluate(ignore_extra=ignore_extra, **params) for k, b in bounds.items()}

