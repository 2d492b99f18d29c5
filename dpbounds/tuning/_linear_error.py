r"""Tuning any fixed-step linear momentum method by its exact worst-case error over quadratics
**[DERIVED]** (the engine of :func:`dpbounds.extend.tune` with ``objective="error"``).

The method is the family of
:func:`~dpbounds.bounds.strongly_convex.quadratic_worst_case.quadratic_worst_case`,

.. math::

    y_t=x_t+\gamma(x_t-x_{t-1}),\qquad x_{t+1}=x_t+\beta(x_t-x_{t-1})-\alpha(\nabla F(y_t)+w_t),

with :math:`w_t` the privacy noise of a run of horizon :math:`T`: per-coordinate variance
``noise_var(T)``, whatever mechanism produced it (a plug-in's own calibration). Its worst
:math:`\mathbb E[F(x_T)]-F^\ast` over quadratics with spectrum in :math:`[\mu,L]` and starts
with :math:`F(x_0)-F^\ast\le E_0` is exact (that module's derivation; every step's noise is
i.i.d. across coordinates, so only its per-coordinate variance enters); here it is minimised
over the free coefficients and :math:`T`:

* :math:`\alpha` and :math:`\beta` both free: the search of
  :func:`~dpbounds.tuning.heavy_ball.tune_heavy_ball` (``objective="error"``), unchanged
  (:func:`~dpbounds.tuning.heavy_ball.nested_worst_case_search`, every horizon by
  :func:`~dpbounds.tuning._worst_case_search.heavy_ball_worst_by_horizon`), with Polyak's and
  the paper's :math:`(\alpha,\beta)` as candidates as there; :math:`\gamma` is a constant or
  tied to :math:`\beta` (Nesterov). For heavy ball with the built-in's noise this is the
  built-in tuner's search (the bound-minimising row of the built-in is the one candidate not
  tried: there is no (25) for a plug-in);
* one of them free: a grid over the same box, then a bounded refine on the fine eigenvalue
  grid; none free: the best horizon of the declared point.

Every reported row is certified with ``quadratic_worst_case`` (``value`` attained on a
worst instance, ``upper`` within 4e-5 of it when the refinement near the maximiser
completes; the table prints its rows' own bracket). A search, not a proven optimum, but
**bracketed**
(:func:`proven_lower_bound`, **[DERIVED]**): the least worst case is at least the larger of

* the method-independent linear-MMSE and Chebyshev bound of
  :func:`~dpbounds.tuning._lmi_lower.noise_lower_bound` with :math:`\mathcal E_T=d\,
  \ell(T)`, :math:`\ell` = ``noise_var`` (every fixed-step linear momentum method, any
  :math:`\gamma`, with this noise calibration: the argument there holds at each :math:`T` on
  its own, whatever the sequence);
* for :math:`\gamma=0` (a heavy-ball form, :math:`\alpha>0`, :math:`0\le\beta<1`: the
  searched box, or the declared constants) the branch and bound of
  :func:`~dpbounds.tuning._certify_error.certify_error_minimum` over **every** heavy-ball
  :math:`(\alpha,\beta,T\le T_{\max})` with ``any_noise=True``: its steps 0-5 never use how
  the noise depends on :math:`T` except step 3, which then takes the least of the sequence
  over each horizon interval (that module's docstring). The objective it bounds is the one
  searched here: :math:`W` with :math:`\sigma=0` and :math:`\ell` = ``noise_var``. A method
  whose family is smaller (one coefficient fixed: gradient descent, :math:`\beta=0`; a fixed
  momentum or a fixed step) is bounded over **its slice** of heavy ball (the same branch and
  bound on boxes degenerate in the fixed coefficient, ``alpha=``/``beta=`` there, that
  module's *Slices*), not by the best heavy ball, whose least worst case can be far lower
  (700 times at :math:`L/\mu=10^3`): the bracket is then the search's and the certified upper
  end's (its bracket, printed), not what fixing costs.

* for Nesterov (:math:`\gamma=\beta`, both searched or one fixed; or constants with
  :math:`\gamma=\beta`) the branch and bound of
  :func:`~dpbounds.tuning._certify_nesterov.certify_nesterov_minimum` over every Nesterov
  :math:`(\alpha,\beta,T\le T_{\max})` (or the slice), ``any_noise=True``: on each
  eigenvalue Nesterov is heavy ball with momentum :math:`\beta(1-\alpha\lambda)`, so heavy
  ball's one-eigenvalue box bounds carry over (that module's docstring, **[DERIVED]**).
* for any other **constant** :math:`\gamma` (not 0, not the fixed :math:`\beta`; the tuner
  takes :math:`\gamma\ge0`) the branch and bound of
  :func:`~dpbounds.tuning._certify_momentum.certify_momentum_minimum` over every
  :math:`(\alpha,\beta,T\le T_{\max})` with :math:`0<\alpha\le4/L` (the searched box's
  end), :math:`0\le\beta<1` (or the slice), ``any_noise=True``: on each eigenvalue the method
  is heavy ball with step :math:`\alpha` and momentum :math:`\beta'=\beta-\alpha\lambda
  \gamma` (**[DERIVED]**: :math:`e_{t+1}=(1+\beta-\alpha\lambda(1+\gamma))e_t-(\beta-
  \alpha\lambda\gamma)e_{t-1}-\alpha w_t` is heavy ball's recursion at
  :math:`(\alpha,\beta')`, same start), so heavy ball's one-eigenvalue box bounds carry over
  where :math:`0\le\beta'\le1` on the box, and bounds derived there cover
  :math:`\beta'<0` and :math:`\beta'>1` (that module's docstring). The tuned row must lie in
  that family (:math:`\alpha\le4/L`) for the bound to be reported.

The tuned row is in the family each bound covers, so
``tuned.worst_case_upper / lower_bound - 1`` is a proven gap (``certified_gap``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from dpbounds._progress import progress_bar
from dpbounds.bounds.strongly_convex.heavy_ball import classical_heavy_ball_parameters
from dpbounds.bounds.strongly_convex.nesterov import nesterov_momentum
from dpbounds.bounds.strongly_convex.quadratic_worst_case import (
    CERTIFIED_REFINE,
    quadratic_worst_case,
)
from dpbounds.tuning._worst_case_search import (
    bracket_percent,
    heavy_ball_worst_by_horizon,
    worst_case_lambda_grid,
)

__all__: list[str] = []

#: the search box and eigenvalue grids of the built-in worst-case tuner (heavy_ball.py)
_ALPHA_MIN = 1e-3
_Y_MAX = math.log(1e4)
_WC_LAMBDA = 129
_WC_LAMBDA_FINE = 1025
_WC_LAMBDA_MAX = 8193
#: the method-independent lower bound is computed up to this max_horizon (as heavy_ball.py)
_LOWER_TMAX = 10**5


@dataclass(frozen=True)
class LinearChoice:
    r"""One row: the coefficients :math:`(\alpha,\beta,\gamma)`, the horizon, the noise's
    per-coordinate variance at that horizon, the worst case over quadratics (``worst_case``
    attained on an instance, ``worst_case_upper`` its certified upper end) and, where asked,
    the noise-aware Lyapunov bound over all of :math:`\mathcal S_{\mu,L}` (``lyapunov``)."""

    label: str
    alpha: float
    beta: float
    gamma: float
    horizon: int
    noise_variance: float
    worst_case: float
    worst_case_upper: float
    hyperparameters: dict[str, float] = field(default_factory=dict)
    lyapunov: float = math.nan
    instance: Any = None

    def row(self) -> dict[str, Any]:
        """JSON-able (the instance left out)."""
        # the searched hyper-parameters by their names (the horizon by the method's steps
        # name, e.g. T), then the coefficients
        out: dict[str, Any] = dict(label=self.label, **self.hyperparameters)
        out.update(alpha=self.alpha, beta=self.beta, gamma=self.gamma, horizon=self.horizon,
                   noise_variance=self.noise_variance, worst_case=self.worst_case,
                   worst_case_upper=self.worst_case_upper,
                   lyapunov=None if math.isnan(self.lyapunov) else self.lyapunov)  # not run
        return out


@dataclass(frozen=True)
class LinearErrorTuning:
    """The result of :func:`dpbounds.extend.tune` with ``objective="error"``: ``tuned`` (least
    certified worst case) and the other ``choices``; ``setting`` the problem searched,
    ``search_path`` the nested grids' progress."""

    method: str
    tuned: LinearChoice
    others: tuple[LinearChoice, ...]
    setting: dict[str, Any]
    search_path: tuple[tuple[int, float], ...] = ()
    #: proven: no choice of the method's family (module docstring) has a worst case below it
    lower_bound: float = math.nan
    #: ``tuned.worst_case_upper / lower_bound - 1`` (nan: no lower bound computed)
    certified_gap: float = math.nan
    #: which proven argument gives ``lower_bound``
    lower_bound_by: str = ""

    @property
    def choices(self) -> tuple[LinearChoice, ...]:
        return (self.tuned, *self.others)

    def rows(self) -> list[dict[str, Any]]:
        out = [c.row() for c in self.choices]
        if math.isfinite(self.certified_gap):  # the bracket, on the tuned row
            out[0].update(lower_bound=self.lower_bound, certified_gap=self.certified_gap)
        return out

    def brackets(self) -> list[float]:
        """Each shown row's ``worst_case_upper / worst_case - 1`` (the rows with a finite,
        positive worst case): what the table's footer states, rounded up."""
        return [c.worst_case_upper / c.worst_case - 1.0 for c in self.choices
                if c.worst_case > 0 and math.isfinite(c.worst_case_upper)]

    def table(self) -> str:
        # the searched hyper-parameters; the last one is the horizon, which has its column
        names = [n for n in list(self.tuned.hyperparameters)[:-1]
                 if n not in ("alpha", "beta", "gamma")]  # those have their own columns
        show_ly = any(not math.isnan(c.lyapunov) for c in self.choices)
        head = (f"{'choice':<28}" + "".join(f"{n:>11}" for n in names)
                + f"{'alpha':>11}{'beta':>9}{'gamma':>8}{'T':>7}{'worst case':>13}"
                + f"{'upper':>12}" + (f"{'Lyapunov':>12}" if show_ly else ""))
        lines = [f"{self.method}: tuned by the worst-case E[F(x_T)] - F* of its run over "
                 "quadratics (spectrum in [mu, L], F(x0) - F* <= R, the noise it calibrates)",
                 head, "-" * len(head)]
        for c in self.choices:
            hp = "".join(f"{c.hyperparameters.get(n, math.nan):>11.4g}" for n in names)
            ly = "-" if math.isnan(c.lyapunov) else f"{c.lyapunov:.4e}"
            lines.append(f"{c.label:<28}{hp}{c.alpha:>11.4g}{c.beta:>9.4f}{c.gamma:>8.3g}"
                         f"{c.horizon:>7d}{c.worst_case:>13.4e}{c.worst_case_upper:>12.4e}"
                         + (f"{ly:>12}" if show_ly else ""))
        lines.append("worst case = exact E[F(x_T)] - F* on the worst quadratic found (attained; "
                     "upper: certified sup, within "
                     f"{bracket_percent(self.brackets())} of attained on these rows) "
                     "[DERIVED, quadratic_worst_case]; a search, not a proven optimum")
        if math.isfinite(self.certified_gap):
            lines.append(f"optimum bracketed (proven): no {self.lower_bound_by} has a "
                         f"worst-case error below {self.lower_bound:.4g}; tuned is within "
                         + (f"{100 * self.certified_gap:.3g}% of the best" if
                            self.certified_gap < 1 else
                            f"a factor {1 + self.certified_gap:.4g} of the best") + " [DERIVED]")
        else:
            lines.append("optimum not bracketed (no proven lower bound computed)")
        if self.tuned.horizon >= int(self.setting.get("max_horizon", 0)) > 0:
            lines.append(f"note: the tuned T is the largest searched (max_horizon = "
                         f"{self.setting['max_horizon']}): a longer run may do better")
        if show_ly:
            lines.append("Lyapunov = the noise-aware Lyapunov bound over all smooth strongly "
                         "convex F (any T; vacuous when above R) [DERIVED, "
                         "dpbounds.pep.lyapunov]")
        return "\n".join(lines)


