r"""Numerical tuning of a bound's hyper-parameters: :meth:`Bound.optimize` and :class:`Tuned`.

The search runs in log-space (every hyper-parameter is positive), started at the closed-form
choice, with L-BFGS-B then Nelder-Mead; the result sits beside the closed form so that a reader
sees how far the paper's choice is from the numerical optimum.

Example
-------
>>> import sympy as sp
>>> from dpbounds.bounds.theorem import Lemma, sym
>>> from dpbounds.provenance import Provenance, Source
>>> N, eta = sym("N"), sym("eta")
>>> b = Lemma(name="toy", quantity="q", expr=1 / (eta * N) + eta,
...           sources=(Source("toy", "eq. (1)", Provenance.DERIVED),),
...           hyperparameters={"eta": 1 / sp.sqrt(N)})
>>> best = b.optimize(N=100.0)
>>> round(best.value, 6), round(best.improvement, 6)  # the closed form is optimal: 2/sqrt(N)
(0.2, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dpbounds.bounds.theorem.symbols import COUNT_SYMBOLS

if TYPE_CHECKING:
    from dpbounds.bounds.theorem.structure import _BoundLike

__all__ = ["Tuned"]


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




def _whole_counts(objective: Any, x: np.ndarray, counts: list[int],
                  box: list[tuple[float | None, float | None]] | None,
                  natural: list[tuple[float, float]] | None = None
                  ) -> tuple[np.ndarray, float]:
    """The best point with the ``counts`` coordinates of log-point ``x`` at whole numbers.

    Each count takes its floor or ceiling (at least 1, inside its box; the box's own whole
    end if neither is); the other coordinates are re-tuned (L-BFGS-B from ``x``) at each
    combination. Returns ``(log-point, objective)``; the objective is ``1e300`` when no
    combination has a finite bound. ``natural``: the box in natural units (the whole ends
    are taken from it: exp(log(1e15)) is 1e15 only to ~10 units, and a slack let E = 1e15 - 1
    through a box starting at 1e15, fuzz round 14).
    """
    import itertools

    from scipy.optimize import minimize

    choices = []
    for i in counts:
        v = min(math.exp(min(x[i], 700.0)), 1e300)
        lo, hi = natural[i] if natural else (0.0, math.inf)
        lo_whole = max(1, math.ceil(lo))
        hi_whole = math.floor(hi) if math.isfinite(hi) else math.inf
        near = {max(math.floor(v), lo_whole), min(max(math.ceil(v), lo_whole), hi_whole)}
        inside = sorted(n for n in near if lo_whole <= n <= hi_whole)
        if not inside:  # lo_whole was returned, outside the box (review of stop 79)
            raise ValueError(f"a count's range [{lo:g}, {hi:g}] holds no whole number >= 1: "
                             "a run cannot take any value of it")
        choices.append(inside)
    rest = [i for i in range(len(x)) if i not in counts]
    out_x, out_f = np.array(x, dtype=float), math.inf
    for combo in itertools.product(*choices):
        z = np.array(x, dtype=float)
        for i, n in zip(counts, combo):
            z[i] = math.log(n)
        if rest:
            def sub(r: np.ndarray, z: np.ndarray = z) -> float:
                w = z.copy()
                w[rest] = r
                return float(objective(w))

            res = minimize(sub, z[rest], method="L-BFGS-B",
                           bounds=[box[i] for i in rest] if box else None)
            z[rest] = res.x
        f = float(objective(z))
        if f < out_f:
            out_x, out_f = z, f
    return out_x, out_f


class OptimizationMixin:
    """The tuning method of :class:`~dpbounds.bounds.theorem.Bound`."""

    def optimize(
        self: _BoundLike,
        over: Sequence[str] | None = None,
        *,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        **params: float,
    ) -> Tuned:
        """Minimise the bound numerically over hyper-parameters, from the closed-form choice.

        The search runs in log-space (every hyper-parameter is positive) with L-BFGS-B,
        started at the closed-form choice (or 1 where there is none); ``bounds`` restricts a
        hyper-parameter to ``(low, high)`` (e.g. a momentum weight to ``(1e-12, 1)``). A
        count (:data:`~dpbounds.bounds.theorem.symbols.COUNT_SYMBOLS`: an epoch count ``E``,
        a horizon ``T``) is then fixed at each whole neighbour of its optimum (at least 1,
        inside its box) and the other hyper-parameters re-tuned there: the tuned value is the
        bound at a choice a run can take (``E = 72.99`` epochs was printed before).

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
        hyper_args = cast("dict[str, Any]", params)  # float values, none named ignore_extra
        closed = self.evaluate_hyperparameters(**hyper_args) if self.hyperparameters else {}
        problem = {k: v for k, v in params.items() if k in free and k not in over}
        for k, v in closed.items():  # fixed choices (not tuned) take their closed form
            if k in free and k not in over and k not in problem:
                problem[k] = float(v)
        x0 = np.array([math.log(float(closed[k])) if k in closed else 0.0 for k in over])
        box = None
        natural = None
        if bounds:
            # a key outside `over` was dropped, (3, 2) reached scipy's words and (nan, 5) was
            # accepted (fuzz round 14)
            for k, pair in bounds.items():
                if k not in over:
                    raise ValueError(f"{self.name}: bounds names {k!r}, which is not tuned "
                                     f"(tuned: {', '.join(over)})")
                try:
                    lo_, hi_ = (float(pair[0]), float(pair[1]))
                except (TypeError, ValueError, IndexError):
                    raise ValueError(f"bounds[{k!r}] must be a pair (low, high), got "
                                     f"{pair!r}") from None
                if not 0.0 <= lo_ < hi_ <= math.inf:
                    raise ValueError(f"bounds[{k!r}] must satisfy 0 <= low < high <= inf "
                                     f"(a hyper-parameter is positive), got {pair!r}")
            natural = [(float(bounds[k][0]), float(bounds[k][1])) if k in bounds
                       else (0.0, math.inf) for k in over]

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
            if np.any(np.abs(z) > 700.0):  # a step past float64's range: no finite bound there
                return 1e300  # (an OverflowError escaped at alpha in (1e-300, 1e-299))
            vals.update({k: math.exp(x) for k, x in zip(over, z)})
            with np.errstate(all="ignore"):
                v = float(fn(*(vals[n] for n in names)))
            return math.log(v) if v > 0 and math.isfinite(v) else 1e300

        best: Any = None  # scipy's OptimizeResult (scipy ships no stubs)
        for method in ("L-BFGS-B", "Nelder-Mead"):
            res = minimize(objective, x0, method=method, bounds=box,
                           options={"maxiter": 5000} if method == "Nelder-Mead" else {})
            if best is None or res.fun < best.fun:
                best = res
            x0 = best.x
        counts = [i for i, k in enumerate(over) if k in COUNT_SYMBOLS]
        if counts:
            best_x, best_fun = _whole_counts(objective, best.x, counts, box, natural)
        else:
            best_x, best_fun = best.x, best.fun
        tuned = {k: math.exp(x) for k, x in zip(over, best_x)}
        for i in counts:  # exp(log(n)) is n only to rounding: a run takes the whole number
            lo_n, hi_n = natural[i] if natural else (0.0, math.inf)
            whole = max(round(tuned[over[i]]), max(1, math.ceil(lo_n)))  # inside its box
            tuned[over[i]] = float(min(whole, math.floor(hi_n)) if math.isfinite(hi_n)
                                   else whole)
        value = math.exp(best_fun)
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

