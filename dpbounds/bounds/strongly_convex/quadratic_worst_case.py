r"""The exact worst case of a noisy linear momentum method over quadratics **[DERIVED]**.

What a researcher who tunes a method wants to know is not a bound but the error of the run:
the largest :math:`\mathbb E[F(x_T)]-F^\ast` the method as run can reach on the problem class
it is given, from any admissible start, with its noise as calibrated. On quadratics this is
computable exactly (up to a certified bracket of a few per cent), for every method of the
family below; :func:`quadratic_worst_case` does it.

**The class.** :math:`F(x)=\tfrac12(x-x^\ast)^\top H(x-x^\ast)` in :math:`\mathbb R^d` with
the spectrum of :math:`H` in :math:`[\mu,L]`; starts with :math:`F(x_0)-F^\ast\le E_0`
(``initial_gap``) or :math:`\lVert x_0-x^\ast\rVert^2\le D` (``initial_distance_sq``).

**The method** (steps :math:`t=0,\dots,T-1`, :math:`x_{-1}=x_0`):

.. math::

    y_t=x_t+\gamma_t(x_t-x_{t-1}),\qquad
    x_{t+1}=x_t+\beta_t(x_t-x_{t-1})-\alpha_t\big(\nabla F(y_t)+w_t\big);

gradient descent is :math:`\beta=\gamma=0`, heavy ball :math:`\gamma=0`, Nesterov
:math:`\gamma=\beta` (DP-NAG, and DP-MASG stage by stage with its restarts written as
:math:`\beta_t=\gamma_t=0` at a stage's first step).

**The noise.** :math:`w_t` has mean 0 and is independent across steps and of :math:`x_0`; it
has two parts. The privacy noise has variance ``laplace_var[t]`` in every coordinate, i.i.d.
(Laplace of scale :math:`b_t`: :math:`2b_t^2`; its covariance :math:`2b_t^2I` is the same in
every basis). The sampling error of a batch mean has covariance :math:`c_t\Sigma_y`, with
:math:`\Sigma_y` the data's population covariance, fixed over the run, and
:math:`\operatorname{tr}(c_t\Sigma_y)\le` ``sampling_var[t]`` (for quadratic ERM the samples'
gradients differ by constants, so this error does not depend on :math:`x`).

**Derivation.** In the eigenbasis of :math:`H` each coordinate :math:`i` (eigenvalue
:math:`\lambda_i`) runs its own scalar recursion

.. math::

    e_{t+1}=a_t(\lambda)e_t-b_t(\lambda)e_{t-1}-\alpha_tw_{t,i},\quad
    a_t=1+\beta_t-\alpha_t\lambda(1+\gamma_t),\ b_t=\beta_t-\alpha_t\lambda\gamma_t,

so with :math:`p_T(\lambda)` the noiseless response to :math:`e_{-1}=e_0=1` and
:math:`h_{T,t}(\lambda)` the response at :math:`T` to a unit input at step :math:`t`,

.. math::

    \mathbb E[F(x_T)]-F^\ast=\sum_i\frac{\lambda_i}2\Big(p_T(\lambda_i)^2e_{0,i}^2
    +\sum_t\alpha_t^2h_{T,t}(\lambda_i)^2\big(\ell_t+c_t s_i\big)\Big),

:math:`\ell_t` = ``laplace_var[t]``, :math:`s_i` the diagonal of :math:`\Sigma_y` in the
eigenbasis. This is linear in the start's squares (a simplex: :math:`\sum_i\lambda_ie_{0,i}^2/2
\le E_0`) and in :math:`s` (:math:`\sum_is_i` bounded), so the worst start and the worst data
each put everything into **one** coordinate, and every eigenvalue is chosen on its own. With
:math:`A(\lambda)=E_0p_T^2` (or :math:`D\lambda p_T^2/2`),
:math:`G(\lambda)=\frac\lambda2\sum_t\alpha_t^2h_{T,t}^2\ell_t` and :math:`S(\lambda)` the same
with ``sampling_var``, the worst case is, for :math:`d\ge2`,

.. math::

    \max\Big(\max_\lambda[A+S+G]+(d-1)\max_\lambda G,\;
    \max_\lambda[A+G]+\max_\lambda[S+G]+(d-2)\max_\lambda G\Big)

(start and data in one coordinate, or in two), and :math:`\max_\lambda[A+S+G]` for
:math:`d=1`. For ``objective="distance"`` (:math:`\mathbb E\lVert x_T-x^\ast\rVert^2`) the
weights :math:`\lambda/2` are 1.

**Certified maximisation over** :math:`\lambda`. Each of :math:`A,G,S,A+G,\dots` is a
nonnegative polynomial in :math:`\lambda` of degree :math:`n\le2T+1` (except the start term
of ``objective="distance"`` from ``initial_gap``, :math:`2E_0p_T^2/\lambda`, which ``upper``
majorises by the polynomial :math:`2E_0p_T^2c(\lambda)`, :math:`c` the chord of
:math:`1/\lambda` over :math:`[\mu,L]`). On the grid
:math:`\lambda_k=\frac{L+\mu}2+\frac{L-\mu}2\cos\frac{k\pi}N` (:math:`k=0..N`),
:math:`q(\theta)=P(\frac{L+\mu}2+\frac{L-\mu}2\cos\theta)` is a trigonometric polynomial of
degree :math:`n`; at its maximum :math:`q'=0`, Bernstein's inequality gives
:math:`|q''|\le n^2\max q`, and a grid point lies within :math:`\pi/(2N)`, so

.. math::

    \max_{[\mu,L]}P\le\frac{\max_kP(\lambda_k)}{1-(n\pi/N)^2/8}.

The grid maximum is **attained** (by the instance in :attr:`QuadraticWorstCase.instance`),
so ``value <= worst case <= upper``; with the default ``N = 8n`` the bracket is
:math:`1/(1-\pi^2/512)-1<2\%`.

**Refinement near the maximiser** (``refine=r``, a power of 2) **[DERIVED]**. Write
:math:`h=\pi/N`, :math:`x=(nh)^2/8` (:math:`x<1`), :math:`M=\max q`, :math:`m=\min q`.
*A sharper curvature constant (centred Bernstein).* Bernstein's inequality holds for
:math:`q-c` for any constant :math:`c` (a trigonometric polynomial of the same degree and the
same derivatives), so :math:`|q''|\le n^2K` with :math:`K=\lVert q-c\rVert_\infty`:
:math:`c=M/2` gives :math:`K=M/2` (:math:`q\ge0`), and :math:`c=(M+m)/2` gives
:math:`K=(M-m)/2`. At the minimiser too :math:`q'=0` (:math:`q` is even and
:math:`2\pi`-periodic, so also at :math:`\theta=0,\pi`), hence with :math:`M_e,m_e` the
grid's largest and smallest values :math:`M\le M_e+xK` and :math:`m\ge m_e-xK`; so
:math:`M-m\le(M_e-m_e)/(1-x)`, and :math:`M\le M_e+xM/2` gives :math:`M\le M_e/(1-x/2)`:

.. math::

    K\le\min\Big(\frac{M_e}{2-x},\ \frac{M_e-m_e}{2(1-x)}\Big),

never above the plain :math:`M\le M_e/(1-x)` argument's :math:`K=M`, and far below it where
:math:`q` is nearly flat (the privacy-noise term of a long gradient-descent run varies by a
few per cent over :math:`[\mu,L]`: with :math:`K=M`, nearly every grid point was a candidate
below and the refinement did not fit its budget, leaving the grid's 2%). *The recursion.*
Taylor at the maximiser :math:`\theta^*` (:math:`q'(\theta^*)=0`) gives
:math:`q(\theta)\ge M-n^2K(\theta-\theta^*)^2/2`. Suppose (true of the grid, level 0) that
the points evaluated so far include one within :math:`s/2` of :math:`\theta^*`, all on the
lattice of spacing :math:`s`, and let :math:`x_s=(ns)^2/8` and :math:`M_e` the largest value
evaluated. That point has :math:`q\ge M-x_sK\ge M_e-x_sK`, so it is one of the
**candidates** :math:`\{\theta_k:q(\theta_k)\ge M_e-x_sK\}`; evaluating
:math:`\theta_k+js/f` (:math:`0<|j|\le f/2`, :math:`f` even) for every candidate puts a
point within :math:`s/(2f)` of :math:`\theta^*` (the nearest of :math:`\theta_k+js/f`,
:math:`|j|\le f/2`), on the lattice of spacing :math:`s/f`: the same statement with
:math:`s/f`. When the spacing has come down to :math:`h/r`, :math:`M\le M_e+(x/r^2)K`
(levels of :math:`f=4`, one pass of the recursion each). It is done for each polynomial
the worst case combines (:math:`A+S+G`, :math:`G` and, for :math:`d\ge2`, :math:`A+G`,
:math:`S+G`; the start majorant where :math:`A` is not a polynomial), each with its own
:math:`K` (from the level-0 grid) and candidates: every maximum is bounded on its own, and the
worst case is a sum of such maxima with nonnegative weights, so the same combination of the
bounded maxima is an upper end. The attained value is taken over every point evaluated (each
an admissible instance). With :math:`r=16` and the default grid the bracket is at most
:math:`x/(256(2-x))<4\cdot10^{-5}` (was 2%) when every level completes; the candidates are
the few points per peak within :math:`x_sK` of the maximum, and a level whose points would
bring the total beyond :math:`\max(N,4096)` is not run (the last completed level's
:math:`x_s` stands: the bracket is then wider, and :attr:`QuadraticWorstCase.bracket` and the
tuners' tables say by how much); with :math:`\mu=L` the one eigenvalue is the whole spectrum and
``upper`` is the value. Both ends are evaluated in float64 (the recursion is stable
for the stable methods tuned here; its rounding is far below the bracket).

Example
-------
>>> wc = quadratic_worst_case(0.5, 1.0, 2, alpha=1.0, beta=0.0, steps=10,
...                           laplace_var=0.0, sampling_var=0.0, initial_gap=1.0)
>>> f"{wc.value:.4g}", wc.value <= wc.upper   # GD, step 1/L: (1 - mu/L)^20 at lambda = mu
('9.537e-07', True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.provenance import KURU, Provenance, Source

__all__ = ["QuadraticWorstCase", "SOURCE_QUADRATIC_WORST_CASE", "quadratic_worst_case",
           "worst_case_grid_factor"]

SOURCE_QUADRATIC_WORST_CASE = Source(
    KURU, "heavy ball / DP-NAG / DP-MASG on quadratics, noise model (20)-(21)",
    Provenance.DERIVED,
    "exact worst case over spectra in [mu, L], admissible starts and data (this module's "
    "derivation); the maximisation over lambda certified by Bernstein's inequality")

#: grid points per unit of polynomial degree (N = 8 n: bracket below 2%)
DEFAULT_OVERSAMPLING = 8
#: the largest grid evaluated in one certification (memory ~ 20 floats per point)
MAX_GRID = 400_000
#: steps x grid points of one certification (~1 CPU-minute): beyond it the grid shrinks and
#: the bracket widens (``upper`` is ``inf`` when the grid is too coarse to certify anything)
MAX_WORK = 2 * 10**9
#: the refinement the tuners ask for (``refine``: bracket below 4e-5 instead of 2% when its
#: levels complete within their budget; ``QuadraticWorstCase.bracket`` says what it is)
CERTIFIED_REFINE = 16
_REFINE_MIN_BUDGET = 4096  # fine points allowed even when the grid is smaller (short runs)
_REFINE_PER_LEVEL = 4  # each level divides the spacing by this (one pass of the recursion)
#: the longest run (one Python step per iteration; the tuners' own cap, MAX_HORIZON)
MAX_STEPS = 10**7


def worst_case_grid_factor(degree: int, points: int) -> float:
    r""":math:`1/(1-(n\pi/N)^2/8)`: how far the maximum of a nonnegative polynomial of degree
    :math:`n` on :math:`[\mu,L]` can lie above its maximum on the :math:`N+1` Chebyshev-Lobatto
    points (``inf`` when :math:`N` is too small to say anything)."""
    x = (degree * math.pi / points) ** 2 / 8.0
    return 1.0 / (1.0 - x) if x < 1.0 else math.inf


@dataclass(frozen=True)
class QuadraticWorstCase:
    """The worst case of :func:`quadratic_worst_case`: attained ``value`` <= sup <= ``upper``.

    ``instance`` is a worst admissible quadratic found: ``start_eigenvalue`` holds the whole
    start, ``sampling_eigenvalue`` the data's whole sampling variance, and the other
    ``d - 1`` or ``d - 2`` coordinates have ``noise_eigenvalue`` (the curvature where the
    privacy noise costs most). ``value`` is that instance's exact error.
    """

    value: float
    upper: float
    start_eigenvalue: float
    sampling_eigenvalue: float
    noise_eigenvalue: float
    same_coordinate: bool
    degree: int
    grid_points: int
    source: Source = SOURCE_QUADRATIC_WORST_CASE

    @property
    def bracket(self) -> float:
        """``upper / value - 1``: the certified relative width (0 when both are 0)."""
        if self.value > 0:
            return self.upper / self.value - 1.0
        return 0.0 if self.upper == 0 else math.inf

    def instance(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of the worst instance (coordinate 0: the start; the sampling
        variance in coordinate 0 if ``same_coordinate`` else 1)."""
        d = check_int("d", d, minimum=1)
        lam = np.full(d, self.noise_eigenvalue)
        lam[0] = self.start_eigenvalue
        if d >= 2 and not self.same_coordinate:
            lam[1] = self.sampling_eigenvalue
        return lam