def worst_case_row(label: str, mu: float, L: float, d: int, *, alpha: float, beta: float,
                   gamma: float, horizon: int, noise_variance: float,
                   initial_gap: float) -> LinearChoice:
    """The row of a given point and horizon (a theorem's own choice): its certified worst
    case (``inf`` where unstable or overflowing)."""
    try:
        wc = quadratic_worst_case(mu, L, d, alpha=alpha, beta=beta, gamma=gamma,
                                  steps=horizon, laplace_var=noise_variance,
                                  sampling_var=0.0, initial_gap=initial_gap,
                                  refine=CERTIFIED_REFINE)
    except ValueError:  # overflow: an unstable point
        return LinearChoice(label + " [unstable]", alpha, beta, gamma, horizon,
                            noise_variance, math.inf, math.inf)
    return LinearChoice(label, alpha, beta, gamma, horizon, noise_variance, float(wc.value),
                        float(max(wc.upper, wc.value)), instance=wc)


def tune_linear_error(mu: float, L: float, d: int, *, noise_var: Callable[[Any], Any],
                      initial_gap: float, alpha: float | None, beta: float | None,
                      gamma: float | str, max_horizon: int, grid: int,
                      epsilon: float = math.nan, progress: bool = False
                      ) -> tuple[LinearChoice, list[LinearChoice], list[tuple[int, float]]]:
    r"""``(tuned, other rows, search path)`` of the fixed-step method (module docstring).

    ``alpha``/``beta``: the fixed coefficient, or ``None`` where it is searched; ``gamma`` a
    number or ``"beta"`` (tied to :math:`\beta`); ``noise_var(T)`` the per-coordinate noise
    variance of a run of horizon ``T`` (arrays in, arrays out)."""
    from dpbounds.tuning.heavy_ball import grid_point_rows, nested_worst_case_search, wc_grid_family

    heavy = gamma != "beta" and float(gamma) == 0.0
    gap0 = float(initial_gap)
    lam = worst_case_lambda_grid(mu, L, _WC_LAMBDA)
    lam_cert = worst_case_lambda_grid(mu, L, _WC_LAMBDA_MAX)

    def gam(b: np.ndarray) -> np.ndarray | None:
        if heavy:
            return None  # the built-in heavy ball's own recursion, bit for bit
        return np.asarray(b, dtype=float) if gamma == "beta" else np.full(np.shape(b),
                                                                           float(gamma))

    def search(a: Any, b: Any, grid_: np.ndarray = lam) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        return heavy_ball_worst_by_horizon(a, b, grid_, d=d, Tmax=max_horizon,
                                           laplace_var=noise_var, sampling_var=0.0,
                                           initial_gap=gap0, dist_sq=None, gamma=gam(b))

    def evaluate(a: Any, b: Any) -> np.ndarray:
        return search(a, b)[1]

    def row(label: str, a: float, b: float) -> LinearChoice:
        Ts, vals = search(np.array([a]), np.array([b]), lam_cert)
        g = float(b) if gamma == "beta" else float(gamma)
        if not np.isfinite(vals[0]):
            return LinearChoice(label + " [unstable]", float(a), float(b), g, 0, math.nan,
                                math.inf, math.inf)
        T = int(Ts[0])
        var = float(np.asarray(noise_var(np.array([T])), dtype=float)[0])
        wc = quadratic_worst_case(mu, L, d, alpha=a, beta=b, gamma=g, steps=T,
                                  laplace_var=var, sampling_var=0.0, initial_gap=gap0,
                                  refine=CERTIFIED_REFINE)
        return LinearChoice(label, float(a), float(b), g, T, var, float(wc.value),
                            float(max(wc.upper, wc.value)), instance=wc)

    label = "tuned by worst-case error"
    x_range, y_range = (math.log(_ALPHA_MIN / L), math.log(4.0 / L)), (0.0, _Y_MAX)
    others: list[LinearChoice] = []
    path: list[tuple[int, float]] = []
    if alpha is None and beta is None:
        members = wc_grid_family(grid)
        bar = progress_bar(progress, total=len(members), desc="worst case: nested grids",
                           lines=True)  # minutes at max_horizon 1000: lines in a pipe too
        certified: dict[tuple[float, float], LinearChoice] = {}
        certify = grid_point_rows(row, label, certified)
        # epsilon is only named by the search's message when every point overflows
        tuned, path = nested_worst_case_search(members, search, evaluate, certify, mu, L,
                                               x_range, y_range, epsilon, bar)
        bar.close()
        a_c, b_c = classical_heavy_ball_parameters(mu, L)
        a_p = 1.0 / L
        others = [row("Polyak (best T)", a_c, b_c),
                  row("paper Sec.5 (best T)", a_p, float(nesterov_momentum(a_p, mu)))]
        for c in others:  # never worse than a choice it is compared with (as the built-in)
            if c.worst_case < tuned.worst_case:
                tuned = replace(c, label=label)
        return tuned, others, path
    if alpha is None or beta is None:  # one coordinate: a grid, then a bounded refine
        free_alpha = alpha is None
        lo, hi = x_range if free_alpha else y_range

        def point(z: Any) -> tuple[np.ndarray, np.ndarray]:
            z = np.atleast_1d(np.asarray(z, dtype=float))
            if free_alpha:
                return np.exp(z), np.full(z.shape, float(beta))  # type: ignore[arg-type]
            return np.full(z.shape, float(alpha)), -np.expm1(-z)  # type: ignore[arg-type]

        g_pts = 2 * max(wc_grid_family(grid)) + 1
        zs = np.linspace(lo, hi, g_pts)
        vals = evaluate(*point(zs))
        if not np.any(np.isfinite(vals)):
            raise ValueError("no searched coefficient gives a stable method with a finite "
                             "worst case on [mu, L]")
        i = int(np.argmin(vals))
        lam_fine = worst_case_lambda_grid(mu, L, _WC_LAMBDA_FINE)

        def fine(z: float) -> float:
            v = float(search(*point(z), lam_fine)[1][0])
            return math.log(v) if math.isfinite(v) and v > 0 else 1e300

        ref = minimize_scalar(fine, bounds=(zs[max(i - 1, 0)], zs[min(i + 1, g_pts - 1)]),
                              method="bounded", options={"xatol": 1e-7})
        cands = [row(label, *(float(v[0]) for v in point(z))) for z in (zs[i], float(ref.x))]
        tuned = min(cands, key=lambda c: c.worst_case_upper)
        path = [(g_pts, tuned.worst_case_upper)]
        return tuned, others, path
    tuned = row(label, float(alpha), float(beta))
    if not math.isfinite(tuned.worst_case):
        raise ValueError(f"the declared point alpha={alpha:g}, beta={beta:g}, gamma={gamma} is "
                         "unstable on [mu, L] (or its worst case overflows): nothing to tune")
    return tuned, others, path


