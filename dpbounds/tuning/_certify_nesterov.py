r"""A proven lower bound of the least worst-case error of DP **Nesterov** momentum
(:math:`\gamma=\beta`) over every :math:`(\alpha,\beta,T)` (quadratic class), by the branch and
bound of :mod:`dpbounds.tuning._certify_error` run on Nesterov boxes **[DERIVED]**.

The method is :math:`y_t=x_t+\beta(x_t-x_{t-1})`, :math:`x_{t+1}=y_t-\alpha(\nabla F(y_t)+w_t)`
(:math:`x_{-1}=x_0`); the objective :math:`W(\alpha,\beta,T)` is the one of
:mod:`dpbounds.tuning._certify_error` (the exact worst case over quadratics with spectrum in
:math:`[\mu,L]`, per-coordinate noise variance :math:`\ell(T)`, sampling variance
:math:`\sigma`), with :math:`p_T(\lambda)` the residual of the method started at rest and
:math:`h_j(\lambda)` its impulse response on one eigenvalue. Every step below is
**[DERIVED]** here and checked against dense evaluation in
``tests/tuning/test_certify_nesterov.py``.

N0. **Nesterov on one eigenvalue is heavy ball with a momentum that depends on it.** On an
    eigenvalue :math:`\lambda` the error obeys :math:`e_{t+1}=(1+\beta)(1-\alpha\lambda)e_t-
    \beta(1-\alpha\lambda)e_{t-1}-\alpha w_t`. Heavy ball :math:`(\alpha',\beta')` obeys
    :math:`e_{t+1}=(1+\beta'-\alpha'\lambda)e_t-\beta'e_{t-1}-\alpha'w_t`. With
    :math:`\alpha'=\alpha` and :math:`\beta'=\beta(1-\alpha\lambda)` the two coincide:
    :math:`1+\beta(1-\alpha\lambda)-\alpha\lambda=(1+\beta)(1-\alpha\lambda)`, the same
    :math:`e_{t-1}` coefficient, the same noise gain :math:`\alpha`, the same start
    (:math:`e_0=e_{-1}`). So :math:`p_T(\lambda)` and every :math:`h_j(\lambda)` of Nesterov
    :math:`(\alpha,\beta)` **equal** those of heavy ball :math:`(\alpha,\beta(1-\alpha\lambda))`
    at that :math:`\lambda`. On a box :math:`[\alpha_0,\alpha_1]\times[\beta_0,\beta_1]` with
    :math:`\alpha_1\lambda\le1` the image lies in the heavy-ball box
    :math:`[\alpha_0,\alpha_1]\times[\beta_0(1-\alpha_1\lambda),\beta_1(1-\alpha_0\lambda)]
    \subset[0,1]^2` (:math:`\beta(1-\alpha\lambda)` grows with :math:`\beta` and falls with
    :math:`\alpha`; the ends are rounded outward), so every **one-eigenvalue** bound of
    :mod:`dpbounds.tuning._certify_error` on that heavy-ball box bounds Nesterov's
    :math:`A_T(\lambda)=w(\lambda)p_T(\lambda)^2` and :math:`U_T(\lambda)=\frac\lambda2\alpha^2
    \sum_{j<T}h_j^2` on the Nesterov box: its step 1 (start term, :math:`h_j\ge0` on the box,
    the residual at the corner :math:`(\alpha_1,\beta'_1)`), 1'' (the negative swing) and 2
    (every noise bound at one eigenvalue, the monotone Chebyshev terms included). Steps 1'
    (:math:`a<0`) and 4 are replaced by N2, step 5 (the sweep of the phase over an interval of
    eigenvalues, on which :math:`\beta'` is not constant) by N4.

N1. **Eigenvalues used.** :math:`\Lambda=\{\mu2^{i/2}:i=0..8\}\cap[\mu,L]\cup\{L\}`; each
    is an admissible instance (step 0 of :mod:`dpbounds.tuning._certify_error`): for
    :math:`\lambda_1,\lambda_2\in\Lambda`, :math:`W\ge A_T(\lambda_1)+(\ell+\sigma)
    U_T(\lambda_1)+(d-1)\ell\,U_T(\lambda_2)` (and the :math:`d\ge2` form, and
    :math:`W\ge(d\ell+\sigma)U_T(\lambda_2)`), each term replaced by its box bound (N0 where
    :math:`\alpha_1\lambda\le1`, N2 where :math:`\alpha_0\lambda>1`, else only
    :math:`U_T\ge\frac\lambda2\alpha_0^2` from :math:`h_0=1`).

N2. **Past** :math:`1/\lambda` (:math:`c=\alpha\lambda-1>0`). Then :math:`a=-(1+\beta)c`,
    :math:`b=-\beta c`; :math:`f_t=(-1)^te_t` obeys :math:`f_{t+1}=(1+\beta)cf_t+\beta cf_{t-1}`,
    :math:`f_0=1`, :math:`f_{-1}=-1`, so :math:`f_1=c>0` and by induction (every
    :math:`f_t\ge0` for :math:`t\ge0`) :math:`f_{t+1}\ge(1+\beta)cf_t`:
    :math:`|p_T(\lambda)|\ge c\,r^{T-1}`, :math:`r=(1+\beta)c`, for :math:`T\ge1`. Likewise
    :math:`g_j=(-1)^jh_j` obeys the same recursion with :math:`g_0=1`, :math:`g_{-1}=0`, so
    :math:`|h_j|\ge r^j` and :math:`\sum_{j<k}h_j^2\ge\sum_{j<k}r^{2j}`. On the box
    :math:`c\ge c_0=\alpha_0\lambda-1` and :math:`r\ge r_0=(1+\beta_0)c_0`; on a horizon interval
    :math:`[T_0,T_1]` the start bound is taken at :math:`T_1` (:math:`r_0\le1`) or :math:`T_0`
    (:math:`r_0>1`), the noise at :math:`k=T_0` (the partial sums grow with :math:`k`).
    **Unstable tail**: for :math:`\alpha L\ge2`, :math:`c\ge1`, :math:`r\ge1`, so
    :math:`|p_T(L)|\ge1` for every :math:`T` and :math:`W\ge w(L)`: the branch and bound
    covers :math:`\alpha\in[0,2/L]` and this settles :math:`\alpha\ge2/L`.

N2'. **The closed form** (heavy ball's step 7 of :mod:`dpbounds.tuning._certify_error`) on
    N0's heavy-ball box at each eigenvalue of N1 where :math:`\alpha_1\lambda\le1`: the
    start term and the noise from :math:`e_t=\beta'^{t/2}R\cos(t\theta-\varphi)` and
    :math:`h_j=\beta'^{j/2}\sin((j+1)\theta)/\sin\theta` with the angle's exact range on
    that box (``_CLOSED_FORM``; the notebook-07 plug-in's gap 0.34% -> 0.10%, at
    :math:`L/\mu=10^3`, :math:`T\le300` 1.7% -> 1.3%).

N3. **Noise level and horizons**: step 3 of :mod:`dpbounds.tuning._certify_error` unchanged
    (every bound above is :math:`\ge0` and holds for every :math:`T` of an interval, so the
    least :math:`\ell` there gives a bound, for any noise sequence).

N4. **The sweep of the phase of an oscillating mode** (step 5 of
    :mod:`dpbounds.tuning._certify_error`, redone for N0's momentum). For
    :math:`\alpha\lambda\le1` N0's heavy ball has :math:`a=(1+\beta)(1-\alpha\lambda)`,
    :math:`b=\beta(1-\alpha\lambda)`, so :math:`\cos\theta=a/(2\sqrt b)=k(\beta)
    \sqrt{1-\alpha\lambda}`, :math:`k(\beta)=(1+\beta)/(2\sqrt\beta)` (:math:`\ge1`, falling on
    :math:`(0,1)`): the roots are complex (or double) iff :math:`\lambda\ge((1-\beta)/
    (1+\beta))^2/\alpha`, at every point of the box for :math:`\lambda\in[\lambda_a,\lambda_b]`,
    :math:`\lambda_a=\max(\mu,((1-\beta_0)/(1+\beta_0))^2/\alpha_0)`,
    :math:`\lambda_b=\min(L,1/\alpha_1)`. There, as in step 5,
    :math:`p_T=b^{T/2}R\cos(T\theta-\varphi)`, :math:`R^2=\alpha\lambda/\sin^2\theta\ge1`,
    :math:`\varphi=\arctan B`, :math:`B=(\cos\theta-\sqrt b)/\sin\theta`. Here :math:`\sqrt b=
    \sqrt\beta\sqrt{1-\alpha\lambda}=\kappa\cos\theta` with :math:`\kappa=2\beta/(1+\beta)<1`
    constant in :math:`\lambda`, so :math:`B=(1-\kappa)\cot\theta` falls as :math:`\theta`
    grows, and :math:`\theta` grows with :math:`\lambda`: across a piece :math:`[l,h]` the phase
    :math:`\psi=T\theta-\varphi` grows by at least :math:`T` times the growth of :math:`\theta`.
    At a fixed point, :math:`\cos\theta` falls across the piece by :math:`k(\beta)\alpha(h-l)/
    (\sqrt{1-\alpha l}+\sqrt{1-\alpha h})\ge D=k(\beta_1)\alpha_0(h-l)/(\sqrt{1-\alpha_0l}+
    \sqrt{1-\alpha_0h})` (:math:`\alpha/(\sqrt{1-\alpha l}+\sqrt{1-\alpha h})` grows with
    :math:`\alpha`) and stays in :math:`[c_{lo},c_{hi}]=[k(\beta_1)\sqrt{1-\alpha_1h},
    k(\beta_0)\sqrt{1-\alpha_0l}]`; so, as in step 5, :math:`\theta` grows by at least the
    growth :math:`\Delta\theta` of arccos over the subinterval of length
    :math:`\min(D,c_{hi}-c_{lo})` of :math:`[c_{lo},c_{hi}]` nearest 0, :math:`\psi` sweeps at
    least :math:`s=T_0\Delta\theta`, and some :math:`\lambda^*\in[l,h]` has
    :math:`|\cos\psi|\ge\sin(\min(s,\pi)/2)`. With :math:`b^T\ge(\beta_0(1-\alpha_1h))^{T_1}`
    and :math:`R^2\ge\max(1,\alpha_0l/(1-c_{lo}^2))`: :math:`A_T(\lambda^*)\ge w(l)(\beta_0
    (1-\alpha_1h))^{T_1}\max(1,\alpha_0l/(1-c_{lo}^2))\sin^2(\min(s,\pi)/2)`, paired (step 0,
    5') with the noise at :math:`\lambda^*`, bounded by step 2 over :math:`\lambda\in[l,h]` on
    the heavy-ball box :math:`[\alpha_0,\alpha_1]\times[\beta_0(1-\alpha_1h),\beta_1
    (1-\alpha_0l)]` (which holds N0's image of every point at every eigenvalue of the piece).
    Pieces: the whole interval, geometric ones :math:`[\lambda_ar^i,\lambda_ar^{i+1}]`
    (:math:`r=2^{1/4}`, :math:`i<16`; :math:`r=2^{1/2}`, :math:`i<8`) cut at :math:`\lambda_b`,
    and those of relative length :math:`4^{-k}` (:math:`k=2..6`) at :math:`\lambda_a`.

N5. **The phase on a box at one eigenvalue** (no sweep). With N4's notation at a fixed
    :math:`\lambda\in[\lambda_a,\lambda_b]` (complex roots on the whole box, strictly:
    :math:`k(\beta_0)\sqrt{1-\alpha_0\lambda}<1`), :math:`\cos\theta=k(\beta)
    \sqrt{1-\alpha\lambda}` falls in :math:`\alpha` and in :math:`\beta` (:math:`k'(\beta)=
    (\beta-1)/(4\beta^{3/2})<0`), so :math:`\theta\in[\theta(\alpha_0,\beta_0),
    \theta(\alpha_1,\beta_1)]\subset(0,\pi/2]`; :math:`\varphi=\arctan((1-\kappa)\cot\theta)`
    with :math:`1-\kappa=(1-\beta)/(1+\beta)` falling in :math:`\beta` and :math:`\cot\theta\ge0`
    falling in :math:`\theta`, so :math:`\varphi\in[\varphi(\alpha_1,\beta_1),
    \varphi(\alpha_0,\beta_0)]`. Hence for :math:`T\in[T_0,T_1]` the phase
    :math:`\psi=T\theta-\varphi` lies in :math:`[T_0\theta_{lo}-\varphi_{hi},
    T_1\theta_{hi}-\varphi_{lo}]` (widened by :math:`10^{-9}(1+|\psi|)`); where that interval
    holds no zero :math:`\pi/2+j\pi` of cos, :math:`|\cos\psi|` is at least its least value at
    the interval's ends, and :math:`A_T(\lambda)\ge w(\lambda)(\beta_0(1-\alpha_1\lambda))^{T_1}
    \max(1,\alpha_0\lambda/(1-c_{\min}^2))\min|\cos|^2`, :math:`c_{\min}=k(\beta_1)
    \sqrt{1-\alpha_1\lambda}`. Unlike N4 this sees the phase of the box itself: on the small
    boxes around the optimum it is near the start term's value there. It is evaluated at
    :data:`_N5_POINTS` eigenvalues (ends included) of each piece of N4 of ratio :math:`2^{1/4}`
    or at :math:`\lambda_a`, and taken as that piece's
    start bound where larger (its eigenvalue lies in the piece, so the piece's noise bound
    pairs with it as in N4).

**Coverage** as :func:`~dpbounds.tuning._certify_error.certify_error_minimum` (boxes in
:math:`(\log\alpha,-\log(1-\beta))`, the tails :math:`\alpha\in[0,\alpha_{\min}]` and
:math:`\beta\in[\beta_Y,1]`, on which the bounds hold by continuity, best-first cutting), with
the upper end of :math:`\alpha` at :math:`2/L` (N2) instead of :math:`4/L`; and the slice
:math:`\alpha=\bar\alpha` fixed (degenerate boxes, as there; :math:`\bar\alpha\ge2/L` is
settled by N2) or :math:`\beta=\bar\beta` fixed.

N6. **Nesterov's own range of** :math:`\cos\theta` **in the noise.** Step 2's monotone
    Chebyshev terms on N0's heavy-ball box take :math:`c_{lo}=\min a/(2\sqrt{\max b})`, the
    ends of :math:`a` and :math:`b` at different corners; but :math:`\cos\theta=a/(2\sqrt b)=
    k(\beta)\sqrt{1-\alpha\lambda}` (N4) falls in :math:`\alpha`, :math:`\beta` and
    :math:`\lambda`, so on the box and every :math:`\lambda\in[l,h]` (:math:`\alpha_1h\le1`)
    :math:`c\ge c_{lo}=k(\beta_1)\sqrt{1-\alpha_1h}` and :math:`b\ge b_{lo}=\beta_0(1-\alpha_1h)`.
    As in step 2 (:math:`h_j=b^{j/2}U_j(c)`, :math:`U_j\ge0` increasing on
    :math:`[\cos(\pi/(j+1)),\infty)`): :math:`\sum_{j<k}h_j^2\ge\sum_{j<\min(k,J)}b_{lo}^j
    U_j(c_{lo})^2`, :math:`J=\lfloor\pi/\arccos c_{lo}\rfloor` (every :math:`j` where
    :math:`c_{lo}\ge1`), and :math:`U_k\ge\frac l2\alpha_0^2` times it; at the eigenvalues of
    N1 (:math:`l=h=\lambda`) and over each piece of N4. Near critical damping of the slow mode
    this keeps hundreds of terms where N0's box kept tens (:math:`L/\mu=10^3`, ``bench``:
    the bound 26% -> 94% of the attained worst case at 2000 boxes).

**What it gives** (``bench/nesterov_bracket.md``): with N0-N4 alone the bracket stayed a
factor 1.36 (the bound 73% of the tuned worst case) at :math:`L/\mu=10` (the sweep bounds a
mode's start term for the worst alignment of its phase over a piece: a short piece sweeps
little, a long one loses the decay at its top); N5 closes it to within 0.4% of the attained
worst case there, and N6 the near-critical noise at larger :math:`L/\mu`. Budget:
:data:`_MAX_BOXES` boxes (~1-4 ms a box). Rounding as :mod:`dpbounds.tuning._certify_error`
(first-order margins, not interval arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpbounds.tuning._certify_error import (
    _COND_MARGIN,
    _SAFETY,
    _U,
    ErrorBracket,
    _bracket_on_grid,
    _closed_form_start,
    _closed_form_sum_sq,
    _corner_residuals,
    _monotone_chebyshev_sums,
    _Problem,
    _start_negative_lower,
    _sum_sq_lower,
    combine_instances,
    make_problem,
)

__all__: list[str] = []

_MAX_BOXES = 2_000
_CLOSED_FORM = True  # heavy ball's step 7 at N1's eigenvalues (False: left out)
_CHUNK_CELLS = 2 ** 20
#: the eigenvalues of N1: mu 2^(i/2), i = 0.._N_LAMBDA - 1 (those <= L), and L
_N_LAMBDA = 5


def eigenvalues(mu: float, L: float) -> list[float]:
    """The set :math:`\\Lambda` of N1 (sorted, no repeats)."""
    lams = [lam for lam in mu * 2.0 ** (0.5 * np.arange(_N_LAMBDA)) if lam < L]
    return [float(v) for v in lams] + [float(L)]


def _w(prob: _Problem, lam: float) -> float:
    return prob.w_mu if prob.gap_form else 0.5 * lam * prob.dist_sq


def _mapped(lam: float, al0, al1, b0, b1):
    """The heavy-ball momentum range of N0 (rounded outward, clipped to [0, 1])."""
    with np.errstate(invalid="ignore"):
        m0 = np.nextafter(np.nextafter(b0 * (1.0 - al1 * lam), -np.inf), -np.inf)
        m1 = np.nextafter(np.nextafter(b1 * (1.0 - al0 * lam), np.inf), np.inf)
    return np.clip(m0, 0.0, 1.0), np.clip(m1, 0.0, 1.0)


def _start_positive(prob: _Problem, lam: float, al0, al1, b0, b1) -> np.ndarray:
    """Step 1 of :mod:`dpbounds.tuning._certify_error` at ``lam`` on the heavy-ball box
    ``[al0, al1] x [b0, b1]`` (boxes by horizon intervals)."""
    Thi = prob.Thi
    a_c = np.nextafter(np.nextafter((1.0 + b1) - al1 * lam, -np.inf), -np.inf)
    P_end = _corner_residuals(a_c, b1, Thi)
    C = np.cos(math.pi / Thi.astype(float))[None, :]
    s0, s1 = np.sqrt(b0)[:, None], np.sqrt(b1)[:, None]
    s = np.clip(C, s0, s1)
    cond = (s * s - 2.0 * s * C + (1.0 - (al1 * lam)[:, None])) >= _COND_MARGIN
    err = 4.0 * _U * (Thi.astype(float) + 1.0) ** 2
    with np.errstate(invalid="ignore"):
        p = np.where(cond & np.isfinite(P_end), np.maximum(P_end - err[None, :], 0.0), 0.0)
    return _w(prob, lam) * p * p


def alternating_corner(g1, g2, lam: float, al0, Tlo, Thi) -> tuple[np.ndarray, np.ndarray]:
    r"""The corner recursions of N2 (and of :mod:`._certify_momentum`'s M2):
    :math:`f_{t+1}=g_1f_t+g_2f_{t-1}` from :math:`f_0=1`, :math:`f_{-1}=-1`, and the same for
    :math:`g` from :math:`g_0=1`, :math:`g_{-1}=0` (``g1``, ``g2`` >= 0 per row, so
    :math:`f_t,g_t\ge0` for :math:`t\ge0`): the least :math:`f_t` over each horizon interval
    ``[Tlo, Thi]`` and :math:`\frac\lambda2\alpha_0^2\sum_{j<T_0}g_j^2`, both lowered for
    rounding (rows by intervals)."""
    n, top = np.size(al0), int(Thi[-1])
    f, fp = np.ones(n), -np.ones(n)        # f_0, f_{-1}
    h, hp, acc = np.ones(n), np.zeros(n), np.zeros(n)  # g_0, g_{-1}, sum_{j<t} g_j^2
    fs = np.empty((n, top))                # f_t, t = 1..top
    sums = np.empty((n, top))              # sum_{j<t} g_j^2, t = 1..top
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(top):
            acc = acc + h * h
            sums[:, t] = acc
            f, fp = g1 * f + g2 * fp, f
            h, hp = g1 * h + g2 * hp, h
            fs[:, t] = f
        fmin = np.minimum.reduceat(fs, Tlo - 1, axis=1)
    # rounding: every term of both recursions is a sum of products of nonnegative numbers
    # (t >= 1), each step's relative rounding at most 3u: a (1 - 4u(t+1)) factor is ample
    shrink = 1.0 - 4.0 * _U * (Thi.astype(float) + 1.0)
    fmin = np.where(np.isfinite(fmin), np.clip(fmin, 0.0, 1e150), 1e150) * shrink[None, :]
    u = np.where(np.isfinite(sums[:, Tlo - 1]), np.minimum(sums[:, Tlo - 1], 1e300), 1e300)
    return fmin, 0.5 * lam * (al0 * al0)[:, None] * u * shrink[None, :]


def _past(prob: _Problem, lam: float, al0, b0) -> tuple[np.ndarray, np.ndarray]:
    """N2 at ``lam``: (start bound, noise bound), boxes by horizon intervals (0 where
    ``al0 * lam <= 1``): the recursions of N2 run at the box's lower corner
    :math:`(c_0,\beta_0)`, the start's least over each horizon interval, the noise's partial
    sum at its first horizon."""
    Tlo, Thi = prob.Tlo, prob.Thi
    c0 = np.maximum((al0 * lam - 1.0) * (1.0 - 1e-12), 0.0)
    fmin, u = alternating_corner((1.0 + b0) * c0, b0 * c0, lam, al0, Tlo, Thi)
    ok = (c0 > 0)[:, None]
    return np.where(ok, _w(prob, lam) * fmin * fmin, 0.0), np.where(ok, u, 0.0)


def _nesterov_chebyshev(lam_lo, lam_hi, al0, al1, b0, b1, k) -> np.ndarray:
    r"""N6: :math:`\frac{\lambda_{lo}}2\alpha_0^2\sum_{j<\min(k,J)}b_{lo}^jU_j(c_{lo})^2` per
    box (rows) at each ``k``: Nesterov's own range of :math:`\cos\theta` (module docstring),
    valid at every eigenvalue of ``[lam_lo, lam_hi]`` (per row)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        kb = np.where(b1 > 0, (1.0 + b1) / (2.0 * np.sqrt(b1)), 0.0)
        c_lo = kb * np.sqrt(np.maximum(1.0 - al1 * lam_hi, 0.0)) * (1.0 - 1e-12)
        b_lo = np.nextafter(np.nextafter(b0 * (1.0 - al1 * lam_hi), -np.inf), -np.inf)
    ok = (al1 * lam_hi <= 1.0) & (b0 > 0) & np.isfinite(c_lo)
    c_lo = np.where(ok, c_lo, 0.0)
    b_lo = np.where(ok, np.maximum(b_lo, 0.0), 0.0)
    sums = _monotone_chebyshev_sums(c_lo, b_lo, k)
    return (0.5 * lam_lo * al0 * al0)[:, None] * sums


def _eigen_terms(prob: _Problem, lam: float, al0, al1, b0, b1) -> tuple[np.ndarray, np.ndarray]:
    """(start bound, noise bound) of N0-N2 at ``lam``, boxes by horizon intervals."""
    n, m = al0.size, prob.Tlo.size
    S, U = np.zeros((n, m)), np.zeros((n, m))
    # h_0 = 1: U_k >= lam alpha_0^2 / 2 for every k >= 1
    U[:] = (0.5 * lam * al0 * al0)[:, None]
    inside = al1 * lam <= 1.0
    if np.any(inside):
        i = np.flatnonzero(inside)
        m0, m1 = _mapped(lam, al0[i], al1[i], b0[i], b1[i])
        S[i] = np.maximum(_start_positive(prob, lam, al0[i], al1[i], m0, m1),
                          _start_negative_lower(prob, lam, al0[i], al1[i], m0, m1))
        U[i] = np.maximum(U[i], _sum_sq_lower(lam, al0[i], al1[i], m0, m1, prob.Tlo))
        U[i] = np.maximum(U[i], _nesterov_chebyshev(np.full(i.size, lam), np.full(i.size, lam),
                                                    al0[i], al1[i], b0[i], b1[i], prob.Tlo))
        if _CLOSED_FORM:  # heavy ball's step 7 on N0's heavy-ball box
            lams = np.full(i.size, lam)
            S[i] = np.maximum(S[i], _closed_form_start(prob, lams, al0[i], al1[i], m0, m1,
                                                       prob.Tlo, prob.Thi))
            U[i] = np.maximum(U[i], _closed_form_sum_sq(lams, al0[i], al1[i], m0, m1,
                                                        prob.Tlo))
    past = al0 * lam > 1.0
    if np.any(past):
        i = np.flatnonzero(past)
        Sp, Up = _past(prob, lam, al0[i], b0[i])
        S[i], U[i] = np.maximum(S[i], Sp), np.maximum(U[i], Up)
    return S, U


#: pieces of the oscillating interval [lam_a, lam_b] N4 tries: the whole; geometric pieces
#: [lam_a r^i, lam_a r^(i+1)] (r = 2^(1/4), i < 16; r = 2^(1/2), i < 8), cut at lam_b; and those
#: of relative length 4^-k at lam_a (near critical damping the amplitude is large)
def _pieces(lam_a: np.ndarray, lam_b: np.ndarray) -> list:
    """``(lo, hi, n5)`` per piece; ``n5``: N5 is evaluated on it (the pieces of ratio 2^(1/4)
    and those at lam_a)."""
    out = [(lam_a, lam_b, False)]
    for step, n in ((0.25, 16), (0.5, 8)):
        for i in range(n):
            lo = np.minimum(lam_a * 2.0 ** (step * i), lam_b)
            hi = np.minimum(lam_a * 2.0 ** (step * (i + 1)), lam_b)
            out.append((lo, hi, step == 0.25))
    for k in range(2, 7):
        out.append((lam_a, lam_a + 4.0 ** -k * (lam_b - lam_a), True))
    return out


#: N5: eigenvalues per piece where the phase interval is evaluated (both ends included)
_N5_POINTS = 6


def _phase_instance(prob: _Problem, lam, al0, al1, b0, b1) -> np.ndarray:
    r"""N5: a lower bound of :math:`A_T(\lambda)` at one eigenvalue per box (``lam`` per row,
    complex roots on the box there), boxes by horizon intervals, from the intervals of
    :math:`\theta` and :math:`\varphi` on the box (module docstring)."""
    T0, T1 = prob.Tlo[None, :].astype(float), prob.Thi[None, :].astype(float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        k0 = (1.0 + b0) / (2.0 * np.sqrt(b0))
        k1 = (1.0 + b1) / (2.0 * np.sqrt(b1))
        # rounding of c = k(beta) sqrt(1 - alpha lam): 1 - alpha lam cancels (its error 2u
        # becomes u / sqrt(x) in the root), times k = (1 + beta) / (2 sqrt(beta)), large at
        # small beta (a fixed margin let the bound exceed the exact start term by 5e-8
        # relative at beta < 1e-6): |error| <= 8u (1 + k0 (1 + 1 / sqrt(1 - alpha_1 lam)))
        x1 = np.maximum(1.0 - al1 * lam, 0.0)
        pad = 8.0 * _U * (1.0 + k0 * (1.0 + 1.0 / np.sqrt(x1)))
        c_max = k0 * np.sqrt(np.maximum(1.0 - al0 * lam, 0.0)) + pad
        c_min = k1 * np.sqrt(x1) - pad
        ok = (c_max < 1.0 - 1e-9) & (b0 > 0) & (al1 * lam <= 1.0)
        th_lo, th_hi = np.arccos(np.clip(c_max, 0.0, 1.0)), np.arccos(np.clip(c_min, 0.0, 1.0))
        # phi = arctan((1 - kappa) cot theta), 1 - kappa = (1 - beta) / (1 + beta)
        ph_hi = np.arctan((1.0 - b0) / (1.0 + b0) * np.cos(th_lo) / np.sin(th_lo))
        ph_lo = np.arctan((1.0 - b1) / (1.0 + b1) * np.cos(th_hi) / np.sin(th_hi))
        ps_lo = T0 * th_lo[:, None] - ph_hi[:, None]
        ps_hi = T1 * th_hi[:, None] - ph_lo[:, None]
        slack = 1e-9 * (1.0 + np.abs(ps_lo) + np.abs(ps_hi))
        ps_lo, ps_hi = ps_lo - slack, ps_hi + slack
        # a zero of cos (pi/2 + j pi) inside [ps_lo, ps_hi]: no bound; else |cos| is least at
        # an end
        zero = np.floor((ps_hi - 0.5 * math.pi) / math.pi) >= np.ceil(
            (ps_lo - 0.5 * math.pi) / math.pi)
        cmin = np.where(zero, 0.0, np.minimum(np.abs(np.cos(ps_lo)), np.abs(np.cos(ps_hi))))
        cmin = np.maximum(cmin - 1e-12, 0.0)
        r2 = np.maximum(1.0, al0 * lam / np.maximum(1.0 - c_min * c_min, 1e-300))
        decay = np.exp(T1 * np.log(b0 * np.maximum(1.0 - al1 * lam, 0.0))[:, None])
        w = prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * np.asarray(lam)[:, None]
        bound = w * decay * (r2 * (1.0 - 1e-12))[:, None] * cmin * cmin
    return np.where(ok[:, None] & np.isfinite(bound), bound, 0.0)


def _sweep_pieces(prob: _Problem, al0, al1, b0, b1) -> list:
    """N4 per piece ``[lo, hi]`` of :func:`_pieces` of the oscillating interval of each box:
    ``(start bound (boxes by horizon intervals), lo, hi, m0, m1)``, per box the piece and
    the heavy-ball momentum range over it (``lo = hi = 0`` where the box has no such piece)."""
    T0, T1 = prob.Tlo[None, :].astype(float), prob.Thi[None, :].astype(float)
    out: list = []
    n = al0.size
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        q0 = (1.0 - b0) / (1.0 + b0)
        lam_a = np.maximum(prob.mu, q0 * q0 / al0)
        lam_b = np.minimum(prob.L, 1.0 / al1)
        osc = np.isfinite(lam_a) & (lam_a < lam_b) & (b0 > 0)
        if not np.any(osc):
            return out
        i = np.flatnonzero(osc)
        a0, a1, c0b, c1b = al0[i], al1[i], b0[i], b1[i]
        la, lb = lam_a[i], lam_b[i]
        k0 = (1.0 + c0b) / (2.0 * np.sqrt(c0b))  # (1 + beta) / (2 sqrt(beta)) at beta_0
        k1 = (1.0 + c1b) / (2.0 * np.sqrt(c1b))  # ... at beta_1 (the least: it falls in beta)
        for lo, hi, n5 in _pieces(la, lb):
            if not np.any(hi > lo):
                continue
            r_lo, r_hi = np.sqrt(np.maximum(1.0 - a0 * lo, 0.0)), np.sqrt(
                np.maximum(1.0 - a0 * hi, 0.0))
            D = k1 * a0 * (hi - lo) / (r_lo + r_hi)
            c_hi = np.clip(k0 * np.sqrt(np.maximum(1.0 - a0 * lo, 0.0)), 0.0, 1.0)
            c_lo = np.clip(k1 * np.sqrt(np.maximum(1.0 - a1 * hi, 0.0)), 0.0, 1.0)
            D = np.where((hi > lo) & np.isfinite(D), np.minimum(D, c_hi - c_lo), 0.0)
            D = np.maximum(D, 0.0)
            mid = np.clip(0.0, c_lo + 0.5 * D, c_hi - 0.5 * D)
            dtheta = (np.arccos(np.clip(mid - 0.5 * D, -1, 1))
                      - np.arccos(np.clip(mid + 0.5 * D, -1, 1))) * (1.0 - 1e-12)
            sweep = T0 * dtheta[:, None]
            factor = np.where(sweep > 0.0, np.sin(0.5 * np.minimum(sweep, math.pi)) ** 2, 0.0)
            r2 = np.maximum(1.0, a0 * lo / np.maximum(1.0 - c_lo * c_lo, 1e-300))
            decay = np.exp(T1 * np.log(c0b * np.maximum(1.0 - a1 * hi, 0.0))[:, None])
            w = prob.w_mu if prob.gap_form else 0.5 * prob.dist_sq * lo[:, None]
            bound = w * decay * (r2 * (1.0 - 1e-12))[:, None] * factor
            bound = np.where(np.isfinite(bound), bound, 0.0)
            for j in range(_N5_POINTS if n5 else 0):  # N5 at eigenvalues of the piece
                lam = lo + (hi - lo) * (j / (_N5_POINTS - 1))
                bound = np.maximum(bound, _phase_instance(prob, lam, a0, a1, c0b, c1b))
            S = np.zeros((n, prob.Tlo.size))
            S[i] = np.where((hi > lo)[:, None], bound, 0.0)
            m0 = np.nextafter(np.nextafter(c0b * (1.0 - a1 * hi), -np.inf), -np.inf)
            m1 = np.nextafter(np.nextafter(c1b * (1.0 - a0 * lo), np.inf), np.inf)
            LO, HI, M0, M1 = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
            LO[i], HI[i] = lo, hi
            M0[i], M1[i] = np.clip(m0, 0.0, 1.0), np.clip(m1, 0.0, 1.0)
            out.append((S, LO, HI, M0, M1))
    return out


def nesterov_box_lower(prob: _Problem, al0, al1, b0, b1, by_interval: bool = False,
                       need: float = math.inf) -> np.ndarray:
    r"""The lower bound of :math:`\min_T W` of Nesterov on each box (module docstring N0-N4);
    with ``by_interval``, of :math:`W` on each box (rows) and horizon interval (columns). The
    noise over a piece of N4 (step 2 over a range, the costly part) is computed only where the
    bound is below ``need`` (elsewhere it cannot lower a result compared with ``need``;
    leaving it out only weakens a bound)."""
    al0, al1, b0, b1 = (np.asarray(v, dtype=float).ravel() for v in
                        np.broadcast_arrays(al0, al1, b0, b1))
    terms = [_eigen_terms(prob, lam, al0, al1, b0, b1) for lam in eigenvalues(prob.mu, prob.L)]
    Umax = terms[0][1]
    for _, U in terms[1:]:
        Umax = np.maximum(Umax, U)
    ell, smp, d = prob.ell[None, :], prob.smp, prob.d

    def combine(W, S, U1, ell, Umax):
        return combine_instances(W, S, U1, ell, Umax, smp, d)

    with np.errstate(invalid="ignore", over="ignore"):
        W = (d * ell + smp) * Umax
        for S, U1 in terms:
            W = combine(W, S, U1, ell, Umax)
        W = np.where(np.isnan(W), 0.0, W)
        # N4/N5 only on the boxes whose bound is still below ``need`` somewhere
        sub = np.flatnonzero(np.min(W, axis=1) < need)
        pieces = _sweep_pieces(prob, al0[sub], al1[sub], b0[sub], b1[sub]) if sub.size else []
        for S_, lo_, hi_, m0_, m1_ in pieces:
            S = np.zeros_like(W)
            S[sub] = S_
            lo, hi, m0, m1 = (np.zeros(al0.size) for _ in range(4))
            lo[sub], hi[sub], m0[sub], m1[sub] = lo_, hi_, m0_, m1_
            # h_0 = 1 at lambda* >= lo: U >= lo alpha_0^2 / 2; then step 2 over the piece
            W = combine(W, S, (0.5 * lo * al0 * al0)[:, None], ell, Umax)
            todo = (S > 0) & (W < need)
            rows = np.flatnonzero(np.any(todo, axis=1))
            if rows.size == 0:
                continue
            cols = np.flatnonzero(np.any(todo[rows], axis=0))
            blk = np.ix_(rows, cols)
            UP = _sum_sq_lower(lo[rows], al0[rows], al1[rows], m0[rows], m1[rows],
                               prob.Tlo[cols], lam_hi=hi[rows])
            UP = np.maximum(UP, _nesterov_chebyshev(lo[rows], hi[rows], al0[rows], al1[rows],
                                                    b0[rows], b1[rows], prob.Tlo[cols]))
            Wb = combine(W[blk], S[blk], UP, ell[:, cols], Umax[blk])
            W[blk] = np.where(np.isnan(Wb), W[blk], Wb)
    return (W if by_interval else np.min(W, axis=1)) * (1.0 - _SAFETY)


def _box_lows(prob: _Problem, al0, al1, b0, b1, need: float) -> np.ndarray:
    out = np.empty(al0.size)
    chunk = max(16, min(2048, _CHUNK_CELLS // max(prob.Tlo.size, 1)))
    for s in range(0, al0.size, chunk):
        sl = slice(s, s + chunk)
        out[sl] = nesterov_box_lower(prob, al0[sl], al1[sl], b0[sl], b1[sl], need=need)
    return out


def certify_nesterov_minimum(mu: float, L: float, d: int, Tmax: int, laplace_var: Callable,
                             smp: float, *, best: float, initial_gap: float | None = None,
                             dist_sq: float | None = None, rtol: float = 1e-3,
                             max_boxes: int | None = None, cells: int = 24,
                             any_noise: bool = False, alpha: float | None = None,
                             beta: float | None = None) -> ErrorBracket:
    r"""Branch and bound (module docstring): a proven lower bound of :math:`\min W` of Nesterov
    momentum (:math:`\gamma=\beta`) over every :math:`\alpha>0`, :math:`0\le\beta<1`,
    :math:`1\le T\le T_{\max}` (or the slice with ``alpha`` or ``beta`` fixed). ``best``: the
    incumbent (boxes whose bound reaches ``best / (1 + rtol)`` are not cut; the result never
    exceeds it). Arguments as
    :func:`~dpbounds.tuning._certify_error.certify_error_minimum`."""
    if alpha is not None and not (0.0 < alpha < math.inf):
        raise ValueError(f"alpha must be positive and finite (a fixed step), got {alpha!r}")
    if beta is not None and not (0.0 <= beta < 1.0):
        raise ValueError(f"beta must be in [0, 1) (a fixed momentum), got {beta!r}")
    if max_boxes is None:
        max_boxes = _MAX_BOXES
    prob = make_problem(mu, L, d, Tmax, laplace_var, smp, initial_gap, dist_sq, any_noise)
    if alpha is not None and alpha * L >= 2.0:  # N2: unstable at L, |p_T(L)| >= 1
        return ErrorBracket(min(prob.w_L, best), 0, (alpha, alpha, beta or 0.0, beta or 1.0))
    x0 = math.log(1e-3 / (mu * float(Tmax) ** 2))
    x1 = math.log(2.0 / L)
    y1 = math.log(1e3 * Tmax)
    nx = max(int(math.ceil(x1 - x0)), cells)
    ny = max(int(math.ceil(y1)), cells // 2)
    xs, ys = np.linspace(x0, x1, nx + 1), np.linspace(0.0, y1, ny + 1)
    return _bracket_on_grid(prob, xs, ys, alpha, beta, best, rtol, max_boxes, _box_lows)