def _per_step(name: str, value: Any, T: int, *, lower: float = 0.0,
              allow_inf: bool = False) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(T, float(arr))
    if arr.shape != (T,):
        raise ValueError(f"{name} must be a number or have one entry per step ({T}), got shape "
                         f"{arr.shape}")
    ok = ~np.isnan(arr) & (arr < np.inf if not allow_inf else True)
    if not np.all(ok) or np.any(arr < lower):
        what = "not nan" if allow_inf else "finite"
        raise ValueError(f"{name} must be {what} and >= {lower:g} at every step")
    return arr


def _steps_of(steps: int | None, **values: Any) -> int:
    sizes = {k: np.asarray(v).size for k, v in values.items() if np.ndim(v) == 1}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"the per-step arrays have different lengths: {sizes}")
    if steps is None:
        if not sizes:
            raise ValueError("steps must be given when every parameter is a number")
        return check_int("steps", next(iter(sizes.values())), minimum=1, maximum=MAX_STEPS)
    steps = check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    for k, size in sizes.items():
        if size != steps:
            raise ValueError(f"{k} has {size} entries, but steps={steps}")
    return steps


def quadratic_worst_case(
    mu: float, L: float, d: int, *, alpha: Any, beta: Any = 0.0, gamma: Any = 0.0,
    laplace_var: Any, sampling_var: Any = 0.0, steps: int | None = None,
    initial_gap: float | None = None, initial_distance_sq: float | None = None,
    objective: str = "function_value", oversampling: int = DEFAULT_OVERSAMPLING,
    refine: int = 1, progress: bool | None = False,
) -> QuadraticWorstCase:
    r"""The exact worst case of the noisy method over quadratics (module docstring) **[DERIVED]**.

    Parameters
    ----------
    mu : float
        The spectrum's lower end, :math:`0<\mu\le L`.
    L : float
        The spectrum's upper end.
    d : int
        Dimension.
    alpha :
        Step size: a number, or one entry per step.
    beta :
        Momentum: a number, or one entry per step.
    gamma :
        Look-ahead (0: heavy ball; ``beta``: Nesterov): a number, or one entry per step.
    laplace_var :
        Privacy-noise variance per coordinate at each step (Laplace: :math:`2b_t^2`).
    sampling_var :
        Bound on the trace of the sampling error's covariance at each step (all of it may lie
        in one direction).
    steps : int, optional
        :math:`T`; needed when every parameter is a number.
    initial_gap : float, optional
        :math:`F(x_0)-F^\ast\le E_0` (exactly one of this and ``initial_distance_sq``).
    initial_distance_sq : float, optional
        :math:`\lVert x_0-x^\ast\rVert^2\le D`.
    objective : {"function_value", "distance"}
        :math:`\mathbb E[F(x_T)]-F^\ast` or :math:`\mathbb E\lVert x_T-x^\ast\rVert^2`.
    oversampling : int
        Grid points per unit of degree (bracket :math:`1/(1-(\pi/o)^2/8)-1`; 8: under 2%). The
        grid is capped at :data:`MAX_GRID` points (a wider bracket for very long runs).
    refine : int
        1 (default): the grid alone. A power of 2, ``r``: the grid halved ``log2 r`` times
        around the points that can lie next to a maximiser (module docstring, *Refinement*):
        the bracket shrinks by ``r^2`` (the tuners use :data:`CERTIFIED_REFINE`).
    progress : bool or None
        A bar over the recursion's steps (:func:`~dpbounds._progress.progress_bar`: ``None``
        or ``True`` on a terminal, after its delay; default ``False``, for the tuners' many
        short calls). A pass over the grid costs ~1 ms a step at 160,000 points.

    Returns
    -------
    QuadraticWorstCase
        ``value`` (attained on ``instance``) <= the worst case <= ``upper``.
    """
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    d = check_int("d", d, minimum=1)
    T = _steps_of(steps, alpha=alpha, beta=beta, gamma=gamma, laplace_var=laplace_var,
                  sampling_var=sampling_var)
    a_t = _per_step("alpha", alpha, T)
    b_t = _per_step("beta", beta, T)
    g_t = _per_step("gamma", gamma, T)
    if np.any(a_t <= 0):
        raise ValueError("alpha must be > 0 at every step")
    # +inf: a step with no privacy budget (its noise is harmless only where the dynamics
    # annihilate it exactly, e.g. mu = L with alpha = 1/L; elsewhere the worst case is inf)
    lap = _per_step("laplace_var", laplace_var, T, allow_inf=True)
    smp = _per_step("sampling_var", sampling_var, T)
    if (initial_gap is None) == (initial_distance_sq is None):
        raise ValueError("give exactly one of initial_gap or initial_distance_sq")
    if objective not in ("function_value", "distance"):
        raise ValueError(f"objective must be 'function_value' or 'distance', got {objective!r}")
    oversampling = check_int("oversampling", oversampling, minimum=2)
    refine = check_int("refine", refine, minimum=1)
    if refine & (refine - 1):
        raise ValueError(f"refine must be a power of 2 (1: no refinement), got {refine}")
    degree = 2 * T + 1
    # bounded work: a long run gets a coarser grid (a wider, still certified bracket) rather
    # than hours of CPU
    N = int(max(min(oversampling * degree, MAX_GRID, MAX_WORK // max(T, 1)), 16))
    lam = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(np.arange(N + 1) * math.pi / N)
    lam[0], lam[-1] = L, mu  # exact ends
    P, G, S = _responses(lam, a_t, b_t, g_t, lap, smp, progress)
    weight = 0.5 * lam if objective == "function_value" else np.ones_like(lam)
    A_poly = None  # a polynomial majorant of A where A is not a polynomial
    if initial_gap is not None:
        E0 = float(check_nonnegative("initial_gap", initial_gap))
        # F(x0) - F* = lambda e0^2 / 2 <= E0 in the start's coordinate
        if objective == "function_value":
            A = E0 * P
        else:  # 2 E0 p^2 / lambda is rational: certified through the chord of 1/lambda,
            # a line above the convex 1/lambda on [mu, L] (review of the Bernstein step)
            A = np.divide(2.0 * E0 * P, lam)
            chord = 1.0 / mu + (1.0 / L - 1.0 / mu) * (lam - mu) / (L - mu) if L > mu else 1 / lam
            A_poly = 2.0 * E0 * P * chord
    else:
        D = float(check_nonnegative("initial_distance_sq", initial_distance_sq))
        A = D * weight * P
    G, S = weight * G, weight * S
    factor = worst_case_grid_factor(degree, N)
    if refine > 1 and L == mu:
        factor = 1.0  # one eigenvalue: the grid is the whole spectrum, the value exact
    spread: list[float] | None = None  # per combined polynomial: its K (centred Bernstein)
    if refine > 1 and L > mu and math.isfinite(factor):
        x = 1.0 - 1.0 / factor  # (n pi / N)^2 / 8 of the grid
        spread = _spreads(A if A_poly is None else A_poly, S, G, d, x)
        idx = np.arange(N + 1) * refine  # points on the lattice of angles pi / (N refine)
        spent, step = 0, refine
        while step > 1:
            per = min(_REFINE_PER_LEVEL, step)
            fine = _refinement_points(A if A_poly is None else A_poly, S, G, d, idx, x, step,
                                      per, spread)
            spent += fine.size
            if spent > max(N, _REFINE_MIN_BUDGET):
                break  # the level is not completed: the last completed one's factor stands
            lam_f = 0.5 * (L + mu) + 0.5 * (L - mu) * np.cos(fine * (math.pi / (N * refine)))
            P_f, G_f, S_f = _responses(lam_f, a_t, b_t, g_t, lap, smp, progress)
            w_f = 0.5 * lam_f if objective == "function_value" else np.ones_like(lam_f)
            if initial_gap is not None and objective != "function_value":
                A_f = np.divide(2.0 * E0 * P_f, lam_f)
                chord_f = 1.0 / mu + (1.0 / L - 1.0 / mu) * (lam_f - mu) / (L - mu)
                A_poly = np.concatenate([A_poly, 2.0 * E0 * P_f * chord_f])
            elif initial_gap is not None:
                A_f = E0 * P_f
            else:
                A_f = D * w_f * P_f
            idx, lam = np.concatenate([idx, fine]), np.concatenate([lam, lam_f])
            A = np.concatenate([A, A_f])
            G, S = np.concatenate([G, w_f * G_f]), np.concatenate([S, w_f * S_f])
            step //= per
            x /= per * per
        factor = 1.0 / (1.0 - x)
    value, i, j, together, jG = _combine(A, S, G, d)
    if not math.isfinite(value):
        raise ValueError("the worst case overflows float64 at these inputs (an unstable method "
                         "or too much noise)")
    if spread is not None:  # each maximum + x K (refined lattice's x), combined
        upper = _combine_upper(A if A_poly is None else A_poly, S, G, d, 1.0 - 1.0 / factor,
                               spread)
    else:
        base = value if A_poly is None else _combine(A_poly, S, G, d)[0]
        # an infinite factor (a grid too coarse to certify anything) leaves no upper end, also
        # where the value underflows to 0 (0 * inf was NaN: `rate hb ... --steps 100000`)
        upper = base * factor if math.isfinite(factor) else math.inf
    return QuadraticWorstCase(value=value, upper=max(upper, value),
                              start_eigenvalue=float(lam[i]), sampling_eigenvalue=float(lam[j]),
                              noise_eigenvalue=float(lam[jG]), same_coordinate=together,
                              degree=degree, grid_points=N + 1)


def _polys(A: np.ndarray, S: np.ndarray, G: np.ndarray, d: int) -> list[np.ndarray]:
    """The polynomials the worst case combines (module docstring): A+S+G, G (and, d >= 2,
    A+G, S+G)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return [A + S + G, G] + ([A + G, S + G] if d >= 2 else [])


def _spreads(A: np.ndarray, S: np.ndarray, G: np.ndarray, d: int, x: float) -> list[float]:
    r"""For each combined polynomial, a bound :math:`K` on :math:`\lVert q-c\rVert_\infty` for
    some constant :math:`c` (so :math:`|q''|\le n^2K`), from its values on the whole grid
    (module docstring, *Refinement*): the smaller of :math:`M_e/(2-x)` (:math:`c=M/2`) and
    :math:`(M_e-m_e)/(2(1-x))` (:math:`c=(M+m)/2`); ``inf`` where a value is not finite."""
    out = []
    for f in _polys(A, S, G, d):
        if not np.all(np.isfinite(f)):
            out.append(math.inf)
            continue
        top, low = float(np.max(f)), float(np.min(f))
        out.append(min(top / (2.0 - x), (top - low) / (2.0 * (1.0 - x))))
    return out


def _refinement_points(A: np.ndarray, S: np.ndarray, G: np.ndarray, d: int, idx: np.ndarray,
                       x: float, step: int, per: int, spread: list[float]) -> np.ndarray:
    """One level of the refinement (module docstring): the points ``idx`` evaluated so far
    (multiples of ``step`` on the finest lattice), ``x`` this level's ``(n s)^2 / 8``,
    ``spread`` each polynomial's ``K`` (:func:`_spreads`); the new points
    ``k + j step / per``, ``0 < |j| <= per / 2``, for every candidate ``k`` of each combined
    polynomial (empty where a value is not finite: nothing is refined)."""
    cand: list[np.ndarray] = []
    for f, K in zip(_polys(A, S, G, d), spread):
        if not (np.all(np.isfinite(f)) and math.isfinite(K)):
            return np.empty(0, dtype=np.int64)
        cand.append(idx[f >= float(np.max(f)) - x * K])
    k = np.unique(np.concatenate(cand))
    off = (step // per) * np.arange(-(per // 2), per // 2 + 1)
    new = (k[:, None] + off[None, off != 0]).ravel()
    top = int(np.max(idx))
    return np.unique(new[(new >= 0) & (new <= top)])


def _combine_upper(A: np.ndarray, S: np.ndarray, G: np.ndarray, d: int, x: float,
                   spread: list[float]) -> float:
    """The upper end after refinement: each combined polynomial's largest value evaluated plus
    ``x K`` (its certified maximum, module docstring), combined as the worst case is."""
    m = [float(np.max(f)) + x * K for f, K in zip(_polys(A, S, G, d), spread)]
    same = m[0] + (d - 1) * m[1]
    return max(same, m[2] + m[3] + (d - 2) * m[1]) if d >= 2 else same


def _combine(A: np.ndarray, S: np.ndarray, G: np.ndarray, d: int
             ) -> tuple[float, int, int, bool, int]:
    """The worst case on the grid (module docstring): (value, start index, sampling index,
    same coordinate?, noise index)."""
    with np.errstate(over="ignore", invalid="ignore"):
        # d = 1, or start and data in the same coordinate
        one = A + S + G
        i1 = int(np.argmax(one))
        jG = int(np.argmax(G))
        same = float(one[i1]) + (d - 1) * float(G[jG])
        best = (same, i1, i1, True)
        if d >= 2:
            ag, sg = A + G, S + G
            i2, j2 = int(np.argmax(ag)), int(np.argmax(sg))
            apart = float(ag[i2]) + float(sg[j2]) + (d - 2) * float(G[jG])
            if apart > same:
                best = (apart, i2, j2, False)
    return (*best, jG)


def _responses(lam: np.ndarray, a_t: np.ndarray, b_t: np.ndarray, g_t: np.ndarray,
               lap: np.ndarray, smp: np.ndarray, progress: bool | None = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r""":math:`p_T(\lambda)^2` and the two noise energies :math:`\sum_t\alpha_t^2h_{T,t}^2\ell_t`
    (privacy) and the same with ``smp``, at every ``lam``, by one pass of the recursion (the
    deterministic state and the 2x2 second moments of the two noise parts)."""
    track_s = bool(np.any(smp > 0))
    exact_zero = bool(np.any(np.isinf(lap)))  # then 0 * inf must be 0 (an annihilated input)

    def mul(c: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.where(c == 0.0, 0.0, c * v) if exact_zero else c * v

    constant = (a_t.size > 0 and not exact_zero  # T = 0: no step (and no v[0])
                and all(bool(np.all(v == v[0])) for v in (a_t, b_t, g_t, lap, smp)))
    passes = (2 + track_s) if constant else 1
    with _steps_bar(progress, a_t.size * passes, lam.size) as bar:
        if constant:
            return _responses_constant(lam, a_t, b_t, g_t, lap, smp, track_s, bar)
        return _responses_loop(lam, a_t, b_t, g_t, lap, smp, track_s, exact_zero, mul, bar)


#: steps between progress ticks
_TICK = 1024


class _NoBar:
    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None


def _steps_bar(progress: bool | None, total: int, points: int) -> Any:
    """A bar over ``total`` steps of the recursion on ``points`` points (none for short
    passes: below ~0.2 s, or when ``progress`` is ``False``)."""
    if progress is False or total * points < 10**7:
        return _NoBar()
    from dpbounds._progress import progress_bar

    # lines=True: in a log or pipe too (`rate hb --steps 1e7` ran 55 s silent there; fuzz
    # round 7)
    return progress_bar(progress, total=total, desc=f"worst case over quadratics "
                        f"({points:,} spectrum points)", unit="step", unit_scale=True,
                        lines=True)


def _responses_loop(lam: np.ndarray, a_t: np.ndarray, b_t: np.ndarray, g_t: np.ndarray,
                    lap: np.ndarray, smp: np.ndarray, track_s: bool, exact_zero: bool,
                    mul: Any, bar: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_responses` step by step, the parameters read at every step."""
    x, xp = np.ones_like(lam), np.ones_like(lam)  # x_t, x_{t-1} (noiseless, unit start)
    # second moments (E e_t^2, E e_t e_{t-1}, E e_{t-1}^2) of the privacy and sampling parts
    s00, s01, s11 = np.zeros_like(lam), np.zeros_like(lam), np.zeros_like(lam)
    r00, r01, r11 = np.zeros_like(lam), np.zeros_like(lam), np.zeros_like(lam)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(a_t.size):
            if t % _TICK == _TICK - 1:
                bar.update(_TICK)
            al, be, ga = a_t[t], b_t[t], g_t[t]
            a = (1.0 + be) - al * (1.0 + ga) * lam
            b = be - al * ga * lam
            x, xp = a * x - b * xp, x
            q = al * al
            s00, s01, s11 = (mul(a * a, s00) - mul(2.0 * a * b, s01) + mul(b * b, s11)
                             + q * lap[t], mul(a, s00) - mul(b, s01), s00)
            if track_s:
                r00, r01, r11 = (a * a * r00 - 2.0 * a * b * r01 + b * b * r11 + q * smp[t],
                                 a * r00 - b * r01, r00)
        return x * x, s00, r00


def _responses_constant(lam: np.ndarray, a_t: np.ndarray, b_t: np.ndarray, g_t: np.ndarray,
                        lap: np.ndarray, smp: np.ndarray, track_s: bool, bar: Any
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_responses` when no parameter changes with the step (the CLI's and the tuners'
    runs) and no step is annihilated: the step's coefficients are computed once and the
    recursion runs in place. The same operations in the same order, so the same floats
    (tested bit for bit); 3x less CPU (``rate hb --steps 10000``'s pass, 160,001 points x
    10^4 steps: 18.4 CPU-s before, 5.7-6.1 after, Zen 4 under load; the command 24.0-24.4 ->
    8.7-9.1 on a quiet host)."""
    T = a_t.size
    al, be, ga = a_t[0], b_t[0], g_t[0]
    with np.errstate(over="ignore", invalid="ignore"):
        a = (1.0 + be) - al * (1.0 + ga) * lam
        b = be - al * ga * lam
        aa, ab2, bb = a * a, 2.0 * a * b, b * b
        q = al * al
        q_lap, q_smp = q * lap[0], q * smp[0]
        x, xp, nxt = np.ones_like(lam), np.ones_like(lam), np.empty_like(lam)
        tmp = np.empty_like(lam)

        def ab_step(out: np.ndarray, u: np.ndarray, w: np.ndarray) -> None:
            """out = a u - b w, in place (the state's and the cross moment's update)."""
            np.multiply(a, u, out=out)
            np.multiply(b, w, out=tmp)
            np.subtract(out, tmp, out=out)

        def moments(c: Any) -> np.ndarray:
            """E e_T^2 after T steps of a part entering with variance c a step."""
            m00, m01, m11 = np.zeros_like(lam), np.zeros_like(lam), np.zeros_like(lam)
            n00, n01 = np.empty_like(lam), np.empty_like(lam)
            for t in range(T):
                if t % _TICK == _TICK - 1:
                    bar.update(_TICK)
                # n00 = aa m00 - ab2 m01 + bb m11 + c, n01 = a m00 - b m01, m11 <- m00
                np.multiply(aa, m00, out=n00)
                np.multiply(ab2, m01, out=tmp)
                np.subtract(n00, tmp, out=n00)
                np.multiply(bb, m11, out=tmp)
                np.add(n00, tmp, out=n00)
                np.add(n00, c, out=n00)
                ab_step(n01, m00, m01)
                m11, m00, n00, m01, n01 = m00, n00, m11, n01, m01
            return m00

        for t in range(T):
            if t % _TICK == _TICK - 1:
                bar.update(_TICK)
            ab_step(nxt, x, xp)
            xp, x, nxt = x, nxt, xp
        s00 = moments(q_lap)
        r00 = moments(q_smp) if track_s else np.zeros_like(lam)
        return x * x, s00, r00
