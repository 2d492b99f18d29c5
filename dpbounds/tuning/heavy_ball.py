r"""Tuning DP heavy ball: the :math:`(\alpha,\beta,T)` with the least worst-case error, or bound.

**By default** (``objective="error"``, the quadratic class) :func:`tune_heavy_ball` minimises
what a researcher runs for: the worst-case :math:`\mathbb E[F(x_T)]-F^\ast` of DP heavy ball
**as run and calibrated** (each step :math:`\epsilon/T`-DP), over every quadratic with
spectrum in :math:`[\mu,L]`, every start with :math:`F(x_0)-F^\ast\le E_0` and every data set
of sensitivity :math:`S_1`
(:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`, exact and
certified on a grid refined near the maximiser: a bracket below 4e-5 when the refinement
completes, and each table prints its rows' own, DERIVED). Each row shows that
worst case beside the rigorous bound (25) at
the same :math:`(\alpha,\beta,T)`, and the bound's own minimiser is a row of its own: a loose
bound's minimiser pushes :math:`\alpha` to the stability edge, where the bound is tight and
the run is bad (Fig. 3: 268x the tuned run's worst case). The optimum is bracketed by the
larger of two proven lower bounds: heavy ball's own, a branch and bound over every
:math:`(\alpha,\beta,T)` (:mod:`dpbounds.tuning._certify_error`; the tuned worst case is
within 0.8% of it on issue 32's problem, 0.9% on Fig. 3's, 0.1-8% on the 12 problems of
``bench/worst_case_bracket.md``: 0.1% at L/mu = 4 and 10, 2-4% at L/mu = 100 to 1e4, 8% at
1e5), and the method-independent linear-MMSE
and Chebyshev bound (:mod:`dpbounds.tuning._lmi_lower`, a factor ~4; the larger one only at
L/mu = 1), and the search is checked against an independent dense oracle: within 0.1% on
20 problems, L/mu 1 to 1e6 and eps 0.01 to 10 (``tests/tuning/test_worst_case_oracle.py``;
``bench/worst_case_tuning.py`` at longer horizons); it is not proven.

With ``function_class="smooth_strongly_convex"`` and ``objective="error"`` the worst case over
all of :math:`\mathcal S_{\mu,L}` is not computed exactly: the tuner minimises its certified
upper bound, the noise-aware Lyapunov bound (:mod:`dpbounds.tuning._lyapunov_search`, DERIVED:
the DP noise enters as its total second moment :math:`2d\,b_T^2+\sigma_s^2`), and each row
shows it as the upper end of a bracket whose lower end is the exact quadratic worst case at the
same :math:`(\alpha,\beta,T)` (quadratics lie in the class). A search, not a proven optimum.

With ``objective="bound"`` :func:`tune_heavy_ball` minimises a heavy-ball bound **with the DP
noise level that** :math:`T` **implies** (each step :math:`\epsilon/T`-DP through (11)-(13)),
as the paper does:

* ``function_class="quadratic"`` — quadratics in :math:`\mathcal S_{\mu,L}` (Theorem 3.5's
  class): the rigorous version of (25),
  :func:`~dpbounds.bounds.strongly_convex.heavy_ball_dp.heavy_ball_dp_bound` **[DERIVED]**;
* ``function_class="smooth_strongly_convex"`` — all of :math:`\mathcal S_{\mu,L}` through
  verified Prop. 3.4 certificates
  (:func:`~dpbounds.lmi.heavy_ball_bound.lmi_bound_curves`), minimised by nested grids and
  compass searches over a box of :math:`(\alpha,\beta)` (checked against a brute-force oracle
  in ``tests/tuning/test_lmi_optimum.py`` and ``bench/lmi_tuner_oracle.py``; not proven).

It is compared with Polyak's classical :math:`(\alpha,\beta)` and with the paper's Section-5
choice (:math:`\alpha=1/L`, :math:`\beta=(1-\sqrt{\alpha\mu})/(1+\sqrt{\alpha\mu})`), each at
its best :math:`T` (:func:`~dpbounds.tuning.horizon_search.minimise_over_horizon`). The result
carries a proven bracket ``lower_bound <= min <= tuned.bound``: in the quadratic class a branch
and bound over every :math:`(\alpha,\beta,T)` to 0.05% (:mod:`dpbounds.tuning._certify`), in the
LMI class the linear-MMSE and Chebyshev bounds on a quadratic (:mod:`dpbounds.tuning._lmi_lower`,
a wider bracket), plus a floor at the tuned :math:`(\alpha,\beta)` alone (a proven argument
evaluated in float64 with estimated rounding allowances)
(``point_lower_bound``, :mod:`dpbounds.tuning._lmi_point_lower`: no certificate there, at any
rate and :math:`T`, does better; tight near Fig. 3's problem, looser at large
:math:`L/\mu`). ``vacuous`` says when the tuned bound is not below :math:`F(x_0)-F^\ast`.
Each row
gives the bound beside an exactly computed value (the expected error on a worst-case quadratic,
propagated exactly -- no sampling), in the PEPit spirit.

Example
-------
>>> from dpbounds.tuning import tune_heavy_ball
>>> res = tune_heavy_ball(mu=0.02, L=5.1, d=20, n=10**5, epsilon=1.0, sensitivity=40.0,
...                       initial_gap=10.0, max_horizon=300, grid=12)
>>> res.tuned.computed <= res.paper_section5.computed <= res.by_bound.computed
True
>>> bound = tune_heavy_ball(mu=0.02, L=5.1, d=20, n=10**5, epsilon=1.0, sensitivity=40.0,
...                         initial_gap=10.0, max_horizon=300, grid=12, objective="bound")
>>> bound.tuned.bound <= bound.classical.bound
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy.ndimage import minimum_filter
from scipy.optimize import minimize

from dpbounds._progress import progress_bar
from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.bounds.strongly_convex.gradient_noise import (
    check_noise_fits,
    dp_noise_level,
    laplace_scale_at_horizon,
)
from dpbounds.bounds.strongly_convex.heavy_ball import (
    SOURCE_STATIONARY,
    classical_heavy_ball_parameters,
    heavy_ball_iteration_blocks,
    heavy_ball_rate,
)
from dpbounds.bounds.strongly_convex.heavy_ball_dp import HeavyBallDPObjective
from dpbounds.bounds.strongly_convex.nesterov import nesterov_momentum
from dpbounds.bounds.strongly_convex.noise_allocation import check_max_horizon
from dpbounds.bounds.strongly_convex.quadratic_worst_case import (
    CERTIFIED_REFINE,
    quadratic_worst_case,
)
from dpbounds.lmi.heavy_ball_bound import lmi_bound_curves
from dpbounds.provenance import Source
from dpbounds.tuning._certify import certify_minimum
from dpbounds.tuning._certify_error import MAX_CERT_HORIZON, certify_error_minimum
from dpbounds.tuning._lmi_lower import linear_method_lower_bound
from dpbounds.tuning._lmi_point_lower import certificate_floor
from dpbounds.tuning._quadratic import sampling_variance_of_instance
from dpbounds.tuning._worst_case_search import (
    bracket_percent,
    heavy_ball_worst_by_horizon,
    worst_case_lambda_grid,
)
from dpbounds.tuning.horizon_search import minimise_over_horizon

__all__ = ["HeavyBallChoice", "HeavyBallTuning", "tune_heavy_ball"]

MECHANISMS = ("laplace",)
# work limits ((alpha, beta, T) evaluations, ~50k per second): only reached where the lower bound
# is weak over a huge range of T (e.g. L/mu = 1e12); the result then carries its proven gap
_POINT_BUDGET = 5_000       # each (alpha, beta) of the grid and the local searches
_CHOICE_BUDGET = 100_000    # each reported choice (tuned, Polyak, paper)
_ALPHA_MIN = 1e-3           # times 1/L: smallest step of the grid (smaller: a certified tail)
_Y_MAX = math.log(1e4)      # largest -log(1 - beta) of the grid (larger: a certified tail)
_BASE_GRID = 8              # a finer grid also searches from this grid's best point
_STARTS = 6                 # local searches, from the best local minima of the grid
_PATTERN_TOL = 1e-6         # final step of a local search in (log alpha, -log(1 - beta))
_PATTERN_BUDGET = 800       # evaluations of a local search
_BETA_PROBE = 1e-3          # momentum tried next to beta = 0 to say why GD is best
_GD_BETA = 1e-9             # a tuned beta at or below this is reported as gradient descent


#: the largest log whose exp is a finite float
_LOG_MAX = math.log(np.finfo(float).max)


def naive_transient_sq(alpha: np.ndarray, beta: np.ndarray, lams: np.ndarray,
                       Tmax: int) -> np.ndarray:
    """max_lambda ||T_lambda^t||_2^2 for t = 1..Tmax by sequential 2x2 products; (k,) -> (k, Tmax).

    The reference implementation (the one the tuner used before the closed form of
    :mod:`dpbounds.bounds.strongly_convex._lucas`): O(Tmax) Python steps and O(k Tmax) memory.
    Kept as the oracle of the tests and of ``bench/bench_horizon.py``.
    """
    alpha, beta = np.atleast_1d(np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float))
    lams = np.atleast_1d(np.asarray(lams, dtype=float))
    for name, value in (("alpha", alpha), ("beta", beta), ("lams", lams)):
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name} must be finite")
    if np.any(alpha <= 0) or np.any(beta < 0) or np.any(beta >= 1):
        raise ValueError("need alpha > 0 and 0 <= beta < 1 (heavy ball's parameters)")
    Tmax = check_int("Tmax", Tmax, minimum=1, maximum=10**6)  # O(k Tmax) memory: a reference
    k = alpha.size
    M = heavy_ball_iteration_blocks(alpha[:, None], beta[:, None], lams[None, :])
    P = np.broadcast_to(np.eye(2), M.shape).copy()
    out = np.empty((k, Tmax))
    # an unstable (alpha, beta) overflows: its transient is inf (not the nan of inf - inf)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(Tmax):
            P = M @ P
            # spectral norm^2 of a 2x2 = largest eigenvalue of P^T P (closed form)
            a, b, c, d = P[..., 0, 0], P[..., 0, 1], P[..., 1, 0], P[..., 1, 1]
            fro = a * a + b * b + c * c + d * d
            det = a * d - b * c
            sq = 0.5 * (fro + np.sqrt(np.maximum(fro * fro - 4 * det * det, 0.0)))
            out[:, t] = np.max(np.where(np.isnan(sq), np.inf, sq), axis=1)
    return out


@dataclass(frozen=True)
class HeavyBallChoice:
    """One (alpha, beta, T) with its bound and the exactly computed error (PEPit style)."""

    label: str
    alpha: float
    beta: float
    horizon: int
    rate: float
    bound: float
    computed: float
    noise_scale: float
    #: proven: ``bound <= (1 + horizon_gap) * min_T B(alpha, beta, T)`` (0: T is the best horizon)
    horizon_gap: float = 0.0
    #: certified: no admissible quadratic (spectrum in [mu, L], F(x0) - F* <= E0, data of
    #: sensitivity S_1) has E[F(x_T)] - F* above this for this run; ``computed`` (attained on
    #: one of them) <= the worst case <= ``worst_case_upper``
    #: (:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`)
    worst_case_upper: float = float("nan")

    def row(self) -> dict:
        return asdict(self)


def _alpha(x: float) -> str:
    """A step size in 4 significant digits, never a whole number it is not: ``1-1e-06`` for
    0.999999 (it read 1: fuzz round 14)."""
    text = f"{x:.4g}"
    near = float(text)
    if not math.isfinite(x) or near == x or near != math.floor(near) or "e" in text:
        return text
    gap = near - x
    return f"{text}-{gap:.2g}" if gap > 0 else f"{text}+{-gap:.2g}"


def _near_one(x: float) -> str:
    """``x`` in [0, 1) for a table column: 4 decimals, or ``1-<1 - x>`` when that would read 1."""
    if not math.isfinite(x):
        return f"{x}"
    if 0.0 < x < 5e-5:  # 1.98e-5 read 0.0000 (fuzz round 14)
        return f"{x:.3g}"
    return f"1-{1.0 - x:.3g}" if 0.99995 <= x < 1.0 else f"{x:.4f}"



def _unbracketed(t: Any) -> str:
    """Why a tuning's optimum is not bracketed: a lower bound of 0 (a start at the minimiser,
    or one below float64's range) brackets nothing; else the horizon is past the lower bound's
    reach (fuzz round 7: R = 0 was said to be past max_horizon <= 1e5)."""
    lower = getattr(t, "lower_bound", math.nan)
    if math.isfinite(lower) and lower <= 0.0:
        return ("the method-independent lower bound is 0 here: F(x_0) - F* = 0, or below "
                "float64's range")
    return ("the method-independent lower bound is computed for max_horizon <= "
            f"{_LOWER_TMAX:.0e} only")

@dataclass(frozen=True)
class HeavyBallTuning:
    r"""Result of :func:`tune_heavy_ball`.

    ``tuned`` minimises the bound; ``classical`` is Polyak's :math:`(\alpha,\beta)` and
    ``paper_section5`` the paper's DP-HB choice, each at its own best :math:`T`.
    """

    tuned: HeavyBallChoice
    classical: HeavyBallChoice
    paper_section5: HeavyBallChoice
    setting: dict
    source: Source = SOURCE_STATIONARY
    #: proven: no (alpha > 0, 0 <= beta < 1, T <= max_horizon) has a bound below this
    #: (quadratic class: branch and bound, :mod:`dpbounds.tuning._certify`, within 0.1%;
    #: LMI class: linear-MMSE + Chebyshev, :mod:`dpbounds.tuning._lmi_lower`, a wider bracket;
    #: objective "error", quadratic class: no such point has a worst-case error below this (the
    #: larger of :mod:`dpbounds.tuning._certify_error` and :mod:`dpbounds.tuning._lmi_lower`);
    #: objective "error", smooth class: the linear-MMSE + Chebyshev bound, below every
    #: Lyapunov bound)
    lower_bound: float = float("nan")
    #: ``tuned.bound / lower_bound - 1``: how far from the optimum the tuned point can be
    certified_gap: float = float("nan")
    #: why the tuned heavy ball is plain gradient descent (beta = 0), if it is; else ""
    momentum_note: str = ""
    #: LMI class (a proven argument, float64 with estimated rounding allowances): at the tuned
    #: (alpha, beta), no certificate of (22) at any rate gives
    #: a bound below this at any T <= max_horizon (:mod:`dpbounds.tuning._lmi_point_lower`)
    point_lower_bound: float = float("nan")
    #: ``tuned.bound / point_lower_bound - 1``: how far the tuned rate, certificate and T can
    #: be from the best Prop. 3.4 gives at the tuned (alpha, beta)
    point_gap: float = float("nan")
    #: LMI class: the edge of the search's reach (its box and extension) the tuned point lies
    #: on ("" if inside), e.g. "beta = 0.999975 (largest)": the optimum may then lie outside
    box_edge: str = ""
    #: what ``tuned`` minimises: "error" (the worst-case E[F(x_T)] - F* over the class, as
    #: run) or "bound"
    objective: str = "bound"
    #: objective "error": the bound-minimising choice, with its worst case, for comparison
    by_bound: HeavyBallChoice | None = None
    #: objective "error": which proven argument gives ``lower_bound`` (the larger of heavy
    #: ball's branch and bound, :mod:`dpbounds.tuning._certify_error`, and the
    #: method-independent linear-MMSE and Chebyshev bounds)
    lower_bound_by: str = ""
    #: quadratic class: whether the tuned (alpha, beta) is certified on all of S_mu,L, said
    #: under the table ("" for the smooth class, whose rows are certified there)
    class_note: str = ""

    @property
    def trivial_bound(self) -> float:
        """F(x_0) - F* (the error of T = 0): the initial gap if given, else L/2 times the
        squared initial distance; a bound at or above it says nothing."""
        s = self.setting
        gap0 = s.get("initial_gap")
        if gap0 is not None:
            return float(gap0)
        return 0.5 * float(s["L"]) * float(s["initial_distance_sq"])

    @property
    def vacuous(self) -> bool:
        """The tuned bound is not below :attr:`trivial_bound`."""
        return bool(self.tuned.bound >= self.trivial_bound)

    @property
    def improvement(self) -> float:
        """classical bound / tuned bound (``inf`` when the classical choice has no certificate)."""
        return self.classical.bound / self.tuned.bound

    def choices(self) -> list[HeavyBallChoice]:
        """The rows: tuned, (tuned by bound,) Polyak, paper."""
        extra = [self.by_bound] if self.by_bound is not None else []
        return [self.tuned, *extra, self.classical, self.paper_section5]

    def rows(self) -> list[dict]:
        return [c.row() for c in self.choices()]

    def table(self) -> str:
        """The rows and what is proven of them, and the tuned (alpha, beta) in full: the
        columns round to 4 digits, and a (alpha, beta) near Polyak's sits on a double root of
        the rate, where copying 4 digits moved rho from 0.7654 to 0.7841 (walkthrough of
        stop 75)."""
        t = self.tuned
        return (self._table_text() + f"\ntuned, in full (to copy): alpha = {t.alpha!r}, "
                f"beta = {t.beta!r}, T = {t.horizon}")

    def _table_text(self) -> str:
        if self.objective == "error" and self.setting.get("function_class") == \
                "smooth_strongly_convex":
            return self._table_smooth_error()
        if self.objective == "error":
            return self._table_error()
        rows = (self.tuned, self.classical, self.paper_section5)
        w = max(36, *(len(c.label) + 1 for c in rows))  # "[no certificate]" overran 36
        head = (f"{'choice':<{w}}{'alpha':>10}{'beta':>11}{'T':>9}{'rho':>11}{'bound':>12}"
                f"{'computed':>12}{'b_T':>11}")
        lines = [head, "-" * len(head)]
        for c in rows:
            if not math.isfinite(c.bound):  # no certificate: nothing at a T (nan, inf before)
                lines.append(f"{c.label:<{w}}{_alpha(c.alpha):>10}{_near_one(c.beta):>11}"
                             f"{'n/a':>9}{'n/a':>11}{'n/a':>12}{'n/a':>12}{'n/a':>11}")
                continue
            lines.append(f"{c.label:<{w}}{_alpha(c.alpha):>10}{_near_one(c.beta):>11}"
                         f"{c.horizon:>9d}"
                         f"{_near_one(c.rate):>11}{c.bound:>12.4e}{c.computed:>12.4e}"
                         f"{c.noise_scale:>11.3e}")
        def ratio(c: HeavyBallChoice) -> str:
            if not math.isfinite(c.bound):
                return "no certificate for it"
            return f"{c.bound / self.tuned.bound:.3g}x"

        lines.append(f"bound improvement over Polyak: {ratio(self.classical)}; over the paper's "
                     f"Section-5 DP-HB: {ratio(self.paper_section5)}")
        for c in (self.tuned, self.classical, self.paper_section5):
            if c.horizon_gap > 0:  # the work limit of the horizon search was reached
                within = (f"within a factor {1 + c.horizon_gap:.4g} of"
                          if math.isfinite(c.horizon_gap) else "not certified to be")
                lines.append(f"{c.label}: T is {within} the best horizon for its (alpha, beta) "
                             "(the horizon search hit its work limit)")
        lmi_class = self.setting.get("function_class") == "smooth_strongly_convex"
        if math.isfinite(self.certified_gap) and lmi_class:
            lines.append(f"optimum bracketed: no (alpha, beta, T <= {self.setting['max_horizon']}) "
                         f"has an LMI bound below {self.lower_bound:.6g} (heavy ball's error on a "
                         "quadratic: linear-MMSE and Chebyshev bounds); tuned is within a "
                         f"factor {1 + self.certified_gap:.4g} of the optimum")
            if math.isfinite(self.point_gap):
                lines.append(f"at the tuned (alpha, beta): no Prop. 3.4 certificate, at any rate "
                             f"and T <= {self.setting['max_horizon']}, gives a bound below "
                             f"{self.point_lower_bound:.6g} (from (22) on quadratics, float64); "
                             f"the tuned rate, certificate and T are within "
                             + (f"{100 * self.point_gap:.3g}%" if self.point_gap < 1 else
                                f"a factor {1 + self.point_gap:.3g}") + " of the best there")
        elif math.isfinite(self.certified_gap):
            lines.append(f"optimum certified: no (alpha, beta, T <= {self.setting['max_horizon']}) "
                         f"has a bound below {self.lower_bound:.6g} (tuned is within "
                         f"{100 * self.certified_gap:.3g}% of the optimum)")
        else:
            lines.append("optimum not certified (LMI class: best of the grid and its local "
                         "refinement; no lower bound is proven)")
        trivial = self.trivial_bound
        if math.isfinite(trivial) and self.tuned.bound >= trivial:
            lines.append(f"VACUOUS: the tuned bound {self.tuned.bound:.4g} is not below "
                         f"{trivial:.4g}, the error of not running at all (F(x_0) - F*): no "
                         f"(alpha, beta, T <= {self.setting['max_horizon']}) certifies "
                         "progress here (a longer horizon, a larger n or epsilon may)")
        if self.box_edge:
            lines.append(f"on the edge of the search box ({self.box_edge}): a better (alpha, "
                         "beta) may lie outside it")
        if self.momentum_note:
            lines.append(self.momentum_note)
        computed = ("computed = exact E[F(x_T)]-F* of DP-SHB on a worst admissible quadratic "
                    "data set (sampling variance (21) in one coordinate, Laplace in all)")
        if self.setting.get("function_class") == "smooth_strongly_convex":
            lines.append("bound = Prop. 3.4 certificate + derived noise term, all of S_mu,L "
                         f"[DERIVED]; {computed}")
        else:
            if self.class_note:
                lines.append(self.class_note)
            lines.append("bound = rigorous (25): transient bounded over every lambda in "
                         f"[mu, L], noise E_T of (20) [DERIVED]; {computed}")
        return "\n".join(lines)


    def _table_error(self) -> str:
        head = (f"{'choice':<28}{'alpha':>10}{'beta':>12}{'T':>9}{'rho':>12}"
                f"{'worst case':>12}{'bound':>12}{'b_T':>11}")
        lines = [head, "-" * len(head)]
        for c in self.choices():
            lines.append(f"{c.label:<28}{_alpha(c.alpha):>10}{_near_one(c.beta):>12}"
                         f"{c.horizon:>9d}"
                         f"{_near_one(c.rate):>12}{c.worst_case_upper:>12.4e}{c.bound:>12.4e}"
                         f"{c.noise_scale:>11.3e}")
        t = self.tuned

        def vs(c: HeavyBallChoice) -> str:
            if not math.isfinite(c.worst_case_upper):
                return f"{c.label}: unstable"
            if t.worst_case_upper <= 0.0:  # both below the smallest float (eps ~ 1e300)
                return f"{c.label} " + ("the same (0)" if c.worst_case_upper <= 0.0
                                        else "above 0")
            return f"{c.label} {c.worst_case_upper / t.worst_case_upper:.3g}x"

        others = [c for c in self.choices()[1:]]
        lines.append("worst-case error (the run as calibrated, every admissible quadratic): "
                     "tuned is the least; the others are " + ", ".join(vs(c) for c in others)
                     + " of it")
        best_bound = min(self.choices(), key=lambda c: c.bound)
        lines.append(f"bound (25): smallest at '{best_bound.label}' ({best_bound.bound:.4g}); "
                     "a small bound is not a small error: rank runs by the worst case")
        trivial = self.trivial_bound
        worse = [c.label for c in self.choices()
                 if math.isfinite(trivial) and c.computed > trivial]
        if worse:
            lines.append(f"worse than not running (F(x_0) - F* = {trivial:.4g}): "
                         + ", ".join(worse))
        if math.isfinite(self.certified_gap):
            by = self.lower_bound_by or "linear-MMSE and Chebyshev bounds, any linear method"
            lines.append(f"optimum bracketed (proven): no (alpha, beta, T <= "
                         f"{self.setting['max_horizon']}) has a worst-case error below "
                         f"{self.lower_bound:.4g} ({by}); tuned is within a factor "
                         f"{1 + self.certified_gap:.4g} of the optimum")
        else:
            lines.append(f"optimum not bracketed ({_unbracketed(self)})")
        if self.momentum_note:
            lines.append(self.momentum_note)
        if self.class_note:
            lines.append(self.class_note)
        lines.append("worst case = certified sup of E[F(x_T)] - F* over quadratics with spectrum "
                     "in [mu, L], F(x_0) - F* <= E0 and data of sensitivity S_1 (attained within "
                     f"{bracket_percent(self._brackets())}) [DERIVED]; bound = rigorous (25) at "
                     "the same (alpha, beta, T) [DERIVED]")
        return "\n".join(lines)

    def _table_smooth_error(self) -> str:
        """The smooth class, error objective: each row's bracket of its worst case."""
        head = (f"{'choice':<36}{'alpha':>10}{'beta':>12}{'T':>7}{'rho':>12}"
                f"{'lower end':>12}{'upper end':>12}{'b_T':>11}")
        lines = [head, "-" * len(head)]
        for c in self.choices():
            # no Lyapunov certificate: no rate and no upper end ("nan" and "inf" before)
            rate = _near_one(c.rate) if math.isfinite(c.rate) else "n/a"
            upper = f"{c.bound:>12.4e}" if math.isfinite(c.bound) else f"{'n/a':>12}"
            lines.append(f"{c.label:<36}{_alpha(c.alpha):>10}{_near_one(c.beta):>12}"
                         f"{c.horizon:>7d}"
                         f"{rate:>12}{c.computed:>12.4e}{upper}"
                         f"{c.noise_scale:>11.3e}")
        t = self.tuned
        others = [f"{c.label} {c.bound / t.bound:.3g}x" for c in self.choices()[1:]
                  if math.isfinite(c.bound)]
        lines.append("certified worst-case bound (upper end): tuned is the least the search "
                     "found" + ("; the others are " + ", ".join(others) + " of it" if others
                                else ""))
        bare = [c.label for c in self.choices() if not math.isfinite(c.bound)]
        if bare:
            lines.append("no Lyapunov certificate (no upper end; lower end at the T with the "
                         "least quadratic worst case): " + ", ".join(bare))
        rest = [c for c in self.choices()[1:] if math.isfinite(c.computed)]
        won = [c.label for c in rest if c.computed > t.bound]
        if won:
            lines.append("proven: the tuned run's worst case over the class is smaller than that "
                         "of " + ", ".join(won) + " (its upper end is below their lower ends)")
        over = [c.label for c in rest if c.computed <= t.bound]
        if over:
            lines.append("not decided: the brackets of " + ", ".join(over) + " reach below the "
                         "tuned upper end (their true worst case may be the smaller)")
        trivial = self.trivial_bound
        if math.isfinite(trivial) and t.bound >= trivial:
            lines.append(f"VACUOUS: the tuned upper end {t.bound:.4g} is not below F(x_0) - F* = "
                         f"{trivial:.4g} (the error of not running)")
        if math.isfinite(self.certified_gap):
            lines.append(f"optimum bracketed: no (alpha, beta, T <= {self.setting['max_horizon']})"
                         f" has a Lyapunov bound below {self.lower_bound:.4g} (linear-MMSE and "
                         "Chebyshev bounds on a quadratic, valid for any bound that holds for all "
                         "zero-mean noise of second moment E_T); tuned is within a factor "
                         f"{1 + self.certified_gap:.4g} of that. The tuned (alpha, beta, T) is the "
                         "best of a search (nested grids, compass searches), not a proven optimum")
        else:
            lines.append(f"optimum not bracketed ({_unbracketed(self)}); the tuned (alpha, "
                         "beta, T) is the best of a search, not a proven optimum")
        if self.momentum_note:
            lines.append(self.momentum_note)
        lines.append("each row brackets the worst case of E[F(x_T)] - F* of its run as calibrated "
                     "over all L-smooth mu-strongly convex F, F(x_0) - F* <= E0 and data of "
                     "sensitivity S_1: upper end = noise-aware Lyapunov bound (certified upper "
                     "bound, exact certificate check) [DERIVED]; lower end = the exact worst case "
                     "attained on an admissible quadratic (quadratics are in the class, so a "
                     "lower bound on it) [DERIVED]; rho = the certificate's contraction")
        return "\n".join(lines)

    def _brackets(self) -> list[float]:
        return [c.worst_case_upper / c.computed - 1.0 for c in self.choices()
                if c.computed > 0 and math.isfinite(c.worst_case_upper)] or [0.0]


