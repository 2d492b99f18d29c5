r"""The uniform theorem object of :mod:`dpbounds.bounds`.

Every utility bound in dpbounds is a :class:`Bound`: a sympy expression over named positive
symbols (``d``, ``N``, ``eps``, ``delta``, ``G``, ``L``, ``R``, hyper-parameters such as ``eta``
or ``E``) together with

* the quantity it bounds (e.g. :math:`\mathbb E\lVert\nabla F(\hat x)\rVert`);
* its stated assumptions (:class:`Assumption`: a sympy relation checked at evaluation time,
  or plain text);
* one or more :class:`~dpbounds.provenance.Source` citations with their provenance labels
  (a composed theorem cites each lemma it was built from);
* ``definitions`` (identities that always hold, e.g. :math:`T = NE`) and ``hyperparameters``
  (the closed-form *choices* of learning rate, momentum, epochs, noise, ...);
* the chain of :class:`Lemma` objects it was composed from (``steps``), so a reader can audit
  every substitution.

A :class:`Lemma` is a bound that still contains free hyper-parameters or placeholder symbols
for other lemmas' quantities; :meth:`Bound.compose` plugs bounds into those placeholders and
returns a :class:`Theorem`; :meth:`Bound.tuned` substitutes the closed-form hyper-parameter
choices, leaving a function of the problem parameters only.

Evaluation is vectorised: :meth:`Bound.evaluate` lambdifies the expression once (cached) and
broadcasts NumPy arrays. :meth:`Bound.exponents` extracts the leading-order scaling
*symbolically*: along a joint scaling path (default: :math:`d\propto N\to\infty`, the other
symbols fixed) it takes the limit of the partial log-derivatives
:math:`\partial\log B/\partial\log v`, which are exact powers of the dominant term; log factors
of that term are reported separately. :meth:`Bound.optimize` tunes the hyper-parameters
numerically (log-parameterised, scipy) next to the closed-form choice.

Example
-------
>>> import sympy as sp
>>> from dpbounds.bounds.theorem import Lemma, sym
>>> from dpbounds.provenance import Provenance, Source
>>> d, N, eps, eta = sym("d"), sym("N"), sym("eps"), sym("eta")
>>> toy = Lemma(
...     name="toy",
...     quantity="E||grad F||",
...     expr=1 / (eta * N) + eta * sp.sqrt(d) / eps,
...     sources=(Source("a toy", "eq. (1)", Provenance.DERIVED),),
...     hyperparameters={"eta": (eps / (N * sp.sqrt(d))) ** sp.Rational(1, 2)},
... )
>>> thm = toy.tuned()
>>> print(thm.exponents(("d", "N", "eps")))
d^(1/4) N^(-1/2) eps^(-1/2)
>>> float(thm.evaluate(d=100, N=1e4, eps=1.0))  # 2 * 100**0.25 / 100
0.0632455532033676
>>> best = toy.optimize(d=100, N=1e4, eps=1.0)
>>> round(best.value / best.closed_form_value, 6)
1.0
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from dpbounds.notation import SYMBOL_LATEX  # the one notation table (docs/notation.md)
from dpbounds.provenance import Provenance, Source

__all__ = [
    "SYMBOL_LATEX",
    "Assumption",
    "Bound",
    "Lemma",
    "Scaling",
    "Theorem",
    "Tuned",
    "sym",
]

_SYMBOL_CACHE: dict[str, sp.Symbol] = {}

#: Symbols that may be 0 (declared ``nonnegative``); every other symbol is ``positive``.
NONNEGATIVE_SYMBOLS: frozenset[str] = frozenset({"L1", "tau1", "beta"})


def sym(name: str) -> sp.Symbol:
    """The positive real sympy symbol used throughout dpbounds for ``name``.

    All bound symbols are declared ``positive=True`` (``nonnegative`` for the names in
    :data:`NONNEGATIVE_SYMBOLS`, e.g. ``L1``) so that sympy may split powers of products;
    ``evaluate`` checks the sign of every value it is given.
    """
    s = _SYMBOL_CACHE.get(name)
    if s is None:
        if name in NONNEGATIVE_SYMBOLS:
            s = sp.Symbol(name, nonnegative=True)
        else:
            s = sp.Symbol(name, positive=True)
        _SYMBOL_CACHE[name] = s
    return s


@dataclass(frozen=True)
class Assumption:
    """A stated assumption of a bound.

    Parameters
    ----------
    text:
        The assumption in words (always shown).
    relation:
        Optional sympy relation (e.g. ``sym("delta") < 1``) over the bound's symbols. When all
        its symbols are given to :meth:`Bound.evaluate`, it is checked elementwise and a
        violation raises :class:`ValueError` naming the relation.
    """

    text: str
    relation: sp.Basic | None = None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Scaling:
    r"""Leading-order scaling of a bound, computed by :meth:`Bound.exponents`.

    Attributes
    ----------
    powers:
        Exponent of each requested variable in the dominant term (exact sympy numbers).
    log_factors:
        The factors of the dominant term that contain logarithms (reported separately;
        they are what :math:`\tilde O` hides).
    term:
        The dominant additive term along the scaling path (``None`` if the bound is not a sum).
    regime:
        The scaling path: variable -> exponent ``a`` in ``v = s**a``, ``s -> oo``.
    """

    powers: Mapping[str, sp.Expr]
    log_factors: tuple[sp.Expr, ...]
    term: sp.Expr | None
    regime: Mapping[str, float]

    @property
    def monomial(self) -> sp.Expr:
        """The power part as a sympy monomial, e.g. ``d**(1/4)/sqrt(N*eps)``."""
        out = sp.Integer(1)
        for name, p in self.powers.items():
            out *= _base_of(name) ** p
        return out

    def __getitem__(self, name: str) -> sp.Expr:
        return self.powers[name]

    def __str__(self) -> str:
        parts = []
        for name, p in self.powers.items():
            if p == 0:
                continue
            parts.append(name if p == 1 else f"{name}^({p})")
        return " ".join(parts) if parts else "1"

    def describe(self) -> str:
        """One line with the powers, the log factors and the regime."""
        logs = " | ".join(sp.sstr(f) for f in self.log_factors) or "none"
        path = ", ".join(f"{k}~s^{v}" for k, v in self.regime.items())
        return f"{self} (log factors: {logs}; regime: {path}, s->oo)"


def _base_of(name: str) -> sp.Expr:
    if name.startswith("log(1/") and name.endswith(")"):
        return sp.log(1 / sym(name[6:-1]))
    return sym(name)


@dataclass(frozen=True)
class Tuned:
    """Result of :meth:`Bound.optimize`: numerically tuned hyper-parameters beside the closed form.

    Attributes
    ----------
    hyperparameters:
        The tuned values (name -> float).
    value:
        The bound at the tuned values.
    closed_form_hyperparameters:
        The closed-form choices evaluated at the same problem parameters.
    closed_form_value:
        The bound at the closed-form choices.
    success:
        Whether scipy reported convergence.
    """

    hyperparameters: dict[str, float]
    value: float
    closed_form_hyperparameters: dict[str, float]
    closed_form_value: float
    success: bool

    @property
    def improvement(self) -> float:
        """``closed_form_value / value`` (>= 1 up to optimiser tolerance)."""
        return self.closed_form_value / self.value


def _as_expr(value: Any) -> sp.Expr:
    if isinstance(value, Bound):
        return value.expr
    return sp.sympify(value)


def _names(symbols: Iterable[sp.Symbol]) -> tuple[str, ...]:
    return tuple(sorted(s.name for s in symbols))


@dataclass(frozen=True, eq=False)
class Bound:
    r"""A utility bound: ``quantity <= expr`` under ``assumptions``, cited by ``sources``.

    Parameters
    ----------
    name:
        Readable identifier, e.g. ``"tran_cutkosky.lemma5"``.
    quantity:
        What is bounded, in words or LaTeX (e.g. ``r"\mathbb E\lVert\nabla F(\hat x)\rVert"``).
    expr:
        The bound, a sympy expression over symbols made by :func:`sym`.
    sources:
        Citations (paper, result number, provenance). A composed theorem carries the union of
        its lemmas' sources after its own.
    assumptions:
        :class:`Assumption` objects (positivity of every symbol is implicit).
    definitions:
        Identities substituted before anything else, e.g. ``{"T": N*E}``.
    hyperparameters:
        Closed-form choices ``name -> expression``; a choice may use other choices, they are
        resolved by repeated substitution. :meth:`tuned` substitutes them.
    steps:
        The bounds this one was composed from, as ``(placeholder, bound)`` pairs
        (placeholder ``None`` for the base lemma).
    regime:
        Default scaling path of :meth:`exponents`: variable -> exponent ``a`` with ``v = s**a``.
    description:
        Free text shown by :meth:`audit` (derivation notes, what is ours).
    """

    name: str
    quantity: str
    expr: sp.Expr
    sources: tuple[Source, ...]
    assumptions: tuple[Assumption, ...] = ()
    definitions: Mapping[str, sp.Expr] = field(default_factory=dict)
    hyperparameters: Mapping[str, sp.Expr] = field(default_factory=dict)
    steps: tuple[tuple[str | None, Bound], ...] = ()
    regime: Mapping[str, float] = field(default_factory=lambda: {"d": 1, "N": 1})
    description: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "expr", _as_expr(self.expr))
        object.__setattr__(
            self, "definitions", {k: _as_expr(v) for k, v in dict(self.definitions).items()}
        )
        object.__setattr__(
            self,
            "hyperparameters",
            {k: _as_expr(v) for k, v in dict(self.hyperparameters).items()},
        )
        if not self.sources:
            raise ValueError(f"bound {self.name!r} needs at least one Source")
        if self.definitions:
            object.__setattr__(self, "expr", self._apply(self.expr, self.definitions))

    # ------------------------------------------------------------------ structure
    @property
    def parameters(self) -> tuple[str, ...]:
        """Names of the free symbols of the bound (the ``evaluate`` keywords), sorted."""
        return _names(self.expr.free_symbols)

    @property
    def assumption_parameters(self) -> tuple[str, ...]:
        """Symbols that appear only in the assumptions' relations (accepted by ``evaluate`` and
        checked against the relations, e.g. ``tau0`` in ``C >= 3 tau0``)."""
        syms = set()
        for a in self.assumptions:
            if a.relation is not None:
                syms |= a.relation.free_symbols
        return _names(syms - self.expr.free_symbols)

    @property
    def provenance(self) -> Provenance:
        """The weakest label among the sources (DERIVED beats RECONSTRUCTED beats VERBATIM)."""
        order = [Provenance.MISSING, Provenance.DERIVED, Provenance.RECONSTRUCTED,
                 Provenance.VERBATIM]
        return min((s.provenance for s in self.sources), key=order.index)

    @staticmethod
    def _apply(expr: sp.Expr, subs: Mapping[str, sp.Expr], max_rounds: int = 20) -> sp.Expr:
        mapping = {sym(k): v for k, v in subs.items()}
        for _ in range(max_rounds):
            new = expr.xreplace(mapping)
            if new == expr:
                return new
            expr = new
        raise ValueError("hyper-parameter choices refer to each other circularly")

    def resolved_hyperparameters(self) -> dict[str, sp.Expr]:
        """Closed-form choices with every reference to another choice substituted."""
        return {k: self._apply(self._apply(v, self.hyperparameters), self.definitions)
                for k, v in self.hyperparameters.items()}

    def replace(self, **changes: Any) -> Bound:
        """A copy with some fields changed (the cache is not copied)."""
        changes.setdefault("_cache", {})
        return dataclasses.replace(self, **changes)

    def tuned(self, name: str | None = None, **overrides: Any) -> Theorem:
        """The bound with its closed-form hyper-parameter choices substituted.

        ``overrides`` replace individual choices (expressions or numbers).
        """
        choices = dict(self.hyperparameters)
        choices.update({k: _as_expr(v) for k, v in overrides.items()})
        expr = self._apply(self.expr, choices)
        # assumptions on hyper-parameters become conditions on the problem parameters
        assumptions = tuple(
            a if a.relation is None else
            Assumption(a.text, self._apply(self._apply(a.relation, self.definitions), choices))
            for a in self.assumptions)
        return Theorem(
            name=name or f"{self.name} (tuned)",
            quantity=self.quantity,
            expr=expr,
            sources=self.sources,
            assumptions=assumptions,
            definitions={},
            hyperparameters=choices,
            steps=((None, self),),
            regime=self.regime,
            description=self.description,
        )

    def compose(
        self,
        name: str,
        substitutions: Mapping[str, Bound | sp.Expr | float],
        *,
        quantity: str | None = None,
        sources: Sequence[Source] = (),
        assumptions: Sequence[Assumption] = (),
        hyperparameters: Mapping[str, sp.Expr] | None = None,
        description: str = "",
        regime: Mapping[str, float] | None = None,
    ) -> Theorem:
        """Plug bounds (or expressions) into placeholder symbols of this bound.

        Each ``substitutions[name]`` replaces the symbol ``name``; a :class:`Bound` value
        contributes its expression, sources and assumptions, and is recorded in ``steps`` so
        :meth:`audit` can show the chain. The composed bound is valid when each substituted
        bound upper-bounds the placeholder and this bound is non-decreasing in it (stated by
        the lemmas' authors; check it when writing a composition).
        """
        unknown = [k for k in substitutions if sym(k) not in self.expr.free_symbols]
        if unknown:
            raise ValueError(f"compose: {unknown} are not symbols of {self.name!r} "
                             f"(its symbols: {self.parameters})")
        expr = self.expr.xreplace({sym(k): _as_expr(v) for k, v in substitutions.items()})
        steps: list[tuple[str | None, Bound]] = [(None, self)]
        all_sources = list(sources) + list(self.sources)
        all_assumptions = list(self.assumptions)
        hyper = dict(self.hyperparameters)
        for k, v in substitutions.items():
            if isinstance(v, Bound):
                steps.append((k, v))
                all_sources += v.sources
                all_assumptions += v.assumptions
                hyper.update(v.hyperparameters)
        all_assumptions += list(assumptions)
        if hyperparameters:
            hyper.update({k: _as_expr(v) for k, v in hyperparameters.items()})
        return Theorem(
            name=name,
            quantity=quantity or self.quantity,
            expr=expr,
            sources=tuple(dict.fromkeys(all_sources)),
            assumptions=tuple(dict.fromkeys(all_assumptions)),
            hyperparameters=hyper,
            steps=tuple(steps),
            regime=dict(regime) if regime is not None else dict(self.regime),
            description=description,
        )

    # ------------------------------------------------------------------ evaluation
    def _function(self, expr_key: str, expr: sp.Expr, names: tuple[str, ...]) -> Callable:
        fn = self._cache.get(expr_key)
        if fn is None:
            fn = sp.lambdify([sym(n) for n in names], expr, modules="numpy", cse=True)
            self._cache[expr_key] = fn
        return fn

    def _check_params(self, names: Sequence[str], params: Mapping[str, Any],
                      ignore_extra: bool) -> dict[str, np.ndarray]:
        missing = [n for n in names if n not in params]
        if missing:
            raise ValueError(f"{self.name}: missing parameter(s) {missing}; "
                             f"this bound needs {list(names)}")
        if not ignore_extra:
            allowed = set(names) | set(self.assumption_parameters)
            extra = [k for k in params if k not in allowed]
            if extra:
                raise ValueError(f"{self.name}: unknown parameter(s) {extra}; "
                                 f"this bound needs {list(names)}")
        values: dict[str, np.ndarray] = {}
        for n in names:
            given = params[n]
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

    def _check_assumptions(self, values: Mapping[str, np.ndarray],
                           invalid: str = "raise") -> np.ndarray | bool:
        """Check the relations; return the mask of points where all hold (``invalid="nan"``)."""
        ok_all: np.ndarray | bool = True
        for a in self.assumptions:
            rel = a.relation
            if rel is None or rel is sp.true:
                continue
            if rel is sp.false:
                raise ValueError(f"{self.name}: assumption violated: {a.text}")
            needed = _names(rel.free_symbols)
            if not all(n in values for n in needed):
                continue
            key = f"assumption:{sp.srepr(rel)}"
            fn = self._function(key, rel, needed)
            with np.errstate(all="ignore"):
                ok = np.asarray(fn(*(values[n] for n in needed)), dtype=bool)
            if invalid == "raise" and not np.all(ok):
                raise ValueError(f"{self.name}: assumption violated: {a.text} "
                                 f"({sp.sstr(rel)})")
            ok_all = ok_all & ok
        return ok_all

    def evaluate(self, *, ignore_extra: bool = False, invalid: str = "raise",
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
            out = np.where(np.broadcast_to(ok, shape) & np.isfinite(out), out, np.nan)
        elif not np.all(np.isfinite(out)):
            raise ValueError(f"{self.name}: bound is not finite at these parameters "
                             "(overflow or a parameter outside the valid range)")
        return float(out) if out.ndim == 0 else np.array(out)

    def evaluate_symbolic(self, precision: int = 30, **params: Any) -> sp.Float:
        """Exact substitution and ``evalf`` at ``precision`` digits (slow; the oracle of tests)."""
        names = self.parameters
        self._check_params(names, params, ignore_extra=True)
        subs = {sym(n): sp.Float(str(float(params[n])), precision + 10) for n in names}
        return sp.N(self.expr.subs(subs), precision)

    def evaluate_hyperparameters(self, *, ignore_extra: bool = True,
                                 **params: Any) -> dict[str, np.ndarray | float]:
        """The closed-form hyper-parameter choices evaluated at the problem parameters."""
        out = {}
        for k, e in self.resolved_hyperparameters().items():
            tmp = Bound(name=f"{self.name}:{k}", quantity=k, expr=e, sources=self.sources)
            out[k] = tmp.evaluate(ignore_extra=ignore_extra, **params)
        return out

    # ------------------------------------------------------------------ tuning
    def optimize(
        self,
        over: Sequence[str] | None = None,
        *,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        **params: float,
    ) -> Tuned:
        """Minimise the bound numerically over hyper-parameters, from the closed-form choice.

        The search runs in log-space (every hyper-parameter is positive) with L-BFGS-B,
        started at the closed-form choice (or 1 where there is none); ``bounds`` restricts a
        hyper-parameter to ``(low, high)`` (e.g. a momentum weight to ``(1e-12, 1)``).

        Parameters
        ----------
        over:
            Hyper-parameters to tune; default: every choice in ``hyperparameters`` that is a
            free symbol of the bound.
        bounds:
            Optional box constraints per hyper-parameter, in natural units.
        **params:
            Scalar values of the remaining (problem) parameters.
        """
        from scipy.optimize import minimize

        free = set(self.parameters)
        if over is None:
            over = [k for k in self.hyperparameters if k in free]
        over = list(over)
        if not over:
            raise ValueError(f"{self.name}: nothing to optimise (no free hyper-parameters)")
        bad = [k for k in over if k not in free]
        if bad:
            raise ValueError(f"{self.name}: {bad} are not free symbols of the bound")
        closed = self.evaluate_hyperparameters(**params) if self.hyperparameters else {}
        problem = {k: v for k, v in params.items() if k in free and k not in over}
        for k, v in closed.items():  # fixed choices (not tuned) take their closed form
            if k in free and k not in over and k not in problem:
                problem[k] = float(v)
        x0 = np.array([math.log(float(closed[k])) if k in closed else 0.0 for k in over])
        box = None
        if bounds:
            def _log(v: float) -> float | None:
                return math.log(v) if 0 < v < math.inf else None

            box = [(_log(bounds[k][0]), _log(bounds[k][1])) if k in bounds
                   else (None, None) for k in over]
            x0 = np.array([min(max(x, lo if lo is not None else x), hi if hi is not None else x)
                           for x, (lo, hi) in zip(x0, box)])
        names = self.parameters
        fn = self._function("expr", self.expr, names)
        fixed = {k: float(v) for k, v in problem.items()}
        missing = [n for n in names if n not in fixed and n not in over]
        if missing:
            raise ValueError(f"{self.name}: missing parameter(s) {missing}")
        self._check_params([n for n in names if n in fixed], fixed, ignore_extra=True)

        def objective(z: np.ndarray) -> float:
            vals = dict(fixed)
            vals.update({k: math.exp(x) for k, x in zip(over, z)})
            with np.errstate(all="ignore"):
                v = float(fn(*(vals[n] for n in names)))
            return math.log(v) if v > 0 and math.isfinite(v) else 1e300

        best = None
        for method in ("L-BFGS-B", "Nelder-Mead"):
            res = minimize(objective, x0, method=method, bounds=box,
                           options={"maxiter": 5000} if method == "Nelder-Mead" else {})
            if best is None or res.fun < best.fun:
                best = res
            x0 = best.x
        tuned = {k: math.exp(x) for k, x in zip(over, best.x)}
        value = math.exp(best.fun)
        closed_vals = dict(fixed)
        closed_vals.update({k: float(closed[k]) for k in over if k in closed})
        if all(k in closed for k in over):
            closed_value = float(fn(*(closed_vals[n] for n in names)))
        else:
            closed_value = math.nan
        return Tuned(
            hyperparameters=tuned,
            value=value,
            closed_form_hyperparameters={k: float(v) for k, v in closed.items()},
            closed_form_value=closed_value,
            success=bool(best.success),
        )

    # ------------------------------------------------------------------ scaling
    def terms(self) -> tuple[sp.Expr, ...]:
        """The top-level additive terms of the bound."""
        return sp.Add.make_args(self.expr)

    def exponents(
        self,
        variables: Sequence[str] = ("d", "N", "eps"),
        regime: Mapping[str, float] | None = None,
        *,
        method: str = "structural",
    ) -> Scaling:
        r"""Leading-order scaling in ``variables``, computed symbolically.

        Along the path :math:`v = s^{a_v}` (``regime``, default :attr:`regime`; every other
        symbol is held fixed), the bound behaves as :math:`c\,s^{p}(\log s)^{q}`. The exponent
        of a variable ``v`` is :math:`\lim_{s\to\infty}\partial\log B/\partial\log v`, i.e. its
        power in the dominant term; logarithmic factors contribute 0 and are reported in
        :attr:`Scaling.log_factors`. ``"log(1/delta)"`` may be requested as a variable (then
        :math:`\delta = e^{-\ell}` and the exponent is in :math:`\ell`).

        Parameters
        ----------
        variables:
            Names whose exponents are wanted.
        regime:
            Scaling path ``{name: a}`` with ``name = s**a``; default :attr:`regime`
            (:math:`d\propto N\to\infty`).
        method:
            ``"structural"`` (default, fast): walks the expression tree, taking at every sum
            the terms of largest order :math:`(p, q)` along the path; exact for sums of
            positive products of powers and logarithms. ``"limit"``: sympy
            ``limit`` of the partial log-derivatives along the path (slow; an independent
            check of the structural result).

        Raises
        ------
        ValueError
            If the leading term is not unique along the path (tied terms with different
            powers), or the expression has a form the structural walk cannot order
            (e.g. a cancelling difference; use ``method="limit"``).
        """
        regime = dict(self.regime if regime is None else regime)
        expr = self.expr
        targets: dict[str, sp.Symbol] = {}
        for v in variables:
            if v.startswith("log(1/") and v.endswith(")"):
                inner = v[6:-1]
                ell = sp.Symbol(f"_log_{inner}", positive=True)
                targets[v] = ell
                expr = expr.xreplace({sym(inner): sp.exp(-ell)})
            else:
                targets[v] = sym(v)
        weights = {sym(k): sp.nsimplify(a) for k, a in regime.items()}
        if method == "structural":
            order = _order(expr, weights, frozenset(targets.values()))
            powers = {v: sp.nsimplify(order.powers.get(x, 0)) for v, x in targets.items()}
            winners = order.terms
        elif method == "limit":
            powers = _limit_powers(expr, weights, targets)
            winners = None
        else:
            raise ValueError(f"method must be 'structural' or 'limit', got {method!r}")
        term = _dominant_term(expr, weights, frozenset(targets.values()))
        back = {x: sp.log(1 / sym(v[6:-1]))
                for v, x in targets.items() if x.name.startswith("_log_")}
        scaled = set(weights) | set(targets.values())
        log_factors: list[sp.Expr] = []
        for w in (winners or ((term,) if term is not None else ())):
            split = sp.expand_power_base(sp.powsimp(w, force=True), force=True)
            part = sp.Mul(*(f for f in sp.Mul.make_args(split) if _is_log_factor(f, scaled)))
            part = sp.powsimp(part.xreplace(back), force=True)
            if part != 1 and part not in log_factors:
                log_factors.append(part)
        return Scaling(powers=powers, log_factors=tuple(log_factors), term=term, regime=regime)

    # ------------------------------------------------------------------ rendering
    def latex(self) -> str:
        """``quantity \\le expr`` in LaTeX with readable symbol names."""
        names = {sym(k): v for k, v in SYMBOL_LATEX.items()}
        body = sp.latex(self.expr, symbol_names=names)
        return rf"{self.quantity} \le {body}"

    def _repr_latex_(self) -> str:
        src = "; ".join(f"{s.result} [{s.provenance}]" for s in self.sources)
        return rf"$\displaystyle {self.latex()}$ \quad ({self.name}: {src})"

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.quantity} <= {sp.sstr(self.expr)}"]
        for a in self.assumptions:
            lines.append(f"  assuming {a.text}")
        for k, v in self.hyperparameters.items():
            lines.append(f"  choice {k} = {sp.sstr(v)}")
        for src in self.sources:
            lines.append(f"  source: {src}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} [{self.provenance}] params={self.parameters}>"

    def audit(self) -> str:
        """The full composition chain, one block per lemma, for a reader to check each step."""
        out: list[str] = []

        def walk(b: Bound, placeholder: str | None, depth: int) -> None:
            pad = "  " * depth
            head = f"{pad}- {b.name}" + (f"  [plugged in for {placeholder}]" if placeholder
                                        else "")
            out.append(head)
            out.append(f"{pad}    {b.quantity} <= {sp.sstr(b.expr)}")
            for src in b.sources[:1]:
                out.append(f"{pad}    source: {src}")
            if b.description:
                out.append(f"{pad}    note: {b.description}")
            for ph, sub in b.steps:
                walk(sub, ph, depth + 1)

        walk(self, None, 0)
        return "\n".join(out)



@dataclass(frozen=True)
class _Order:
    """``c * s**p * log(s)**q`` along a scaling path, with the powers of each symbol."""

    p: sp.Expr
    q: sp.Expr
    powers: Mapping[sp.Symbol, sp.Expr]
    terms: tuple[sp.Expr, ...] = ()


def _order(expr: sp.Expr, weights: Mapping[sp.Symbol, sp.Expr],
           targets: frozenset[sp.Symbol] = frozenset()) -> _Order:
    """Asymptotic order of a positive expression along ``v = s**weights[v]`` (structural).

    A sub-expression free of the scaled symbols and of the ``targets`` is a constant along
    the path (its sign is the bound's business, e.g. ``1 - tau0/r > 0`` by assumption).
    """
    zero = sp.Integer(0)
    if not (expr.free_symbols & (set(weights) | set(targets))):
        return _Order(zero, zero, {}, (expr,))
    if expr.is_number:
        if expr.is_positive is False:
            raise ValueError(f"cannot order the non-positive constant {expr}")
        return _Order(zero, zero, {}, (expr,))
    if isinstance(expr, sp.Symbol):
        return _Order(weights.get(expr, zero), zero, {expr: sp.Integer(1)}, (expr,))
    if isinstance(expr, sp.Mul):
        p, q, powers = zero, zero, {}
        for f in expr.args:
            if f.is_number:
                continue
            o = _order(f, weights, targets)
            p, q = p + o.p, q + o.q
            for k, v in o.powers.items():
                powers[k] = powers.get(k, zero) + v
        return _Order(p, q, powers, (expr,))
    if isinstance(expr, sp.Pow):
        base, e = expr.args
        if e.has(*weights.keys()) or not e.is_number:
            if e.free_symbols and not base.free_symbols:
                raise ValueError(f"cannot order the exponential {expr}; use method='limit'")
            raise ValueError(f"cannot order {expr} with a symbolic exponent; use method='limit'")
        o = _order(base, weights, targets)
        return _Order(o.p * e, o.q * e, {k: v * e for k, v in o.powers.items()}, (expr,))
    if isinstance(expr, sp.Add):
        subs = [_order(a, weights, targets) for a in expr.args]
        negative = [a for a in expr.args if a.could_extract_minus_sign()]
        top = max((o.p, o.q) for o in subs)
        win = [(a, o) for a, o in zip(expr.args, subs) if (o.p, o.q) == top]
        if any(a in negative for a, _ in win):
            raise ValueError(f"cannot order the difference {expr}; use method='limit'")
        first = win[0][1].powers
        keys = set().union(*(o.powers for _, o in win))
        for _, o in win[1:]:
            if any(sp.simplify(o.powers.get(k, zero) - first.get(k, zero)) != 0 for k in keys):
                raise ValueError(
                    "the leading term is not unique along this path: "
                    f"{[sp.sstr(a) for a, _ in win]} tie with different powers; scale more "
                    "variables in `regime`")
        return _Order(top[0], top[1], dict(first), tuple(a for a, _ in win))
    if isinstance(expr, sp.log):
        o = _order(expr.args[0], weights, targets)
        if o.p != 0:
            return _Order(zero, sp.Integer(1), {}, (expr,))
        return _Order(zero, zero, {}, (expr,))  # log of a fixed or log-growing quantity
    if isinstance(expr, sp.exp):
        o = _order(expr.args[0], weights, targets)
        if o.p == 0 and o.q == 0:  # e.g. delta = exp(-ell) inside log(n/delta): bounded
            return _Order(zero, zero, {}, (expr,))
    raise ValueError(f"cannot order {type(expr).__name__} {expr}; use method='limit'")


def _is_log_factor(f: sp.Expr, scaled: set[sp.Symbol]) -> bool:
    """Whether every scaled symbol of ``f`` sits inside a logarithm (a polylog factor)."""
    if not f.has(sp.log):
        return False
    stripped = f.replace(lambda e: isinstance(e, sp.log), lambda e: sp.Integer(2))
    return not (stripped.free_symbols & scaled)


def _dominant_term(expr: sp.Expr, weights: Mapping[sp.Symbol, sp.Expr],
                   targets: frozenset[sp.Symbol] = frozenset()) -> sp.Expr:
    terms = sp.Add.make_args(expr)
    if len(terms) == 1:
        return terms[0]
    orders = [_order(t, weights, targets) for t in terms]
    top = max((o.p, o.q) for o in orders)
    winners = [t for t, o in zip(terms, orders) if (o.p, o.q) == top]
    return winners[0] if len(winners) == 1 else sp.Add(*winners)


def _limit_powers(expr: sp.Expr, weights: Mapping[sp.Symbol, sp.Expr],
                  targets: Mapping[str, sp.Symbol]) -> dict[str, sp.Expr]:
    """Limits of partial log-derivatives along the path (two generic fixed values, compared)."""
    s = sp.Symbol("_s", positive=True)
    results = []
    for generic in (0, 1):
        path: dict[sp.Symbol, sp.Expr] = {}
        for x in expr.free_symbols:
            if x in weights:
                path[x] = s ** weights[x]
            elif x.name == "delta":
                path[x] = sp.Rational(1, 1000) if generic == 0 else sp.Rational(1, 10**7)
            elif x.name.startswith("_log_"):
                path[x] = sp.Integer(7) if generic == 0 else sp.Integer(19)
            else:
                path[x] = sp.Integer(1) if generic == 0 else sp.Rational(17, 5)
        logb = sp.log(expr)
        powers = {}
        for v, x in targets.items():
            if x not in expr.free_symbols:
                powers[v] = sp.Integer(0)
                continue
            deriv = x * sp.diff(logb, x)
            powers[v] = sp.nsimplify(sp.limit(deriv.xreplace(path), s, sp.oo))
        results.append(powers)
    if results[0] != results[1]:
        raise ValueError(f"the leading term is not unique along this path "
                         f"({results[0]} vs {results[1]} for two generic constants)")
    return results[0]


class Lemma(Bound):
    """A building block: a bound that may still contain hyper-parameters and placeholders."""


class Theorem(Bound):
    """A composed or tuned bound (see :meth:`Bound.compose` and :meth:`Bound.tuned`)."""