def proven_lower_bound(mu: float, L: float, d: int, *, noise_var: Callable[[Any], Any],
                       initial_gap: float, max_horizon: int, heavy: bool, best: float,
                       alpha: float | None = None, beta: float | None = None,
                       attained: float | None = None, nesterov: bool = False,
                       near: int | None = None,
                       gamma: float | None = None) -> tuple[float, str]:
    r"""``(lower, by)``: the larger of the proven lower bounds of the module docstring of the
    least worst case over the method's family (``heavy``: :math:`\gamma=0`,
    :math:`\alpha>0`, :math:`0\le\beta<1`), never above ``best`` (the tuned row's
    certified upper end); ``(nan, "")`` when neither is computed (``max_horizon`` above
    their limits).

    ``alpha`` / ``beta``: the coefficient the family fixes (``heavy`` only; e.g. gradient
    descent, ``beta=0``): the branch and bound is run over that **slice** of heavy ball
    instead of all of it (a valid lower bound of the family's least worst case, which is
    usually far above heavy ball's), with ``attained`` (the tuned row's attained worst case;
    default ``best``) as its incumbent: the result is a lower bound whatever the incumbent
    (it only sets where cutting stops, and caps the result).

    ``nesterov``: the family is Nesterov's (:math:`\gamma=\beta`, :math:`\alpha>0`,
    :math:`0\le\beta<1`, or its slice with ``alpha`` or ``beta`` fixed): the branch and bound
    of :func:`~dpbounds.tuning._certify_nesterov.certify_nesterov_minimum` over it, with
    ``attained`` as its incumbent.

    ``near``: the tuned row's horizon; heavy ball's branch and bound takes single horizons
    around it (a finer partition: a tighter bound, same validity).

    ``gamma``: the family's constant :math:`\gamma` (not 0, not the fixed :math:`\beta`;
    neither ``heavy`` nor ``nesterov``): the branch and bound of
    :func:`~dpbounds.tuning._certify_momentum.certify_momentum_minimum` over every
    :math:`0<\alpha\le4/L`, :math:`0\le\beta<1` (the tuner's box, or its slice with
    ``alpha`` or ``beta`` fixed), with ``attained`` as its incumbent; the caller checks that
    the tuned row lies in that family."""
    from dpbounds.tuning._certify_error import MAX_CERT_HORIZON, certify_error_minimum
    from dpbounds.tuning._certify_momentum import ALPHA_L_MAX, certify_momentum_minimum
    from dpbounds.tuning._lmi_lower import noise_lower_bound

    gap0 = float(initial_gap)
    lower, by = math.nan, ""
    if max_horizon <= _LOWER_TMAX:
        # F(x0) - F* <= R: the instance's start has ||x0 - x*||^2 = 2 R / lambda <= 2 R / mu
        lower = noise_lower_bound(mu, L, 2.0 * gap0 / mu, gap0, max_horizon,
                                  lambda T: d * np.asarray(noise_var(T), dtype=float))
        by = (f"linear method (any (alpha, beta, gamma), T <= {max_horizon}) with this noise "
              "calibration (linear-MMSE and Chebyshev bounds)")
    sliced = heavy and (alpha is not None or beta is not None)
    if heavy and max_horizon <= MAX_CERT_HORIZON and math.isfinite(best):
        inc = best if attained is None or not math.isfinite(attained) else min(attained, best)
        hb = certify_error_minimum(mu, L, d, max_horizon, noise_var, 0.0,
                                   best=inc if sliced else best, initial_gap=gap0,
                                   any_noise=True, alpha=alpha if sliced else None,
                                   beta=beta if sliced else None, near=near).lower
        if not hb <= lower:  # also when the other is nan
            if sliced:
                fam = ("gradient descent (beta = 0, " if alpha is None and beta == 0.0
                       else "heavy ball with " + ", ".join(
                           f"{k} = {v:.6g}" for k, v in (("alpha", alpha), ("beta", beta))
                           if v is not None) + " (")
                free = "".join(f"{k}, " for k, v in (("alpha > 0", alpha),
                                                     ("0 <= beta < 1", beta)) if v is None)
                lower, by = hb, (f"{fam}{free}T <= {max_horizon}) with this noise "
                                 "calibration (branch and bound over that slice)")
            else:
                lower, by = hb, (f"heavy ball (alpha > 0, 0 <= beta < 1, T <= {max_horizon}) "
                                 "with this noise calibration (branch and bound)")
    if nesterov and not heavy and max_horizon <= MAX_CERT_HORIZON and math.isfinite(best):
        from dpbounds.tuning._certify_nesterov import certify_nesterov_minimum

        inc = best if attained is None or not math.isfinite(attained) else min(attained, best)
        nag = certify_nesterov_minimum(mu, L, d, max_horizon, noise_var, 0.0, best=inc,
                                       initial_gap=gap0, any_noise=True, alpha=alpha,
                                       beta=beta).lower
        if not nag <= lower:
            fixed = "".join(f", {k} = {v:.6g}" for k, v in (("alpha", alpha), ("beta", beta))
                            if v is not None)
            free = "".join(f"{k}, " for k, v in (("alpha > 0", alpha), ("0 <= beta < 1", beta))
                           if v is None)
            lower, by = nag, (f"Nesterov (gamma = beta{fixed}; {free}T <= {max_horizon}) with "
                              "this noise calibration (branch and bound)")
    if (gamma is not None and not heavy and not nesterov and max_horizon <= MAX_CERT_HORIZON
            and math.isfinite(best) and (alpha is None or alpha <= ALPHA_L_MAX / L)):
        inc = best if attained is None or not math.isfinite(attained) else min(attained, best)
        mom = certify_momentum_minimum(mu, L, d, max_horizon, noise_var, 0.0, gamma=gamma,
                                       best=inc, initial_gap=gap0, any_noise=True, alpha=alpha,
                                       beta=beta).lower
        if not mom <= lower:
            fixed = "".join(f", {k} = {v:.6g}" for k, v in (("alpha", alpha), ("beta", beta))
                            if v is not None)
            free = "".join(f"{k}, " for k, v in (("0 < alpha <= 4/L", alpha),
                                                 ("0 <= beta < 1", beta)) if v is None)
            lower, by = mom, (f"linear momentum with gamma = {gamma:.6g}{fixed} ({free}"
                              f"T <= {max_horizon}) with this noise calibration (branch and "
                              "bound)")
    if math.isfinite(best) and lower > best:
        lower = best
    return lower, by