def _hb_search(alpha: Any, beta: Any, mu: float, L: float, d: int, n: int, m: int, eps: float,
               S: float, dist_sq: float, Tmax: int, *, joint: bool, budget: int,
               progress: bool = False, n_lambda: int = 24
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best horizon, bound and proven gap of each (alpha, beta) (bound ``inf``: unstable)."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    beta = np.broadcast_to(np.asarray(beta, dtype=float), alpha.shape)
    best_T = np.ones(alpha.size, dtype=np.int64)
    best = np.full(alpha.size, np.inf)
    gap = np.zeros(alpha.size)
    stable = (alpha > 0) & (beta >= 0) & (beta < 1)  # beta can round to 1 when L/mu ~ 1e32
    if np.any(stable):
        stable[stable] = np.asarray(heavy_ball_rate(alpha[stable], beta[stable], mu, L)) < 1
    if np.any(stable):
        obj = HeavyBallDPObjective(alpha[stable], beta[stable], mu, L,
                                  np.linspace(mu, L, n_lambda), d=d, n=n, m=m, epsilon=eps,
                                  sensitivity=S, dist_sq=dist_sq)
        res = minimise_over_horizon(obj, int(np.sum(stable)), Tmax, joint=joint,
                                     max_evaluations=budget, progress=progress,
                                     desc=f"horizons of {int(np.sum(stable))} (alpha, beta)")
        best_T[stable], best[stable], gap[stable] = res.best_T, res.best, res.gap
    return best_T, best, gap


def _computed(T: int, a: float, b: float, mu: float, L: float, d: int, n: int, m: int,
              eps: float, S: float, dist_sq: float, gap0: float | None
              ) -> tuple[float, float, float]:
    """The exact worst case over admissible quadratics (attained value and certified upper
    end, :func:`quadratic_worst_case`) and the scale b_T.

    The start is the user's: ``F(x0) - F* <= E0`` when ``gap0`` is given (an instance starting
    at ``kappa E0``, as the column once used, is not admissible), else the distance."""
    scale = float(laplace_scale_at_horizon(T, S, n, m, eps))
    wc = quadratic_worst_case(mu, L, d, alpha=a, beta=b, steps=T,
                              laplace_var=2.0 * scale * scale,
                              sampling_var=sampling_variance_of_instance(S, n, m),
                              initial_gap=gap0,
                              initial_distance_sq=None if gap0 is not None else dist_sq,
                              refine=CERTIFIED_REFINE)
    return wc.value, wc.upper, scale


def _hb_choice(label, a, b, mu, L, d, n, m, eps, S, dist_sq, Tmax, gap0=None) -> HeavyBallChoice:
    Ts, vals, gaps = _hb_search(a, b, mu, L, d, n, m, eps, S, dist_sq, Tmax, joint=False,
                                budget=_CHOICE_BUDGET)
    T, val = int(Ts[0]), float(vals[0])
    computed, upper, scale = (_computed(T, a, b, mu, L, d, n, m, eps, S, dist_sq, gap0)
                              if np.isfinite(val) else (np.inf, np.inf, np.inf))
    rho = float(heavy_ball_rate(a, b, mu, L)) if 0 <= b < 1 else 1.0
    return HeavyBallChoice(label, float(a), float(b), T, rho, val, float(computed), scale,
                           float(gaps[0]), worst_case_upper=float(upper))


def tune_heavy_ball(
    mu: float, L: float, *, d: int, n: int, epsilon: float, sensitivity: float,
    initial_gap: float | None = None, initial_distance_sq: float | None = None,
    m: int | None = None, mechanism: str = "laplace", max_horizon: int = 1000, grid: int = 30,
    function_class: str = "quadratic", progress: bool = False, objective: str | None = None,
) -> HeavyBallTuning:
    r"""The :math:`(\alpha,\beta,T)` of DP heavy ball with the least worst-case error (or bound).

    Parameters
    ----------
    mu : float
        Strong convexity of the problem class.
    L : float
        Smoothness of the problem class.
    d : int
        Dimension.
    n : int
        Data-set size.
    epsilon : float
        Total budget (pure :math:`\epsilon`-DP, basic composition, replace-one).
    sensitivity : float
        :math:`L_1` sensitivity :math:`S_1`.
    initial_gap : float, optional
        :math:`F(x_0)-F^\ast` (the paper's :math:`E_0`; converted to
        :math:`\lVert x_0-x^\ast\rVert^2\le2E_0/\mu`).
    initial_distance_sq : float, optional
        The squared distance :math:`\lVert x_0-x^\ast\rVert^2` directly (instead of
        ``initial_gap``).
    m :
        Batch size (default ``n``: no subsampling, Theorem 3.5's setting).
    mechanism :
        ``"laplace"`` (the paper's).
    max_horizon : int
        Largest :math:`T` (at most
        :data:`~dpbounds.bounds.strongly_convex.noise_allocation.MAX_HORIZON`).
    grid : int
        Size of the coarse :math:`(\alpha,\beta)` grid before the local refinement (scipy
        Nelder-Mead on :math:`(\log\alpha,\mathrm{logit}\,\beta)`). With
        ``objective="error"`` the search runs the nested grids 3, 8, 16, 30, 60, 120, ...
        up to ``grid`` (rounded down to a member) in that order, each with its compass
        searches and polishes, and reports the least certified candidate of all of them: a
        larger ``grid`` repeats a smaller one's whole run, so it never gives a worse tuned
        worst case. Polyak's, the paper's and the "tuned by bound" row replace the search's
        result where they are better (compared on the attained worst case); the first two do
        not depend on ``grid``, and the last is the one exception to the guarantee (it is
        itself searched on ``grid``; an independent review found it the same at every grid
        on 109 runs where it was taken). Every horizon up to
        ``max_horizon`` is searched by branch and bound (module docstring), so the cost hardly
        depends on ``max_horizon``.
    function_class : {"quadratic", "smooth_strongly_convex"}
        ``"quadratic"``: the rigorous (25) (Theorem 3.5's class). ``"smooth_strongly_convex"``:
        all of :math:`\mathcal S_{\mu,L}` through verified Prop. 3.4 certificates and the derived
        noise bound :func:`~dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_bound`, minimised over
        :math:`T` and over a few certified rates above the minimal one (a larger
        :math:`\rho` can come with a much smaller :math:`P`). Searched over the box
        :math:`\alpha L\in[10^{-3},1.5]`, :math:`\beta\in[0,0.995]` (on
        :math:`(\log\alpha,-\log(1-\beta))`, :math:`\beta=0` included): nested grids of 3, 5,
        9 and 17 points per axis (the largest not above ``grid``), then compass searches from
        the 2 best local minima of each grid down to a lattice step of
        :math:`\approx10^{-3}`, each followed by a line search along the valley and a walk
        along the crease it ends on (:func:`_crease_walk`). The local searches may leave the
        box by one width towards small :math:`\alpha` and :math:`\beta\to1`
        (:math:`\alpha L\ge6.7\cdot10^{-7}`, :math:`\beta\le1-2.5\cdot10^{-5}`), where the
        optima of long horizons at large :math:`L/\mu` lie; while the best point is on the
        edge of that reach, it grows by one more width (up to two:
        :math:`\alpha L\ge4.4\cdot10^{-10}`, :math:`\beta\le1-1.25\cdot10^{-7}`) and the
        local searches go on. ``box_edge`` says when the
        tuned point lies on the edge of the final reach (the optimum may then lie outside). A larger
        ``grid`` never gives a worse bound, and the tuned
        choice is never worse than Polyak's or the paper's. A search, checked against a
        brute-force oracle (``bench/lmi_tuner_oracle.py``, which reports where it is not
        within 0.1%). Proven: the bracket ``lower_bound`` over every :math:`(\alpha,\beta)`
        (:mod:`dpbounds.tuning._lmi_lower`, wide). And ``point_lower_bound``: at the tuned
        :math:`(\alpha,\beta)` no certificate at any rate and horizon does better (a proven
        argument evaluated in float64 with estimated rounding allowances,
        :mod:`dpbounds.tuning._lmi_point_lower`; within 0.2% at Fig. 3's problem, looser at
        :math:`L/\mu=1` and :math:`10^6`). That is ``objective="bound"``; with
        ``objective="error"`` see ``objective``.
    progress :
        Show tqdm bars on stderr for the long steps (only on a terminal, after 2 s).
    objective : {"error", "bound"}, optional
        What ``tuned`` minimises. ``"bound"``: the class's bound (the paper's way; the default
        for ``function_class="smooth_strongly_convex"``, whose results are unchanged).
        ``"error"`` (the default for ``"quadratic"``): the worst-case
        :math:`\mathbb E[F(x_T)]-F^\ast` of the run as calibrated over the class, every start
        with :math:`F(x_0)-F^\ast\le E_0` and every data set of sensitivity :math:`S_1`:

        * ``"quadratic"``: computed exactly (certified bracket ``worst_case_upper / computed - 1``,
          below 4e-5 when the refinement completes; module docstring);
        * ``"smooth_strongly_convex"`` (**[DERIVED]**, :mod:`dpbounds.tuning._lyapunov_search`):
          not computable exactly, so its certified **upper** bound is minimised: the
          noise-aware Lyapunov bound of :func:`dpbounds.pep.lyapunov_bound` (valid at every
          :math:`T`), with the DP noise entering as its total second moment
          :math:`s^2=\mathbb E\lVert\xi_t\rVert^2\le2d\,b_T^2+\sigma_s^2(m,n)` (Laplace
          variance :math:`2b_T^2` in each of the :math:`d` coordinates plus the sampling
          variance (21), the sum over the coordinates), over :math:`(\alpha,\beta,T\le
          T_{\max})`: nested grids of 3, 5, 9 and 17 points per axis (those not above
          ``grid``) on :math:`\alpha L\in[10^{-3},2]`,
          :math:`-\log(1-\beta)\in[0,\log10^4]`, compass searches from the 2 best local
          minima of each, then the best 4 points re-evaluated from certificates checked in
          exact arithmetic. A search, checked against a brute-force oracle
          (``tests/tuning/test_smooth_error.py``), not a proven optimum; a larger ``grid``
          repeats a smaller one's run, so it is never worse. Each row (tuned, Polyak, the
          paper) gives the bracket ``computed <= worst case over the class <= bound`` at its
          :math:`(\alpha,\beta,T)`: ``bound`` the checked Lyapunov bound (upper end),
          ``computed`` the exact worst case attained on an admissible quadratic (lower end:
          quadratics lie in the class); ``worst_case_upper`` is the quadratic worst case's
          certified upper end (a bound over quadratics only, not over the class). A row
          without a certificate has ``bound = inf`` and its lower end at the :math:`T` with
          the least quadratic worst case. ``lower_bound`` is proven: no
          :math:`(\alpha,\beta,T\le T_{\max})` has a Lyapunov bound below it (the linear-MMSE
          and Chebyshev bounds of :mod:`dpbounds.tuning._lmi_lower`, valid for any bound that
          holds for all zero-mean noise of second moment :math:`s^2`; wide), so
          ``certified_gap`` says how far the tuned upper end can be from the least Lyapunov
          bound, not from the least true worst case. The bound-tuned Prop. 3.4 row is not
          added (its search costs minutes). Measured (2-core shared machine,
          ``time.process_time``, ``grid=30``, ``max_horizon=1000``): 25-31 CPU-s per tune
          (Fig. 3's problem: 28 CPU-s).
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    # (the compiled search takes d as an int64; 1e15 is far past any dimension and exact in
    # float64)
    d = check_int("d", d, minimum=1, maximum=10**15)
    n = check_int("n", n, minimum=1)
    m = n if m is None else check_int("m", m, minimum=1, maximum=n)
    eps = float(check_positive("epsilon", epsilon))
    S = float(check_positive("sensitivity", sensitivity))
    if (initial_gap is None) == (initial_distance_sq is None):
        raise ValueError("give exactly one of initial_gap or initial_distance_sq")
    dist_sq = (2.0 * float(check_nonnegative("initial_gap", initial_gap)) / mu
               if initial_gap is not None
               else float(check_nonnegative("initial_distance_sq", initial_distance_sq)))
    Tmax = check_max_horizon(max_horizon)
    grid = check_int("grid", grid, minimum=3)
    check_noise_fits(S, n, m, eps, d)
    if objective is None:
        objective = "error" if function_class == "quadratic" else "bound"
    if objective not in ("error", "bound"):
        raise ValueError(f"objective must be 'error' or 'bound', got {objective!r}")
    if function_class == "smooth_strongly_convex" and objective == "error":
        return _tune_hb_smooth_error(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism,
                                     initial_gap, progress)
    if function_class == "smooth_strongly_convex":
        return _tune_hb_lmi(mu, L, d, n, m, eps, S, dist_sq, Tmax, min(grid, 17), mechanism,
                            initial_gap if initial_gap is not None else 0.5 * L * dist_sq,
                            progress)
    if function_class != "quadratic":
        raise ValueError("function_class must be 'quadratic' or 'smooth_strongly_convex', got "
                         f"{function_class!r}")
    by_bound = _tune_hb_bound(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism,
                              initial_gap, progress)
    out = by_bound if objective == "bound" else _tune_hb_error(
        mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, initial_gap, by_bound, progress)
    return replace(out, class_note=_quadratic_class_note(mu, L, out.tuned))


def _quadratic_class_note(mu: float, L: float, tuned: HeavyBallChoice) -> str:
    """What the quadratic class's pick is worth on a loss that is not quadratic: whether the
    tuned (alpha, beta) has a Prop. 3.4 rate certificate on all of S_mu,L. A researcher
    tuning a logistic regression took the quadratic pick (the default), which had none and
    ran 3.5x worse than the smooth class's pick (walkthrough of stop 75)."""
    from dpbounds.lmi.heavy_ball_lmi import LMICertificate, heavy_ball_lmi_rate

    try:
        cert = heavy_ball_lmi_rate(mu, L, tuned.alpha, tuned.beta)
    except ValueError:  # a point the LMI refuses (mu = L): nothing to say
        return ""
    if isinstance(cert, LMICertificate):
        return (f"class: the worst case is over quadratics; the tuned (alpha, beta) also has a "
                f"rate certificate on all of S_mu,L (Prop. 3.4, rho = {cert.rho:.6g}), without "
                "its worst case: for a loss that is not quadratic, tune with "
                "--function-class smooth_strongly_convex")
    return ("class: quadratics only. The tuned (alpha, beta) has NO rate certificate on "
            f"smooth strongly convex functions ({cert}): on a loss that is not quadratic "
            "(logistic, Huber) nothing bounds its run, which may be far worse; tune such a "
            "loss with --function-class smooth_strongly_convex (API: "
            "function_class='smooth_strongly_convex')")


def _conditioning_hint(mu: float, L: float) -> str:
    """What else makes every choice overflow: a condition number past what a horizon of
    float64 size can contract (mu / L = 1e-300: the rate 1 - sqrt(mu / L) is 1 in float64)."""
    if mu / L >= 1e-12:
        return "; use a larger epsilon"
    return (f"; use a larger epsilon, or a better-conditioned problem (mu / L = {mu / L:.3g}: "
            "no horizon contracts the start's error by the rate 1 - sqrt(mu / L))")


def _tune_hb_bound(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism, initial_gap,
                   progress) -> HeavyBallTuning:
    """The quadratic class, minimising the rigorous (25) (``objective="bound"``)."""
    args = (mu, L, d, n, m, eps, S, dist_sq, Tmax)

    def evaluate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.atleast_1d(a)
        return _hb_search(a, b, *args, joint=False, budget=_POINT_BUDGET * a.size)[1]

    # 1. grid in (log alpha, y = -log(1 - beta)), every point at its best horizon
    x_range, y_range = (math.log(_ALPHA_MIN / L), math.log(4.0 / L)), (0.0, _Y_MAX)
    xs, ys = np.linspace(*x_range, grid), np.linspace(*y_range, grid)
    X, Y = np.meshgrid(xs, ys)
    bar = progress_bar(progress, lines=True, total=3, desc="grid, local searches, certificate")
    F = evaluate(np.exp(X.ravel()), -np.expm1(-Y.ravel())).reshape(X.shape)
    bar.update()
    if not np.isfinite(np.min(F)):  # the grid has stable points: only the noise can overflow
        raise ValueError(f"epsilon={eps!r} is too small for this problem: the DP heavy-ball "
                         "bound exceeds the float64 range at every (alpha, beta, T) (or the "
                         "sensitivity S_1 is that large)"
                         + _conditioning_hint(mu, L))
    # 2. a pattern search from each of the best local minima of the grid
    lm = (F == minimum_filter(F, size=3, mode="nearest")) & (F <= 2.0 * np.min(F))
    starts = sorted(zip(F[lm], X[lm], Y[lm]))[:_STARTS]
    h = (xs[1] - xs[0], ys[1] - ys[0])
    found = [_pattern_search(evaluate, x, y, v, h, x_range, y_range) for v, x, y in starts]
    if grid != _BASE_GRID:  # and from the base grid's best point: a finer grid never loses it
        xb, yb = np.linspace(*x_range, _BASE_GRID), np.linspace(*y_range, _BASE_GRID)
        Xb, Yb = (g.ravel() for g in np.meshgrid(xb, yb))
        Fb = evaluate(np.exp(Xb), -np.expm1(-Yb))
        i = int(np.argmin(Fb))
        found.append(_pattern_search(evaluate, Xb[i], Yb[i], float(Fb[i]),
                                     (xb[1] - xb[0], yb[1] - yb[0]), x_range, y_range))
    v0, x0, y0 = min(found)
    # the bound has ridges (the best horizon changes), where a compass search stalls
    polish = minimize(lambda z: _log_value(evaluate, z, x_range, y_range), [x0, y0],
                      method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                     "initial_simplex": [[x0, y0],
                                                                         [x0 + 1e-3, y0],
                                                                         [x0, y0 + 1e-3]],
                                                     "maxiter": 400})
    # compared in logs: a huge log value overflowed math.exp ("math range error" at eps 1e300)
    if v0 > 0.0 and polish.fun < min(math.log(v0), _LOG_MAX):
        v0, (x0, y0) = math.exp(polish.fun), polish.x
    bar.update()
    # 3. the proven bracket (branch and bound over every alpha > 0, 0 <= beta < 1)
    bracket = certify_minimum(evaluate, mu, L, dist_sq, d, n, m, eps, S, Tmax, best=v0,
                              alpha=math.exp(x0), beta=-math.expm1(-y0))
    bar.update()
    bar.close()
    cargs = (mu, L, d, n, m, eps, S, dist_sq, Tmax, initial_gap)
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = _hb_choice("Polyak (best T)", a_c, b_c, *cargs)
    a_p = 1.0 / L
    b_p = float(nesterov_momentum(a_p, mu))
    paper = _hb_choice("paper Sec.5 (best T)", a_p, b_p, *cargs)
    # the search result, or a starting point it did not improve on (the grid point, or
    # Polyak's / the paper's choice: e.g. mu = L, where alpha = 1/L, beta = 0 is exact in one
    # step and lies on no grid): "tuned" is never worse than the choices it is compared with
    label = "tuned (alpha,beta,T)"
    tuned = _hb_choice(label, bracket.alpha, bracket.beta, *cargs)
    for c in (classical, paper):
        if c.bound < tuned.bound:
            tuned = replace(c, label=label)
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_distance_sq": dist_sq, "max_horizon": Tmax, "mechanism": mechanism,
               "function_class": "quadratic", "grid": grid,
               "initial_gap": None if initial_gap is None else float(initial_gap)}
    lower = min(bracket.lower, tuned.bound)
    gap = tuned.bound / lower - 1.0 if lower > 0 else math.inf
    return HeavyBallTuning(tuned, classical, paper, setting, lower_bound=lower,
                           certified_gap=max(gap, 0.0),
                           momentum_note=_momentum_note(tuned, evaluate), objective="bound")


_WC_LAMBDA = 129  # eigenvalues of the grid and compass searches' worst case
_WC_LAMBDA_FINE = 1025  # fewest eigenvalues of the polish and of each row's horizon
#: eigenvalues per unit of degree (2T + 1) of the polish's grid, at most _WC_LAMBDA_MAX: the
#: optimum sits on a crease where peaks of the worst case over lambda trade places, and a grid
#: with ~5 points per degree lets the polish settle where a peak falls between them (0.1-0.25%
#: above an independent dense oracle at L/mu = 1e3..1e4 with T capped at 100; 16: < 0.05%)
_WC_LAMBDA_PER_DEGREE = 16
_WC_LAMBDA_MAX = 8193
_WC_STARTS = 5   # local searches from the best local minima of each nested grid
_WC_POLISH = 1   # Nelder-Mead polishes per nested grid, from its best new local-search end point
_WC_RERANK = 6   # candidates ranked by the certified worst case (the fine grid)
#: a polish is skipped when its start lies this near (|dx| + |dy| in log alpha, -log(1 - beta))
#: to where an earlier polish started or ended
_WC_POLISH_NEAR = 0.02
_LOWER_TMAX = 10**5  # the method-independent lower bound is computed up to this max_horizon


def _bound_at(a: float, b: float, T: int, mu, L, d, n, m, eps, S, dist_sq) -> float:
    """The rigorous (25) at one (alpha, beta, T) (``inf`` if unstable)."""
    if not (a > 0 and 0 <= b < 1 and float(heavy_ball_rate(a, b, mu, L)) < 1):
        return math.inf
    obj = HeavyBallDPObjective(np.array([a]), np.array([b]), mu, L, None, d=d, n=n, m=m,
                               epsilon=eps, sensitivity=S, dist_sq=dist_sq)
    return float(obj.values(np.array([0]), np.array([T], dtype=float))[0])


def _tune_hb_error(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, initial_gap, by_bound,
                   progress) -> HeavyBallTuning:
    r"""Minimise the worst-case error over quadratics (``objective="error"``, the default).

    The search (grid in :math:`(\log\alpha,-\log(1-\beta))`, compass searches from its best
    local minima, a Nelder-Mead polish) evaluates the worst case on :data:`_WC_LAMBDA`
    eigenvalues at every horizon (:mod:`._worst_case_search`); every reported row is then
    certified on the fine grid of :func:`quadratic_worst_case`, refined near the maximiser
    (``refine=CERTIFIED_REFINE``: within 4e-5 when its levels complete). The optimum's lower
    end is the larger of heavy ball's branch and bound (:mod:`._certify_error`, for
    ``max_horizon`` up to its :data:`~._certify_error.MAX_CERT_HORIZON`) and the
    method-independent bound.
    """
    smp = sampling_variance_of_instance(S, n, m)
    lam = worst_case_lambda_grid(mu, L, _WC_LAMBDA)
    gap0 = None if initial_gap is None else float(initial_gap)

    def lap(T: np.ndarray) -> np.ndarray:
        b = np.asarray(laplace_scale_at_horizon(np.asarray(T, dtype=float), S, n, m, eps))
        with np.errstate(over="ignore"):
            return 2.0 * b * b

    def search(a: np.ndarray, b: np.ndarray, grid_: np.ndarray = lam
               ) -> tuple[np.ndarray, np.ndarray]:
        return heavy_ball_worst_by_horizon(np.atleast_1d(a), np.atleast_1d(b), grid_, d=d,
                                           Tmax=Tmax, laplace_var=lap, sampling_var=smp,
                                           initial_gap=gap0,
                                           dist_sq=None if gap0 is not None else dist_sq)

    def evaluate(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return search(a, b)[1]

    x_range, y_range = (math.log(_ALPHA_MIN / L), math.log(4.0 / L)), (0.0, _Y_MAX)
    members = wc_grid_family(grid)
    bar = progress_bar(progress, lines=True, total=len(members) + 1,
                       desc="worst case: nested grids and their local searches, certificate")
    # the horizon of each row is chosen on one eigenvalue grid for every ``grid`` (a row's
    # value must not depend on which grids ran before it)
    lam_cert = worst_case_lambda_grid(mu, L, _WC_LAMBDA_MAX)
    certified: dict[tuple[float, float], HeavyBallChoice] = {}

    def row(label: str, a: float, b: float, T: int | None = None) -> HeavyBallChoice:
        if T is None:
            Ts, vals = search(np.array([a]), np.array([b]), lam_cert)
            if not np.isfinite(vals[0]):
                return HeavyBallChoice(label + " [unstable]", float(a), float(b), 0,
                                       float("nan"), math.inf, math.inf, math.nan,
                                       worst_case_upper=math.inf)
            T = int(Ts[0])
        comp, upper, scale = _computed(T, a, b, mu, L, d, n, m, eps, S, dist_sq, gap0)
        rho = float(heavy_ball_rate(a, b, mu, L)) if 0 <= b < 1 else 1.0
        bound = _bound_at(a, b, T, mu, L, d, n, m, eps, S, dist_sq)
        return HeavyBallChoice(label, float(a), float(b), int(T), rho, bound, float(comp),
                               scale, worst_case_upper=float(upper))

    label = "tuned by worst-case error"

    certify = grid_point_rows(row, label, certified)

    tuned, path = nested_worst_case_search(members, search, evaluate, certify, mu, L,
                                           x_range, y_range, eps, bar)
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = row("Polyak (best T)", a_c, b_c)
    a_p = 1.0 / L
    b_p = float(nesterov_momentum(a_p, mu))
    paper = row("paper Sec.5 (best T)", a_p, b_p)
    bt = by_bound.tuned
    bound_row = replace(row("tuned by bound (25)", bt.alpha, bt.beta, bt.horizon),
                        bound=bt.bound, horizon_gap=bt.horizon_gap)
    # never worse than a choice it is compared with (ranked by the attained worst case)
    for c in (classical, paper, bound_row):
        if c.computed < tuned.computed:
            tuned = replace(c, label=label)
    bar.update()
    bar.close()
    setting = dict(by_bound.setting, objective="error", search_path=path)
    # proven: no (alpha, beta, T <= Tmax) has a smaller error on a quadratic (method-independent);
    # O(Tmax) work (28 CPU-s at 1e6): above _LOWER_TMAX it is left out and the table says so
    lower = (linear_method_lower_bound(mu, L, d, n, m, eps, S, dist_sq,
                                       gap0 if gap0 is not None else 0.5 * L * dist_sq, Tmax)
             if Tmax <= _LOWER_TMAX else math.nan)
    lower_by = "linear-MMSE and Chebyshev bounds, any linear method"
    # and heavy ball's own: a branch and bound over (alpha, beta, T) (both are proven lower
    # bounds of the same minimum, so the larger one is)
    if Tmax <= MAX_CERT_HORIZON and math.isfinite(tuned.worst_case_upper):
        hb_low = certify_error_minimum(mu, L, d, Tmax, lap, smp, best=tuned.worst_case_upper,
                                       initial_gap=gap0, near=tuned.horizon,
                                       dist_sq=None if gap0 is not None else dist_sq).lower
        if not hb_low <= lower:  # also when the method-independent one is nan
            lower, lower_by = hb_low, "branch and bound over heavy ball's (alpha, beta, T)"
    gap = (tuned.worst_case_upper / lower - 1.0 if lower > 0 else
           (math.nan if math.isnan(lower) else math.inf))
    return HeavyBallTuning(tuned, classical, paper, setting, lower_bound=lower,
                           certified_gap=max(gap, 0.0) if not math.isnan(gap) else gap,
                           momentum_note=_momentum_note_error(tuned),
                           objective="error", by_bound=bound_row, lower_bound_by=lower_by)


def grid_point_rows(row: Any, label: str, cache: dict) -> Callable[[float, float], Any]:
    """The row of grid point (x, y) = (log alpha, -log(1 - beta)), computed once per point
    (rounded to 12 digits) and kept in ``cache``: the nested search revisits points."""
    def certify(x: float, y: float) -> Any:
        key = (round(x, 12), round(y, 12))
        if key not in cache:
            cache[key] = row(label, math.exp(x), -math.expm1(-y))
        return cache[key]
    return certify


def nested_worst_case_search(members: list[int], search: Any, evaluate: Any, certify: Any,
                             mu: float, L: float, x_range: tuple[float, float],
                             y_range: tuple[float, float], eps: float, bar: Any
                             ) -> tuple[Any, list[tuple[int, float]]]:
    r"""The worst-case search of :func:`_tune_hb_error` over :math:`(\log\alpha,-\log(1-\beta))`
    (its nested grids ``members``, their compass searches and polishes, each grid's best
    candidates certified by ``certify(x, y)``, a row with ``worst_case_upper``): the least
    certified row and the search path ``(grid, least so far)``. ``search(a, b[, lam])`` gives
    the best horizons and worst cases on a grid of eigenvalues, ``evaluate(a, b)`` the latter
    (any method of the fixed-step family whose coefficients are functions of
    :math:`(\alpha,\beta)`: :mod:`dpbounds.extend`'s plug-ins use it too)."""
    # "never worse when refined": the grids run in a fixed nested order (3, 8, 16, 30, 60,
    # ...: the members of the family up to ``grid``), each step depending only on the
    # steps before it, and the tuned row is the least certified candidate of all of them, so
    # a larger ``grid`` repeats a smaller one's whole run and can only add candidates
    polished: list[tuple[float, float]] = []  # start and end points of the polishes so far
    tuned: Any = None
    path: list[tuple[int, float]] = []  # (grid, least certified worst case so far)
    for g in members:
        cands = _wc_member_candidates(g, search, evaluate, mu, L, x_range, y_range, eps,
                                      polished)
        # the search's surrogate (a fixed grid of eigenvalues) can be low where a peak of the
        # worst case falls between its eigenvalues, and a search exploits exactly such points
        # (review: 3.1% low at Fig. 3's tuned point): the best few candidates are ranked by
        # the certified worst case of the fine grid, the one the table reports
        ranked = list(dict.fromkeys((round(x, 12), round(y, 12))
                                    for _, x, y in sorted(cands)))[:_WC_RERANK]
        # and gradient descent at the best candidate's step: a search ending at beta ~ 1e-6
        # where beta = 0 is as good (kappa = 1) is reported as what it is
        ranked.append((ranked[0][0], 0.0))
        for x, y in ranked:
            c = certify(x, y)
            if tuned is None or c.worst_case_upper < tuned.worst_case_upper:
                tuned = c
        assert tuned is not None
        path.append((g, tuned.worst_case_upper))
        bar.update()
    assert tuned is not None  # the family has at least one member (grid >= 3)
    return tuned, path


def wc_grid_family(grid: int) -> list[int]:
    """The nested grid sizes the worst-case search runs for ``grid``: the members of 3, 8, 16,
    30, then x2 (60, 120, ...), up to ``grid`` (so ``grid`` is rounded down to the family: a
    ``grid`` between two members runs as the smaller one)."""
    fam = [3, 8, 16, 30]
    while fam[-1] * 2 <= grid:
        fam.append(fam[-1] * 2)
    return [g for g in fam if g <= grid]


def _wc_member_candidates(g, search, evaluate, mu, L, x_range, y_range, eps, polished):
    r"""One grid of the nested worst-case search: the ``g x g`` grid in
    :math:`(\log\alpha,-\log(1-\beta))`, compass searches from its best local minima, then
    Nelder-Mead polishes (on a fine eigenvalue grid) from the best end points that no earlier
    polish started or ended near; ``polished`` (the history) is extended in place. Returns the
    candidates ``(surrogate value, x, y)``."""
    xs, ys = np.linspace(*x_range, g), np.linspace(*y_range, g)
    X, Y = np.meshgrid(xs, ys)
    F = evaluate(np.exp(X.ravel()), -np.expm1(-Y.ravel())).reshape(X.shape)
    if not np.isfinite(np.min(F)):
        raise ValueError(f"epsilon={eps!r} is too small for this problem: the worst-case "
                         "error exceeds the float64 range at every (alpha, beta, T)"
                         + _conditioning_hint(mu, L))
    lm = (F == minimum_filter(F, size=3, mode="nearest")) & (F <= 2.0 * np.min(F))
    # the objective is ragged (the best integer T switches along valleys): more starts
    starts = sorted(zip(F[lm], X[lm], Y[lm]))[:_WC_STARTS]
    # the compass searches' first step: the grid's spacing, at most a 16-point grid's (a
    # coarse grid's role is to start searches in other valleys, not to take long strides)
    h = (min(xs[1] - xs[0], (x_range[1] - x_range[0]) / 15),
         min(ys[1] - ys[0], (y_range[1] - y_range[0]) / 15))
    found = [_pattern_search(evaluate, x, y, v, h, x_range, y_range) for v, x, y in starts]
    # a Nelder-Mead polish from the best few end points: the minimum over T of smooth pieces
    # has creases on which compass searches stop (at Fig. 3, 0.14% above a dense oracle); an
    # end point near where an earlier polish started or ended would find that polish's
    # minimum again, and is skipped (the nested grids' searches mostly end in the same valleys)
    candidates = list(found)
    done = 0
    for _, x1, y1 in sorted(found):
        if done == _WC_POLISH:
            break
        if any(abs(x1 - px) + abs(y1 - py) < _WC_POLISH_NEAR for px, py in polished):
            continue
        # on the fine surrogate (review: the coarse one misses peaks of the degree-2T
        # polynomials and the search settles where they fall between its eigenvalues), with
        # eigenvalues per degree of the start's best horizon
        T_hint = int(search(np.array([math.exp(x1)]), np.array([-math.expm1(-y1)]))[0][0])
        lam_fine = worst_case_lambda_grid(mu, L, int(np.clip(
            _WC_LAMBDA_PER_DEGREE * (2 * T_hint + 1), _WC_LAMBDA_FINE, _WC_LAMBDA_MAX)))

        def evaluate_fine(a: np.ndarray, b: np.ndarray, lam_fine=lam_fine) -> np.ndarray:
            return search(a, b, lam_fine)[1]

        polish = minimize(lambda z: _log_value(evaluate_fine, z, x_range, y_range), [x1, y1],
                          method="Nelder-Mead",
                          options={"xatol": 1e-5, "fatol": 1e-6,
                                   "initial_simplex": [[x1, y1], [x1 + 0.05, y1],
                                                       [x1, y1 + 0.05]], "maxiter": 300})
        polished += [(x1, y1), (float(polish.x[0]), float(polish.x[1]))]
        # a log value past float's range is an infinite candidate (it overflowed math.exp)
        value = math.exp(polish.fun) if polish.fun < _LOG_MAX else math.inf
        candidates.append((value, float(polish.x[0]), float(polish.x[1])))
        done += 1
    return candidates


def _momentum_note_error(tuned: HeavyBallChoice) -> str:
    if tuned.beta > _GD_BETA:
        return ""
    return (f"beta = {tuned.beta:.3g}: the run with the least worst-case error is plain gradient "
            "descent (momentum lowers the rate but multiplies the noise by about "
            "(1 + beta)/(1 - beta); here the noise dominates)")


def _log_value(evaluate, z, x_range, y_range) -> float:
    x, y = float(z[0]), float(z[1])
    if not (x_range[0] <= x <= x_range[1] and y_range[0] <= y <= y_range[1]):
        return 1e300
    v = float(evaluate(np.array([math.exp(x)]), np.array([-math.expm1(-y)]))[0])
    return math.log(v) if 0 < v < math.inf else 1e300


def _pattern_search(evaluate, x, y, v, h, x_range, y_range, n_dirs=8):
    """Compass search on (log alpha, y) from a grid point: move to the best of ``n_dirs``
    neighbours (8: the grid's; 16: every 22.5 degrees) while it improves, else halve the
    step; (value, x, y) at the end."""
    hx, hy = h
    used = 0
    if n_dirs == 8:
        dirs = np.array([(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)])
    else:
        ang = np.arange(n_dirs) * 2 * np.pi / n_dirs
        dirs = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    while (hx > _PATTERN_TOL or hy > _PATTERN_TOL) and used < _PATTERN_BUDGET:
        cx = np.clip(x + dirs[:, 0] * hx, *x_range)
        cy = np.clip(y + dirs[:, 1] * hy, *y_range)
        vals = evaluate(np.exp(cx), -np.expm1(-cy))
        used += dirs.shape[0]
        k = int(np.argmin(vals))
        if vals[k] < v:
            v, x, y = float(vals[k]), float(cx[k]), float(cy[k])
        else:
            hx, hy = 0.5 * hx, 0.5 * hy
    return v, x, y


def _momentum_note(tuned: HeavyBallChoice, evaluate: Any) -> str:
    """Why the best heavy ball is plain gradient descent, when it is (beta = 0)."""
    if tuned.beta > 0:
        return ""
    up = float(evaluate(np.array([tuned.alpha]), np.array([_BETA_PROBE]))[0])
    return (f"beta = 0: the best heavy ball is plain gradient descent. The constraint beta >= 0 "
            f"binds: the bound grows with the momentum there (B at beta = {_BETA_PROBE:g}, same "
            f"alpha: {up:.6g} > {tuned.bound:.6g}); momentum lowers the rate but multiplies the "
            "noise term by (1 + beta)/(1 - beta)")


def _momentum_note_lmi(tuned: HeavyBallChoice) -> str:
    if tuned.beta > 0:
        return ""
    return ("beta = 0: the best certified heavy ball the search found is plain gradient descent "
            "(with momentum the Prop. 3.4 LMI certifies no better rate-and-constant trade-off "
            "here; at large L/mu Section 5's momentum has no certificate at all)")


# ----------------------------------------------------------------------------- LMI class
_LMI_GRIDS = (3, 5, 9, 17)  # nested coarse grids of the box (17 points = 16 cells: contain 9, 5, 3)
_LMI_STARTS = 2             # local searches from the best local minima of each grid
_LMI_LATTICE = 8192         # cells per axis of the lattice the searches move on (last step)
#: the box: alpha L in [_LMI_ALPHA_L[0], _LMI_ALPHA_L[1]], beta in [0, _LMI_BETA_MAX]
_LMI_ALPHA_L = (1e-3, 1.5)
_LMI_BETA_MAX = 0.995
_LMI_SEARCH_POLLS = 480     # evaluations (cached or not) one compass search may ask for
_LMI_ROUNDS = 3             # compass, valley and crease searches in turn, at most this often


def _lmi_best(mu, L, a, b, noise, Tmax, dist_sq, gap0, lmi):
    """Best derived LMI bound over T and a few certified rates: (bound, T, rho) or None."""
    curves = lmi_bound_curves(mu, L, a, b, initial_distance_sq=dist_sq, initial_gap=gap0,
                              noise=noise, lmi=lmi)
    if curves is None:
        return None
    res = minimise_over_horizon(curves, curves.rho.size, Tmax, joint=True,
                                max_evaluations=_CHOICE_BUDGET)
    j = int(np.argmin(res.best))
    return float(res.best[j]), int(res.best_T[j]), float(curves.rho[j])


#: how far (in widths of the box) the local searches may leave it towards small alpha and
#: beta -> 1; the coarse grids cover the box only
_LMI_EXTEND = 1

#: when the best point is on the edge of that reach, it grows by one more width (up to this
#: many) and the local searches go on from there: at L/mu = 1e6 with max_horizon 1e7 (bench
#: problems 17 and 19) the best point of one width lay on its edge beta = 0.999975 and the
#: bound fell by 41% beyond it (problem 17: 6.99e-6 -> 4.10e-6 at alpha L = 3.6e-6,
#: 1 - beta = 4.8e-6)
_LMI_EXTEND_MAX = 2


def _lmi_box(L: float) -> tuple[float, float, float]:
    """(x0, wx, wy): log alpha in [x0, x0 + wx], y = -log(1 - beta) in [0, wy].

    The coarse grids cover this box; the local searches reach :data:`_LMI_EXTEND` widths
    further towards small alpha and beta -> 1 (:func:`_lmi_domain`): in the long-horizon
    regime the optimum follows the edge of the certified region there, with ``alpha L`` and
    ``1 - beta`` far below ``sqrt(mu / L)`` (bench problem 17, L/mu = 1e6, max_horizon 1e7:
    3.5e-6 at alpha L = 4.1e-6, 1 - beta = 4.8e-6, in the reach grown to two widths
    (:data:`_LMI_EXTEND_MAX`); 7.0e-6 on the edge of one width; 3.9e-4 at the best point of
    the box).
    """
    lo, hi = _LMI_ALPHA_L
    return math.log(lo / L), math.log(hi / lo), -math.log1p(-_LMI_BETA_MAX)


def _lmi_domain(L: float, extend: int = _LMI_EXTEND) -> tuple[float, float, float]:
    """(smallest alpha, largest alpha, largest beta) the searches can reach (``extend`` box
    widths beyond the box, see :data:`_LMI_EXTEND_MAX`)."""
    x0, wx, wy = _lmi_box(L)
    return (math.exp(x0 - extend * wx), math.exp(x0 + wx), -math.expm1(-(1 + extend) * wy))


def _lmi_grid_size(grid: int) -> int:
    """The largest of the nested grids not above ``grid``."""
    return max(g for g in _LMI_GRIDS if g <= grid)


def _lmi_search(f, grid, bar=None, knights=True, valleys=True, info=None):
    """Minimise ``f(p, q)`` over the lattice of the box, ``0 <= p, q <= N = _LMI_LATTICE``,
    and its extension (:data:`_LMI_EXTEND`): ``-E N <= p <= N``, ``0 <= q <= (1 + E) N``;
    while the best point is on the extension's edge (``p = -E N`` or ``q = (1 + E) N``), E
    grows by one (up to :data:`_LMI_EXTEND_MAX`) and the local searches go on from that point
    (``info["extend"]``: the final E).

    ``f`` (``inf``: no certificate) is evaluated once per lattice point. The nested grids of
    :data:`_LMI_GRIDS` up to ``grid`` points per axis, then from the :data:`_LMI_STARTS` best
    local minima of each, a compass search (the best of the 8 neighbours at the current step,
    or failing that of the 8 knight's moves (``knights``), while it improves, else half the
    step) down to one lattice cell, then (``valleys``) a line search along the valley
    (:func:`_valley_step`) and a walk along the crease (:func:`_crease_walk`), also when the
    compass search ran out of evaluations; where they improve, the compass search resumes
    from there (at most :data:`_LMI_ROUNDS` rounds).
    Deterministic: the grids are taken in turn, each followed by its searches and the growth
    of the reach, so a larger ``grid`` first repeats a smaller one's whole run (the same
    evaluations in the same order) and its best point is never worse; a search reaching a
    (point, step) that an earlier one passed through stops there (the rest of its path is
    known).
    Returns (value, p, q, number of points evaluated).
    """
    N = _LMI_LATTICE
    reach = [_LMI_EXTEND]  # the grids cover [0, N]^2 only
    cache: dict[tuple[int, int], float] = {}

    def F(p: int, q: int) -> tuple[float, int, int]:
        p, q = min(max(p, -reach[0] * N), N), min(max(q, 0), (1 + reach[0]) * N)
        if (p, q) not in cache:
            cache[(p, q)] = f(p, q)
            if bar is not None:
                bar.update()
        return cache[(p, q)], p, q

    dirs = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0)]
    # knight's moves, polled before the step is halved: the bound has narrow valleys (where
    # the best horizon or rate switches) along which no compass direction descends
    knight = [(i * a, j * b) for a, b in ((1, 2), (2, 1)) for i in (-1, 1) for j in (-1, 1)]
    seen: set[tuple[int, int, int]] = set()

    def descend(p: int, q: int, h: int) -> None:
        v = cache[(p, q)]
        for _ in range(_LMI_ROUNDS):
            polls = 0
            while h >= 1 and polls < _LMI_SEARCH_POLLS and (p, q, h) not in seen:
                seen.add((p, q, h))
                for moves in ((dirs, knight) if knights else (dirs,)):
                    polls += len(moves)
                    vn, pn, qn = min(F(p + i * h, q + j * h) for i, j in moves)
                    if vn < v:
                        v, p, q = vn, pn, qn
                        break
                else:
                    h //= 2
            # on a path an earlier search took, the rest is known; otherwise (the compass
            # search converged or ran out of evaluations, often crawling along a valley)
            # the valley and crease searches continue from here
            if (h >= 1 and (p, q, h) in seen) or not valleys or (p, q, 0) in seen:
                break
            # far above the best point so far: another search's valley is the better bet
            # (the best so far depends only on the searches before: a larger grid still
            # repeats a smaller one's searches first, so it is never worse)
            if v > _VALLEY_WITHIN * min(cache.values()):
                break
            seen.add((p, q, 0))
            vn, pn, qn, h, _ = _valley_step(F, p, q, v)
            vc, pc, qc, _ = _crease_walk(F, pn, qn, vn)
            if vc < vn:
                vn, pn, qn = vc, pc, qc
            if not vn < v:
                break
            v, p, q = vn, pn, qn
            seen.add((p, q, 0))  # a compass search that stays here ends the search

    # grid by grid, each followed by its searches and the growth of the reach: a larger grid
    # repeats a smaller one's whole run (same evaluations, in the same order) before its own
    for g in (s for s in _LMI_GRIDS if s <= _lmi_grid_size(grid)):
        step = N // (g - 1)
        G = np.array([[F(i * step, j * step)[0] for j in range(g)] for i in range(g)])
        pad = np.pad(G, 1, constant_values=np.inf)
        local = sorted((G[i, j], i, j) for i in range(g) for j in range(g)
                       if np.isfinite(G[i, j]) and G[i, j] <= np.min(pad[i:i + 3, j:j + 3]))
        for _, i, j in local[:_LMI_STARTS]:
            descend(i * step, j * step, step)
        v, (p, q) = min((v, k) for k, v in cache.items())
        while reach[0] < _LMI_EXTEND_MAX and (p == -reach[0] * N or q == (1 + reach[0]) * N):
            reach[0] += 1
            seen.clear()  # the paths so far were cut at the former edge
            descend(p, q, N // 16)
            v, (p, q) = min((v, k) for k, v in cache.items())
    v, (p, q) = min((v, k) for k, v in cache.items())
    if info is not None:
        info["extend"] = reach[0]
    return v, p, q, len(cache)


#: stencil steps of :func:`_valley_step`, coarse to fine, as fractions of the lattice
_VALLEY_STEPS = (1 / 32, 1 / 256, 1 / 2048)


def _cells(fraction: float) -> int:
    """A step given as a fraction of the lattice, in (at least one) lattice cells."""
    return max(round(fraction * _LMI_LATTICE), 1)


_VALLEY_WITHIN = 1.25  # valley and crease searches from end points within this of the best
_CREASE_EXPAND = 4  # failed steps of the crease walk doubled before it turns round


def _line_min(F, p, q, axis, h):
    """Local minimum of ``F`` along one lattice axis from ``(p, q)``: steps ``h, h/2, ..., 1``."""
    v, p, q = F(p, q)
    polls = 1
    while h >= 1 and polls < 64:
        moves = [(p + h, q), (p - h, q)] if axis == 0 else [(p, q + h), (p, q - h)]
        vn, pn, qn = min(F(*m) for m in moves)
        polls += 2
        if vn < v:
            v, p, q = vn, pn, qn
        else:
            h //= 2
    return v, p, q, polls


def _crease_walk(F, p, q, v):
    """Follow a crease of the bound from ``(p, q)``: step along one axis, minimise across.

    The optimum of the bound often lies on a crease where two smooth pieces meet (the minimal
    rate is the larger of two rates there, as for heavy ball on quadratics, where the rates at
    mu and at L balance). Across a crease the bound is V-shaped, so compass moves and
    curvature both point across it; along it the bound falls smoothly. Each step moves ``p``
    (then ``q``) by 8, 16, 32, ... cells (of 8192), both ways, and puts the other coordinate
    back on the crease by a line minimisation started from the slope of the previous step.
    At L/mu = 1e3 (bench problem 10) the compass search stopped on such a crease 0.3% above
    the oracle, 700 cells from the optimum along it.
    Returns ``(value, p, q, evaluations asked)``.
    """
    best, polls, first = (v, p, q), 0, _cells(1 / 1024)
    for axis in (0, 1):
        for sign in (1, -1):
            (v, p, q), step, slope, fails, retried = best, first, 0.0, 0, False
            while polls < 600:
                if axis == 0:
                    pn, qn = p + sign * step, q + round(slope * sign * step)
                else:
                    pn, qn = p + round(slope * sign * step), q + sign * step
                vn, pn, qn, k = _line_min(F, pn, qn, 1 - axis, max(step // 2, _cells(1 / 2048)))
                polls += k
                if vn < v:
                    moved = (pn - p, qn - q)
                    slope = moved[1 - axis] / moved[axis] if moved[axis] else 0.0
                    v, p, q, step, fails = vn, pn, qn, 2 * step, 0
                elif fails < _CREASE_EXPAND and step < _LMI_LATTICE // 8:
                    # a short step can lose to the lattice: the crease between two cells
                    # costs up to half a cell of the V's slope; a longer one gains more
                    step, fails = 2 * step, fails + 1
                elif step > first and not retried:
                    step, fails, retried = first, 0, True
                else:
                    break
            if v < best[0]:
                best = (v, p, q)
    return best[0], best[1], best[2], polls


def _valley_step(F, p, q, v):
    """A line search along the valley through a compass search's end point ``(p, q)``.

    At each step ``h`` of :data:`_VALLEY_STEPS` (256, 32, 4 cells of 8192): the valley's
    direction is the eigenvector of the smallest curvature of the central-difference Hessian on
    the 3x3 stencil of step ``h``; along it (both ways) steps of ``h, 2h, 4h, ...`` are taken
    while the value falls. For smooth, narrow valleys (Fig. 3: 1.00876 -> 1.00634); a crease
    (V-shaped across) is :func:`_crease_walk`'s.
    Returns ``(value, p, q, step to resume the compass search with, evaluations asked)``.
    """
    best, polls = (v, p, q), 0
    for h in dict.fromkeys(_cells(f) for f in _VALLEY_STEPS):
        p, q = best[1], best[2]
        st = {(i, j): F(p + i * h, q + j * h)[0] for i in (-1, 0, 1) for j in (-1, 0, 1)}
        polls += 8
        if not all(math.isfinite(x) for x in st.values()):
            continue
        fpp = st[(1, 0)] + st[(-1, 0)] - 2.0 * st[(0, 0)]
        fqq = st[(0, 1)] + st[(0, -1)] - 2.0 * st[(0, 0)]
        fpq = 0.25 * (st[(1, 1)] - st[(1, -1)] - st[(-1, 1)] + st[(-1, -1)])
        d = np.linalg.eigh(np.array([[fpp, fpq], [fpq, fqq]]))[1][:, 0]
        for sign in (1.0, -1.0):
            k = 1
            while k <= 64:
                vn, pn, qn = F(p + round(sign * d[0] * h * k), q + round(sign * d[1] * h * k))
                polls += 1
                if not vn < best[0]:
                    break
                best, k = (vn, pn, qn), 2 * k
    return best[0], best[1], best[2], _cells(_VALLEY_STEPS[0] / 2), polls


def _tune_hb_lmi(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism, gap0, progress):
    from dpbounds.lmi.heavy_ball_lmi import HeavyBallLMI, heavy_ball_lmi_rate

    def noise(T):  # E||w_T||^2 = 2 d b_T^2 + sigma_s^2, eq. (20)
        return dp_noise_level(S, d, n, m, eps, T)

    def evaluate(a, b):
        # a fresh solver per point (~6 ms): a reused one carries state from the previous
        # solves and its certificates differ by up to ~2%, which makes f depend on the order
        # of evaluation (no search could then be reproduced or compared)
        return _lmi_best(mu, L, a, b, noise, Tmax, dist_sq, gap0,
                         HeavyBallLMI(backend="clarabel"))

    # the box: log alpha in [log(1e-3/L), log(1.5/L)], y = -log(1 - beta) in [0, log 200]
    # (beta in [0, 0.995], dense near 1; y = 0 is gradient descent exactly), on a lattice
    # that extends one box width beyond it towards small alpha and beta -> 1, two while the
    # best point is on the edge of the first (reached by the local searches only:
    # _lmi_search); it
    # holds every point the former 12x12 grid and its 5x5 refinement could reach, and the
    # narrow valley of Fig. 3's optimum (alpha L ~ 0.005, beta ~ 0.991) with room below. A
    # larger box for the grids (alpha L down to 1e-4, beta up to 0.9999, where the optima of
    # L/mu >= 1e4 with long horizons lie) made them too sparse: Fig. 3 +0.5%, kappa = 1e3
    # +7.6% (and, after the crease walk, L/mu = 300 +0.19%)
    x0, wx, wy = _lmi_box(L)
    results = {}

    def point(p, q):  # lattice point -> (alpha, beta)
        return math.exp(x0 + wx * p / _LMI_LATTICE), -math.expm1(-wy * q / _LMI_LATTICE)

    def f(p, q):
        r = results[(p, q)] = evaluate(*point(p, q))
        return math.inf if r is None else r[0]

    with progress_bar(progress, desc="LMI certificates (grid and local searches)",
                      lines=True) as bar:
        reach: dict = {}
        val, p, q, _ = _lmi_search(f, grid, bar, info=reach)
    if not math.isfinite(val):
        raise ValueError("no (alpha, beta) of the search has a Prop. 3.4 certificate")
    ab, bb = point(p, q)

    def choice(label, a, b, res):
        if res is None:
            return HeavyBallChoice(label + " [no certificate]", float(a), float(b), 0,
                                   float("nan"), float("inf"), float("nan"), float("nan"))
        val, Tb, rho = res
        comp, upper, scale = _computed(Tb, a, b, mu, L, d, n, m, eps, S, dist_sq, gap0)
        return HeavyBallChoice(label, float(a), float(b), int(Tb), float(rho), float(val),
                               float(comp), scale, worst_case_upper=float(upper))

    label = "tuned (alpha,beta,T)"
    tuned = choice(label, ab, bb, results[(p, q)])
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = choice("Polyak (best T)", a_c, b_c, evaluate(a_c, b_c))
    a_p = 1.0 / L
    b_p = float(nesterov_momentum(a_p, mu))
    paper = choice("paper Sec.5 (best T)", a_p, b_p, evaluate(a_p, b_p))
    for c in (classical, paper):  # tuned is never worse than the choices it is compared with
        if c.bound < tuned.bound:
            tuned = replace(c, label=label)
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_distance_sq": dist_sq, "initial_gap": gap0, "max_horizon": Tmax,
               "mechanism": mechanism, "function_class": "smooth_strongly_convex"}
    # proven: no certified (alpha, beta, T) has an LMI bound below this (_lmi_lower)
    # not clamped to tuned.bound: a lower bound above it would be a bug the tests must see
    lower = linear_method_lower_bound(mu, L, d, n, m, eps, S, dist_sq, gap0, Tmax)
    gap = tuned.bound / lower - 1.0 if lower > 0 else math.inf
    # what any certificate at any rate and T gives at the tuned (alpha, beta), from the
    # certified rates' proven lower end (exact Farkas check) there; up to ~13 CPU-s at
    # L/mu = 1e6 with max_horizon 1e7, hence its own bar
    with progress_bar(progress, total=1, desc="floor at the tuned (alpha, beta)",
                      lines=True) as bar:
        base = heavy_ball_lmi_rate(mu, L, tuned.alpha, tuned.beta, tol=1e-9, rtol=1e-6,
                                   lmi=HeavyBallLMI(backend="clarabel"), polish=False)
        floor = certificate_floor(mu, L, tuned.alpha, tuned.beta, noise=noise,
                                  max_horizon=Tmax, dist_sq=dist_sq, gap0=gap0,
                                  rho_min=getattr(base, "rho_lower", 0.0))
        bar.update()
    point_gap = tuned.bound / floor - 1.0 if floor > 0 else math.inf
    return HeavyBallTuning(tuned, classical, paper, setting, lower_bound=lower,
                           certified_gap=max(gap, 0.0),
                           momentum_note=_momentum_note_lmi(tuned),
                           point_lower_bound=floor, point_gap=point_gap,
                           box_edge=_box_edge(tuned, mu, L, reach["extend"]))


def _box_edge(tuned: HeavyBallChoice, mu: float, L: float, extend: int = _LMI_EXTEND) -> str:
    """Which edge of the LMI search's reach (:func:`_lmi_domain`, ``extend`` widths beyond the
    box) the tuned point lies on."""
    a_lo, a_hi, b_max = _lmi_domain(L, extend)
    edges = []
    if math.isclose(tuned.alpha, a_lo, rel_tol=1e-9):
        edges.append(f"alpha L = {a_lo * L:.3g} (smallest)")
    if math.isclose(tuned.alpha, a_hi, rel_tol=1e-9):
        edges.append(f"alpha L = {a_hi * L:.3g} (largest)")
    if math.isclose(tuned.beta, b_max, rel_tol=1e-12, abs_tol=1e-12):
        edges.append(f"beta = {b_max:.7g} (largest)")
    return ", ".join(edges)


# ------------------------------------------------------- smooth class, worst-case error objective
#: the box of the smooth-class error search: alpha L in [1e-3, 2] (gradient descent's stable
#: range ends at 2; momentum shrinks the certified one), -log(1 - beta) in [0, log 1e4]
_SMOOTH_ALPHA_L = (1e-3, 2.0)
_SMOOTH_RECHECK = 4  # best points of the search whose certificates are checked exactly


def _tune_hb_smooth_error(mu, L, d, n, m, eps, S, dist_sq, Tmax, grid, mechanism, initial_gap,
                          progress) -> HeavyBallTuning:
    r"""All of :math:`\mathcal S_{\mu,L}`, the worst-case error objective (``function_class=
    "smooth_strongly_convex"``, ``objective="error"``).

    Minimises the noise-aware Lyapunov bound (:mod:`dpbounds.tuning._lyapunov_search`, a
    certified upper bound on the worst case over the class of DP heavy ball as run) over
    :math:`(\alpha,\beta,T\le T_{\max})`: nested grids and compass searches
    (:func:`~dpbounds.tuning._lyapunov_search.nested_search`) on float certificates, then the
    best :data:`_SMOOTH_RECHECK` points re-evaluated from exactly checked certificates only.
    Each row carries the bracket ``computed <= worst case over the class <= bound``:
    ``computed`` the exact worst case attained on an admissible quadratic (quadratics lie in
    the class), ``bound`` the checked Lyapunov bound, both at the row's :math:`(\alpha,\beta,T)`.
    """
    from dpbounds.tuning._lyapunov_search import lyapunov_point, nested_search, verified_value

    if not mu < L:
        raise ValueError(f"mu must be < L = {L} for function_class='smooth_strongly_convex' with "
                         f"objective='error' (the Lyapunov SDP scales by L - mu), got {mu}")
    # beyond the SDP's resolution (condition number, noise-to-start ratio): refused by name
    from dpbounds.pep.formulation import check_class, check_scales

    check_class(mu, L)
    gap0 = float(initial_gap) if initial_gap is not None else 0.5 * L * dist_sq
    if not gap0 > 0:
        raise ValueError(f"initial_gap must be > 0 for the Lyapunov bound, got {gap0}")

    def noise(T: Any) -> Any:  # E||xi_t||^2 <= 2 d b_T^2 + sigma_s^2 (20): the total (module doc)
        return dp_noise_level(S, d, n, m, eps, T)

    check_scales(mu, L, 1.0 / L, gap0, 0.0)  # the condition number (the weights are scaled)
    kw = dict(noise=noise, dist_sq=dist_sq, gap0=gap0, Tmax=Tmax)
    points: dict[tuple[float, float], Any] = {}

    def f(x: float, y: float) -> float:
        p = points[(x, y)] = lyapunov_point(math.exp(x), -math.expm1(-y), mu, L, **kw)
        return p.value

    x_range = (math.log(_SMOOTH_ALPHA_L[0] / L), math.log(_SMOOTH_ALPHA_L[1] / L))
    y_range = (0.0, _Y_MAX)
    with progress_bar(progress, desc="Lyapunov bounds (nested grids, compass searches)",
                      lines=True) as bar:
        nested_search(f, x_range, y_range, grid, on_grid=lambda g: bar.update())
    if not any(math.isfinite(p.value) for p in points.values()):
        raise ValueError("no (alpha, beta) of the search has a Lyapunov certificate (is epsilon "
                         "large enough for this problem?)")

    def row(label: str, point: Any) -> HeavyBallChoice:
        val, T, rho = verified_value(point, mu, L, **kw)
        a, b = point.alpha, point.beta
        if not math.isfinite(val):
            # no upper end: the lower end at the horizon with the least quadratic worst case
            label, T = label + " [no certificate]", _least_quadratic_horizon(a, b)
            if T == 0:
                return HeavyBallChoice(label + " [unstable]", a, b, 0, math.nan, math.inf,
                                       math.inf, math.nan, worst_case_upper=math.inf)
        comp, upper, scale = _computed(T, a, b, mu, L, d, n, m, eps, S, dist_sq, initial_gap)
        return HeavyBallChoice(label, a, b, T, rho, val, float(comp), scale,
                               worst_case_upper=float(upper))

    def _least_quadratic_horizon(a: float, b: float) -> int:
        """The T <= Tmax with the least worst case over quadratics (0: unstable there)."""
        def lap(T: np.ndarray) -> np.ndarray:
            sc = np.asarray(laplace_scale_at_horizon(np.asarray(T, dtype=float), S, n, m, eps))
            with np.errstate(over="ignore"):
                return 2.0 * sc * sc

        Ts, vals = heavy_ball_worst_by_horizon(
            np.array([a]), np.array([b]), worst_case_lambda_grid(mu, L, _WC_LAMBDA_FINE), d=d,
            Tmax=Tmax, laplace_var=lap, sampling_var=sampling_variance_of_instance(S, n, m),
            initial_gap=initial_gap, dist_sq=None if initial_gap is not None else dist_sq)
        return int(Ts[0]) if np.isfinite(vals[0]) else 0

    label = "tuned by worst-case bound"
    best = sorted(points.items(), key=lambda kv: (kv[1].value, kv[0]))[:_SMOOTH_RECHECK]
    tuned = min((row(label, p) for _, p in best), key=lambda c: c.bound)
    a_c, b_c = classical_heavy_ball_parameters(mu, L)
    classical = row("Polyak (best T)", lyapunov_point(a_c, b_c, mu, L, **kw))
    a_p = 1.0 / L
    b_p = float(nesterov_momentum(a_p, mu))
    paper = row("paper Sec.5 (best T)", lyapunov_point(a_p, b_p, mu, L, **kw))
    for c in (classical, paper):  # never worse than a choice it is compared with
        if c.bound < tuned.bound:
            tuned = replace(c, label=label)
    setting = {"mu": mu, "L": L, "d": d, "n": n, "m": m, "epsilon": eps, "sensitivity": S,
               "initial_distance_sq": dist_sq, "initial_gap": initial_gap, "max_horizon": Tmax,
               "mechanism": mechanism, "function_class": "smooth_strongly_convex",
               "grid": grid, "objective": "error", "evaluated": len(points)}
    # proven: no (alpha, beta, T <= Tmax) has a Lyapunov bound below this (_lmi_lower: the
    # bound holds for every zero-mean noise of second moment E_T, so on the isotropic quadratic
    # instance there); O(Tmax) work, left out above _LOWER_TMAX
    lower = (linear_method_lower_bound(mu, L, d, n, m, eps, S, dist_sq, gap0, Tmax)
             if Tmax <= _LOWER_TMAX else math.nan)
    gap = (tuned.bound / lower - 1.0 if lower > 0 else (math.nan if math.isnan(lower)
                                                         else math.inf))
    return HeavyBallTuning(tuned, classical, paper, setting, lower_bound=lower,
                           certified_gap=max(gap, 0.0) if not math.isnan(gap) else gap,
                           momentum_note=_momentum_note_smooth(tuned), objective="error")


def _momentum_note_smooth(tuned: HeavyBallChoice) -> str:
    if tuned.beta > _GD_BETA:
        return ""
    return (f"beta = {tuned.beta:.3g}: the run with the least certified worst-case bound is "
            "plain gradient descent (momentum lowers the rate but multiplies the noise; the "
            "Lyapunov certificate finds no better trade-off here)")
