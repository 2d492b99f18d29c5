r"""A proven lower bound of the least worst-case error of a DP linear momentum method with a
**fixed** :math:`\gamma` (neither heavy ball, :math:`\gamma=0`, nor Nesterov,
:math:`\gamma=\beta`) over every :math:`(\alpha,\beta,T)` of the tuner's box (quadratic
class), by the branch and bound of :mod:`dpbounds.tuning._certify_error` run on boxes of
:math:`(\alpha,\beta)` **[DERIVED]**.

The method is :math:`y_t=x_t+\gamma(x_t-x_{t-1})`, :math:`x_{t+1}=x_t+\beta(x_t-x_{t-1})-
\alpha(\nabla F(y_t)+w_t)` (:math:`x_{-1}=x_0`), :math:`\gamma` a constant; the objective
:math:`W(\alpha,\beta,T)` is the one of :mod:`dpbounds.tuning._certify_error` (the exact worst
case over quadratics with spectrum in :math:`[\mu,L]`, per-coordinate noise variance
:math:`\ell(T)`, sampling variance :math:`\sigma`), :math:`p_T(\lambda)` the residual of the
method started at rest and :math:`h_j(\lambda)` its impulse response on one eigenvalue. Every
step below is **[DERIVED]** here and checked against dense evaluation in
``tests/tuning/test_certify_momentum.py`` (an oracle of the method's own :math:`(x,y)`
iteration).

M0. **On one eigenvalue the method is heavy ball with a momentum that depends on it.** On an
    eigenvalue :math:`\lambda` the error :math:`e_t=x_t-x^\ast` (one coordinate) obeys
    :math:`e_{t+1}=e_t+\beta(e_t-e_{t-1})-\alpha\lambda(e_t+\gamma(e_t-e_{t-1}))-\alpha w_t=
    (1+\beta-\alpha\lambda(1+\gamma))e_t-(\beta-\alpha\lambda\gamma)e_{t-1}-\alpha w_t`.
    Heavy ball :math:`(\alpha',\beta')` obeys :math:`e_{t+1}=(1+\beta'-\alpha'\lambda)e_t-
    \beta'e_{t-1}-\alpha'w_t`. With :math:`\alpha'=\alpha` and
    :math:`\beta'=\beta-\alpha\lambda\gamma` both coefficients and the noise gain coincide
    (:math:`1+\beta'-\alpha\lambda=1+\beta-\alpha\lambda(1+\gamma)`), and so does the start
    (:math:`e_0=e_{-1}`): :math:`p_T(\lambda)` and every :math:`h_j(\lambda)` of the method
    at :math:`(\alpha,\beta)` **equal** those of heavy ball :math:`(\alpha,\beta')` at that
    :math:`\lambda`, in the recursion :math:`e_{t+1}=ae_t-be_{t-1}`, :math:`a=1+b-\alpha
    \lambda`, :math:`b=\beta'`. (Nesterov is :math:`\gamma=\beta`: :math:`\beta'=\beta(1-
    \alpha\lambda)`, :mod:`dpbounds.tuning._certify_nesterov`'s N0.) :math:`\beta'` is affine
    in :math:`(\alpha,\beta)`, growing with :math:`\beta` and monotone in :math:`\alpha`
    (falling for :math:`\gamma>0`), so a box :math:`[\alpha_0,\alpha_1]\times[\beta_0,
    \beta_1]` maps into the heavy-ball box :math:`[\alpha_0,\alpha_1]\times[m_0,m_1]`,
    :math:`m_0=\beta_0-\gamma\lambda\alpha_1`, :math:`m_1=\beta_1-\gamma\lambda\alpha_0`
    (:math:`\gamma>0`; :math:`\alpha_0` and :math:`\alpha_1` swapped for :math:`\gamma<0`),
    widened by :math:`4u(|\beta|+|\gamma\lambda\alpha|)` at each end for rounding (not past
    :math:`\beta_1` for :math:`\gamma\ge0`, nor below :math:`\beta_0` for :math:`\gamma\le0`,
    where :math:`\beta'` is exactly on that side). Unlike
    Nesterov's, :math:`m_0` can be **negative** (:math:`\gamma>0`) or :math:`m_1` **above 1**
    (:math:`\gamma<0`) at points of the tuner's box, where heavy ball's bounds (proven for
    :math:`0\le\beta\le1`) do not apply: M1' and M2 are derived for those. (The tuner itself
    takes :math:`\gamma\ge0` only: ``quadratic_worst_case`` requires it; the bounds here hold
    for either sign.)

M1. **Heavy ball's one-eigenvalue box bounds where** :math:`0\le m_0\le m_1\le1`: every bound
    of :mod:`dpbounds.tuning._certify_error` at one eigenvalue on the heavy-ball box
    :math:`[\alpha_0,\alpha_1]\times[m_0,m_1]` (they use only its ends, and hold for every
    :math:`\alpha>0`, :math:`0\le\beta\le1`): step 1 (start term where :math:`h_j\ge0`), 1''
    (its negative side), 2 (the noise, the monotone Chebyshev terms included) and, at
    :math:`\lambda=L`, 1' and 4 (:math:`a<0`, unstable points: :math:`|p_T(L)|\ge1` where
    :math:`\alpha_0L\ge2(1+m_1)`).

M1'. **Momentum above 1** (:math:`0\le m_0`, :math:`m_1>1`; :math:`\gamma<0`): step 1 and
    M4 alone.
    Its argument needs only :math:`h_j\ge0` for :math:`j<T_1` on the box, which its condition
    :math:`a\ge2\sqrt b\cos(\pi/T_1)` gives for any :math:`b>0` (:math:`h_j=b^{j/2}U_j(c)`);
    its rounding estimate is scaled by :math:`m_1^{T_1}` (:math:`0\le h_j\le b^{j/2}(j+1)`,
    :math:`0\le p_t\le1` at the corner).

M2. **Negative momentum** (:math:`m_0\le m_1\le0`; a box with :math:`m_0<0<m_1\le1` is split
    at 0 and the smaller of the two parts' bounds taken, each part holding the points whose
    :math:`\beta'` lies in it).

    * *Start term, step 1 and 1'' carried over.* Step 1's argument (the derivatives
      :math:`\partial p_T/\partial a=\sum_{t<T}h_{T-1-t}p_t`,
      :math:`dp_T/db=\sum_{t<T}h_{T-1-t}(p_t-p_{t-1})`, :math:`p_t-p_{t-1}=-\alpha\lambda
      h_{t-1}`, and the walk to the corner :math:`(\alpha_1,m_1)`) nowhere uses the sign of
      :math:`b`, only :math:`h_j\ge0` on the box; for :math:`b\le0` and :math:`a\ge0`,
      :math:`h_{j+1}=ah_j+|b|h_{j-1}\ge0` for every :math:`j`. So where
      :math:`a\ge0` on the whole box (:math:`1+m_0-\alpha_1\lambda\ge0`; and step 1's
      condition on the part :math:`b\in[0,m_1]`, if any) :math:`A_T(\lambda)\ge w(\lambda)
      \max(p_{T_1}(\alpha_1,m_1),0)^2`. Likewise 1'' (:math:`\partial h_j/\partial a\ge0`,
      :math:`\partial h_j/\partial b\le0` where :math:`h\ge0`): on the rectangle
      :math:`[a_{lo},\infty)\times[m_0,\max(m_1,0)]` with :math:`a_{lo}=1+m_0-\alpha_1
      \lambda\ge0`, :math:`H_T\ge H_{T_0}(a_{lo},\max(m_1,0))`. Rounding as there
      (:math:`0\le h_j\le1` for :math:`b\le0`: :math:`a+|b|=1-\alpha\lambda\le1`).
    * *Past* :math:`1/\lambda` (:math:`\alpha_0\lambda>1`, :math:`m_1\le0`): with
      :math:`f_t=(-1)^te_t`, :math:`f_{t+1}=|a|f_t+|b|f_{t-1}`, :math:`f_0=1`,
      :math:`f_{-1}=-1`, so :math:`f_1=|a|-|b|=\alpha\lambda-1>0` and every :math:`f_t\ge0`;
      the recursion run at the least coefficients :math:`r=\alpha_0\lambda-1-m_1\le|a|`,
      :math:`q=-m_1\le|b|` from :math:`f_1=\alpha_0\lambda-1` is a lower bound of
      :math:`|p_T(\lambda)|` (induction: every term a product of nonnegative numbers), and
      :math:`g_j=(-1)^jh_j` the same from :math:`g_0=1`, :math:`g_{-1}=0` bounds
      :math:`|h_j|` (Nesterov's N2 with its own :math:`r,q`). The start bound is taken at the
      least value over each horizon interval, the noise at its first horizon.
    * *Real roots of opposite signs* (any :math:`b<0`; :math:`a` of either sign): the roots
      of :math:`z^2-az+b` are :math:`r_1\in(0,1)` (:math:`z^2-az+b` is :math:`b<0` at 0 and
      :math:`\alpha\lambda>0` at 1) and :math:`r_2=-n<0`. From :math:`e_t-r_1e_{t-1}=
      r_2^t(1-r_1)` and :math:`e_t-r_2e_{t-1}=r_1^t(1-r_2)` (the factorised recursion,
      :math:`e_0=e_{-1}=1`), :math:`e_t=(r_1^{t+1}(1+n)-r_2^{t+1}(1-r_1))/(r_1+n)`; likewise
      :math:`h_j=(r_1^{j+1}-r_2^{j+1})/(r_1+n)`. So for odd :math:`t`,
      :math:`|e_t|\ge\max(n^{t+1}(1-r_1)-r_1^{t+1}(1+n),\,r_1^{t+1}(1+n)-n^{t+1}(1-r_1))/
      (r_1+n)`, for even :math:`t` (both terms of one sign) :math:`|e_t|\ge(r_1^{t+1}(1+n)+
      n^{t+1}(1-r_1))/(r_1+n)`; :math:`|h_j|\ge|n^{j+1}-r_1^{j+1}|/(r_1+n)` (odd :math:`j`),
      :math:`(n^{j+1}+r_1^{j+1})/(r_1+n)` (even :math:`j`), and
      :math:`|h_j|\le(n^{j+1}+r_1^{j+1})/(r_1+n)` as M3's tail (stationary minus tail, where
      both roots are inside the unit disc on the box), each term at its extreme on the box:
      :math:`r_1=(a+\sqrt{a^2+4q})/2` grows with :math:`a` and :math:`q=-b`,
      :math:`n=(\sqrt{a^2+4q}-a)/2` falls with :math:`a` and grows with :math:`q`
      (:math:`\times(1\mp10^{-12})` for rounding, the result :math:`\times(1-10^{-9})`). This
      sees an alternating mode that is unstable (:math:`n>1`) before :math:`\alpha\lambda`
      reaches 1, e.g. at :math:`L` for :math:`\gamma=1.5`, where the bounds above gave nothing
      and the branch and bound stalled on such boxes (without it: its bound 0.84 of the tuned
      worst case at 8000 boxes, the weakest leaf near :math:`(0.90,0.69)`, whose worst case is
      0.21; with it 0.997).
    * *Noise of any stable box*: M3.

M3. **Noise of a box with any momentum** (:math:`m_0,m_1` anywhere). :math:`h_0=1`,
    :math:`h_1=a`: :math:`U_k\ge\frac\lambda2\alpha_0^2(1+[k\ge2]\min a^2)`, :math:`a\in
    [1+m_0-\alpha_1\lambda,1+m_1-\alpha_0\lambda]`. *Stationary minus tail*: the sequence
    from :math:`k` on is :math:`h_{k+i}=h_kg_i-bh_{k-1}g_{i-1}` (:math:`g=h`'s own impulse
    response, :math:`g_{-1}=0`), so by Cauchy-Schwarz (:math:`|\sum_ig_ig_{i-1}|\le
    \Sigma_\infty`) :math:`\Sigma_\infty-\Sigma_k\le\Sigma_\infty(|h_k|+|b||h_{k-1}|)^2`, for
    any sign of :math:`b`; where the box is stable (:math:`m_0>-1`, :math:`m_1<1`,
    :math:`\alpha_1\lambda<2(1+m_0)`: both roots inside the unit disc) the AR(2) variance is
    :math:`\Sigma_\infty=(1+b)/((1-b)((1+b)^2-a^2))` and :math:`(1+b)^2-a^2=\alpha\lambda(2+2b-
    \alpha\lambda)`, so :math:`\frac\lambda2\alpha^2\Sigma_\infty=\frac{\alpha(1+b)}{2(1-b)
    (2+2b-\alpha\lambda)}\ge\frac{\alpha_0(1+m_0)}{2(1-m_0)(2+2m_1-\alpha_0\lambda)}`;
    :math:`|h_k|\le(k+1)\rho^k` (:math:`h_k=\sum_ir_1^ir_2^{k-i}`) with :math:`\rho\le
    \max(\sqrt{(m_1)_+},(A+\sqrt{A^2-4m_0})/2)` (:math:`A=\max|a|`; the larger real root's
    modulus grows with :math:`|a|` and falls with :math:`b`, complex roots have modulus
    :math:`\sqrt b`). *Invariant* (:math:`m_0>0`): :math:`h_j^2-ah_jh_{j-1}+bh_{j-1}^2=b^j`
    (induction) and :math:`x^2-axy+by^2\le(\max(1,m_1)+A/2)(x^2+y^2)` give
    :math:`\Sigma_k\ge\sum_{j=1}^{k-1}m_0^j/(2\max(1,m_1)+A)` (heavy ball's, for
    :math:`m_1>1` too).

M4. **The phase on a box at one eigenvalue** (as Nesterov's N5, with heavy ball's ranges).
    Where :math:`0<m_0` and the roots are complex on the whole heavy-ball box:
    :math:`c=\cos\theta=a/(2\sqrt b)\in[c_{lo},c_{hi}]` (numerator and denominator each at
    its extreme end), :math:`p_T=b^{T/2}R\cos(T\theta-\varphi)` (step 5 of
    :mod:`dpbounds.tuning._certify_error`), :math:`\varphi=\arctan B`,
    :math:`B=(\cos\theta-\sqrt b)/\sin\theta`, which falls in :math:`\theta`
    (:math:`dB/d\theta=(\sqrt b\cos\theta-1)/\sin^2\theta<0`) and in :math:`\sqrt b`: so
    :math:`\varphi\in[\arctan B(\theta_{hi},\sqrt{m_1}),\arctan B(\theta_{lo},\sqrt{m_0})]`,
    :math:`\theta\in[\arccos c_{hi},\arccos c_{lo}]`, the phase :math:`\psi=T\theta-\varphi`
    in :math:`[T_0\theta_{lo}-\varphi_{hi},T_1\theta_{hi}-\varphi_{lo}]` (widened by
    :math:`10^{-9}(1+|\psi|)`), and where that holds no zero of cos,
    :math:`A_T(\lambda)\ge w(\lambda)m_0^{T_1}\max(1,\alpha_0\lambda/(1-c_{\min}^2))
    \min|\cos|^2` (:math:`m_0^{T_0}` where :math:`m_0>1`). For :math:`m_1>1` (M1') it needs
    :math:`a<2` on the box (:math:`1+m_1-\alpha_0\lambda<2`: then :math:`\sqrt b\cos\theta=
    a/2<1`, what the fall of :math:`B` in :math:`\theta` uses; for :math:`m_1\le1` it holds
    wherever the roots are complex). It sees the phase of the box itself: on the small boxes
    near the optimum it is near the start term there (what Nesterov's N5 did: its bracket
    1.36 -> 1.004).

M5. **Eigenvalues used** (each an admissible instance, step 0 of
    :mod:`dpbounds.tuning._certify_error`: :math:`W\ge A_T(\lambda_1)+(\ell+\sigma)U_T(\lambda_1)
    +(d-1)\ell\max_\lambda U_T` and its :math:`d\ge2` form, :math:`W\ge(d\ell+\sigma)
    \max_\lambda U_T`): :math:`\Lambda` = :data:`_N_GEOM` geometric points of :math:`[\mu,L]`
    (ends included) and :math:`\mu2^{i/8}`, :math:`i<` :data:`_N_NEAR_MU` (the slow mode's
    start term, whose peak sits near :math:`\mu`), each term replaced by its box bound
    (M1-M4). Nothing of heavy ball's step 5/5'/6 or Nesterov's N4/N6 is used (each relies on
    a momentum constant in :math:`\lambda`, or on :math:`\gamma=\beta`); leaving a bound out
    only weakens the result.

**Coverage.** The tuner's box (:func:`~dpbounds.tuning._linear_error.tune_linear_error`:
:math:`\alpha L\in[10^{-3},4]`, :math:`\beta\in[0,1-10^{-4}]`) and more: boxes in
:math:`(\log\alpha,-\log(1-\beta))` between :math:`\alpha_{\min}=10^{-3}/(\mu T_{\max}^2)`
and :math:`4/L`, up to :math:`1-\beta=10^{-3}/T_{\max}`, and the tails
:math:`\alpha\in[0,\alpha_{\min}]`, :math:`\beta\in[\beta_Y,1]` (the bounds hold on the
closed box by continuity), best-first cutting, as
:func:`~dpbounds.tuning._certify_error.certify_error_minimum`: **every**
:math:`0<\alpha\le4/L` (:math:`\times(1+10^{-9})`, :data:`ALPHA_L_MAX`),
:math:`0\le\beta<1`, :math:`1\le T\le T_{\max}`. Points with
:math:`\alpha>4/L` are **not** covered (for :math:`\gamma<0` some are stable there; the tuner
never searches them, and its tuned row is checked to lie in the covered family before the
bound is reported). A slice (``alpha=`` or ``beta=`` fixed) as there.

**Rounding** as :mod:`dpbounds.tuning._certify_error` (first-order margins, not interval
arithmetic); every box bound is multiplied by :math:`1-10^{-9}`.

**What it gives** (measured 2026-12-03, :func:`dpbounds.extend.tune` with
``objective="error"`` on a Laplace plug-in ``LinearMomentum(alpha="alpha", beta="beta",
gamma=...)``, :math:`L=1`, :math:`N=1000`, :math:`\varepsilon=1`, :math:`S_1=R=1`; the
certified gap ``worst_case_upper / lower_bound - 1`` with the method-independent bound alone
(before) and with this branch and bound (after), and the CPU-s of ``proven_lower_bound``):

====================================  ============  ============  ========
problem                               gap before    gap after     CPU-s
====================================  ============  ============  ========
gamma=0.5, mu=0.1, d=4, T<=30         166%          0.10%         1.1
gamma=0.5, mu=0.1, d=1, T<=30         175%          0.62%         3.9
gamma=1.5, mu=0.1, d=4, T<=30         163%          0.17%         3.7
gamma=0.5, mu=0.01, d=4, T<=100       116%          0.18%         10.6
gamma=1.5, mu=0.01, d=4, T<=100       165%          0.20%         8.9
gamma=0.5, mu=0.001, d=4, T<=300      81%           0.22%         14.3
====================================  ============  ============  ========

M1 includes heavy ball's step 7 (:mod:`dpbounds.tuning._certify_error`: the closed form of an
oscillating mode, start term and noise, with the exact range of the angle on the box) on M0's
heavy-ball box at each eigenvalue of M5 (``_CLOSED_FORM``). Without it the last two rows were
6.6% and 14%, the box budget's (:data:`_MAX_BOXES`): near the optimum the bounds taken at the
box's ends lose :math:`T` times the box's width (``bench/momentum_bracket.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

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
    _cos_pad,
    _Problem,
    _start_at_L_lower,
    _start_negative_lower,
    _sum_sq_lower,
    combine_instances,
    make_problem,
)
from dpbounds.tuning._certify_nesterov import alternating_corner

__all__: list[str] = []

_MAX_BOXES = 8_000
_CLOSED_FORM = True  # heavy ball's step 7 in M1 (False: left out, for comparisons)
_CHUNK_CELLS = 2 ** 20
#: M5: geometric eigenvalues of [mu, L] (ends included), and mu 2^(i/8), i < _N_NEAR_MU
_N_GEOM = 12
_N_NEAR_MU = 9
#: the largest step times L covered: the tuner's 4 (_linear_error.tune_linear_error), and a
#: hair more (its exp(log(4 / L)) may round above 4 / L)
ALPHA_L_MAX = 4.0 * (1.0 + 1e-9)


def eigenvalues(mu: float, L: float) -> list[float]:
    """The set :math:`\\Lambda` of M5 (sorted, no repeats)."""
    if L <= mu:
        return [float(mu)]
    near = [mu * 2.0 ** (i / 8.0) for i in range(_N_NEAR_MU)]
    lams = np.unique(np.concatenate([np.geomspace(mu, L, _N_GEOM), [v for v in near if v < L],
                                     [mu, L]]))
    return [float(v) for v in lams]


def mapped_momentum(gamma: float, lam: float, al0, al1, b0, b1) -> tuple[np.ndarray, np.ndarray]:
    r"""M0: the range ``(m0, m1)`` of :math:`\beta'=\beta-\alpha\lambda\gamma` over each box,
    widened for rounding (not clipped)."""
    g = float(gamma) * float(lam)
    t0, t1 = (g * al1, g * al0) if gamma > 0 else (g * al0, g * al1)
    m0 = b0 - t0
    m1 = b1 - t1
    m0 = m0 - 4.0 * _U * (np.abs(b0) + np.abs(t0)) - 1e-300
    m1 = m1 + 4.0 * _U * (np.abs(b1) + np.abs(t1)) + 1e-300
    # exactly: beta' <= beta for gamma >= 0, beta' >= beta for gamma <= 0 (no widening past)
    if gamma >= 0:
        m1 = np.minimum(m1, b1)
    if gamma <= 0:
        m0 = np.maximum(m0, b0)
    return m0, m1


def _start_positive_any(prob1: _Problem, lam: float, al0, al1, m0, m1) -> np.ndarray:
    r""":math:`\max(p_{T_1}(\alpha_1,m_1),0)^2` where step 1 holds on the heavy-ball box
    ``[al0, al1] x [m0, m1]`` (M1, M2: :math:`m_0\ge-1`, :math:`m_1\le1`), boxes by
    horizon intervals (``prob1``'s weight is 1)."""
    Thi = prob1.Thi
    a_c = np.nextafter(np.nextafter((1.0 + m1) - al1 * lam, -np.inf), -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        P_end = _corner_residuals(a_c, m1, Thi)
    C = np.cos(math.pi / Thi.astype(float))[None, :]
    s0 = np.sqrt(np.maximum(m0, 0.0))[:, None]
    s1 = np.sqrt(np.maximum(m1, 0.0))[:, None]
    s = np.clip(C, s0, s1)
    # h_j >= 0 on the part b in [max(m0, 0), max(m1, 0)]: step 1's quadratic in s = sqrt(b)
    cond = (s * s - 2.0 * s * C + (1.0 - (al1 * lam)[:, None])) >= _COND_MARGIN
    # and on the part b < 0: a >= 0 there (least at (alpha_1, m_0))
    a_min = (1.0 + m0) - al1 * lam
    cond &= ((m0 >= 0.0) | (a_min >= _COND_MARGIN))[:, None]
    # rounding as step 1's, with h_j <= max(1, m1)^(j/2) (j + 1) where m1 > 1 (M1')
    with np.errstate(invalid="ignore", over="ignore"):
        grow = np.exp(np.log(np.maximum(m1, 1.0))[:, None] * Thi.astype(float)[None, :])
        err = 4.0 * _U * (Thi.astype(float)[None, :] + 1.0) ** 2 * grow
        p = np.where(cond & np.isfinite(P_end) & np.isfinite(err), np.maximum(P_end - err, 0.0),
                     0.0)
    return p * p


def _past_any(prob1: _Problem, lam: float, al0, m1) -> tuple[np.ndarray, np.ndarray]:
    r"""M2, past :math:`1/\lambda` (``al0 lam > 1``, ``m1 <= 0``): (start bound with weight
    1, noise bound), boxes by horizon intervals (0 elsewhere)."""
    Tlo, Thi = prob1.Tlo, prob1.Thi
    c0 = np.maximum((al0 * lam - 1.0) * (1.0 - 1e-12), 0.0)
    q = np.maximum(-m1, 0.0)
    ok = (c0 > 0) & (m1 <= 0.0)
    r = np.where(ok, c0 + q, 0.0)
    q = np.where(ok, q, 0.0)
    # f_1 = r - q = c0 >= 0 (Nesterov's N2 recursions with g1 = r, g2 = q)
    fmin, u = alternating_corner(r, q, lam, al0, Tlo, Thi)
    okc = ok[:, None]
    return np.where(okc, fmin * fmin, 0.0), np.where(okc, u, 0.0)


#: at most this many (box, step) cells per block of M2's closed forms (memory)
_ROOT_CELLS = 2 ** 21


def _real_roots_any(prob1: _Problem, lam: float, al0, al1, m0, m1
                    ) -> tuple[np.ndarray, np.ndarray]:
    r"""M2, real roots of opposite signs (``m1 <= 0``): (start bound with weight 1, noise
    bound), boxes by horizon intervals, from the closed forms of :math:`e_t` and :math:`h_j`
    in the roots with each root's modulus at its extreme on the box (in blocks of rows)."""
    step = max(1, _ROOT_CELLS // (int(prob1.Thi[-1]) + 1))
    if al0.size > step:
        parts = [_real_roots_any(prob1, lam, *(v[i:i + step] for v in (al0, al1, m0, m1)))
                 for i in range(0, al0.size, step)]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    Tlo, Thi = prob1.Tlo, prob1.Thi
    top = int(Thi[-1])
    a_lo = np.nextafter(np.nextafter((1.0 + m0) - al1 * lam, -np.inf), -np.inf)
    a_hi = np.nextafter(np.nextafter((1.0 + m1) - al0 * lam, np.inf), np.inf)
    q_lo, q_hi = np.maximum(-m1, 0.0), np.maximum(-m0, 0.0)
    ok = m1 <= 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        def r_pos(a, q):  # the root in (0, 1): grows with a and q
            return 0.5 * (a + np.sqrt(a * a + 4.0 * q))

        def r_neg(a, q):  # |the negative root|: falls with a, grows with q
            return 0.5 * (np.sqrt(a * a + 4.0 * q) - a)

        tight = 1e-12
        p_lo, p_hi = r_pos(a_lo, q_lo) * (1 - tight), r_pos(a_hi, q_hi) * (1 + tight)
        n_lo, n_hi = r_neg(a_hi, q_lo) * (1 - tight), r_neg(a_lo, q_hi) * (1 + tight)
        den = (p_hi + n_hi)[:, None]
        t1 = np.arange(1, top + 2, dtype=float)[None, :]  # t + 1 for t = 0..top
        lp_lo, lp_hi = np.log(p_lo)[:, None], np.log(p_hi)[:, None]
        ln_lo, ln_hi = np.log(n_lo)[:, None], np.log(n_hi)[:, None]
        Pl, Ph = np.exp(t1 * lp_lo), np.exp(t1 * lp_hi)
        Nl, Nh = np.exp(t1 * ln_lo), np.exp(t1 * ln_hi)
        # (r1 + n) e_t = r1^(t+1) (1 + n) + (-1)^t n^(t+1) (1 - r1): for even t both terms
        # are >= 0, for odd t the dominant one less the other; r1 - r2 = r1 + n <= p_hi + n_hi
        even = (np.arange(0, top + 1) % 2 == 0)[None, :]
        e_alt = (Nl * (1.0 - p_hi)[:, None] - Ph * (1.0 + n_hi)[:, None]) / den
        e_slow = (Pl * (1.0 + n_lo)[:, None] - Nh * (1.0 - p_lo)[:, None]) / den
        e_sum = (Pl * (1.0 + n_lo)[:, None] + Nl * (1.0 - p_hi)[:, None]) / den
        e = np.where(even, np.maximum(e_sum, 0.0), np.maximum(np.maximum(e_alt, e_slow), 0.0))
        e = np.where(np.isfinite(e), np.minimum(e, 1e150), 0.0) * (1.0 - 1e-9)
        emin = np.minimum.reduceat(e[:, 1:], Tlo - 1, axis=1)  # t = 1..top
        # (r1 + n) h_j = r1^(j+1) + (-1)^j n^(j+1): likewise
        h = np.where(even, (Pl + Nl) / den,
                     np.maximum(np.maximum((Nl - Ph) / den, (Pl - Nh) / den), 0.0))
        h = np.where(np.isfinite(h), np.minimum(h, 1e150), 0.0) * (1.0 - 1e-9)
        sums = np.cumsum(h * h, axis=1)  # sum_{j <= t}
        u = np.minimum(sums[:, Tlo - 1], 1e300)  # sum_{j < k}, k = Tlo
        u = 0.5 * lam * (al0 * al0)[:, None] * u
        # stationary minus tail (M3) with |h_j| <= (r1^(j+1) + n^(j+1)) / (r1 + n)
        k = Tlo.astype(float)[None, :]
        den_lo = (p_lo + n_lo)[:, None]

        def h_up(j):
            return (np.exp((j + 1.0) * lp_hi) + np.exp((j + 1.0) * ln_hi)) / den_lo

        tail = h_up(k) + q_hi[:, None] * np.where(k >= 1, h_up(k - 1.0), 0.0)
        stable = ((m0 > -1.0) & (al1 * lam < 2.0 * (1.0 + m0) * (1.0 - 1e-12)))[:, None]
        u_inf = (al0 * (1.0 + m0) / (2.0 * (1.0 - m0) * (2.0 + 2.0 * m1 - al0 * lam)))[:, None]
        u2 = np.where(stable & (u_inf > 0) & (p_hi < 1.0)[:, None] & (n_hi < 1.0)[:, None],
                      u_inf * np.maximum(1.0 - tail * tail, 0.0), 0.0)
        u = np.maximum(u, np.where(np.isfinite(u2), u2, 0.0))
    okc = ok[:, None]
    S = np.where(okc & np.isfinite(emin), emin * emin, 0.0)
    return S, np.where(okc & np.isfinite(u), u, 0.0)


def _noise_any(lam: float, al0, al1, m0, m1, k) -> np.ndarray:
    r"""M3: a lower bound of :math:`U_k(\lambda)` on the box (rows) at each ``k`` (columns),
    for any momentum range ``[m0, m1]``."""
    kf = np.asarray(k, dtype=float)[None, :]
    al0c, al1c, m0c, m1c = (v[:, None] for v in (al0, al1, m0, m1))
    a_lo, a_hi = 1.0 + m0c - al1c * lam, 1.0 + m1c - al0c * lam
    A = np.maximum(np.abs(a_lo), np.abs(a_hi))
    amin2 = np.where((a_lo <= 0) & (a_hi >= 0), 0.0, np.minimum(a_lo * a_lo, a_hi * a_hi))
    scale = 0.5 * lam * al0c * al0c
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        u1 = scale * (1.0 + np.where(kf >= 2, amin2, 0.0))
        stable = (m0c > -1.0) & (m1c < 1.0) & (al1c * lam < 2.0 * (1.0 + m0c) * (1.0 - 1e-12))
        u_inf = al0c * (1.0 + m0c) / (2.0 * (1.0 - m0c) * (2.0 + 2.0 * m1c - al0c * lam))
        rho = np.maximum(np.sqrt(np.maximum(m1c, 0.0)),
                         0.5 * (A + np.sqrt(np.maximum(A * A - 4.0 * m0c, 0.0))))
        B = np.maximum(np.abs(m0c), np.abs(m1c))
        lrho = np.log(rho)
        tail = (np.exp(np.log(kf + 1.0) + kf * lrho)
                + B * np.where(kf >= 1, np.exp(np.log(np.maximum(kf, 1.0)) + (kf - 1.0) * lrho),
                               0.0))
        u2 = np.where(stable & (u_inf > 0), u_inf * np.maximum(1.0 - tail * tail, 0.0), 0.0)
        u2 = np.where(np.isfinite(u2), u2, 0.0)
        pos = m0c > 0
        s5 = np.where(m0c < 1.0, -np.expm1((kf - 1.0) * np.log(m0c)) / (1.0 - m0c) * m0c,
                      np.where(m0c == 1.0, kf - 1.0,
                               m0c * np.expm1((kf - 1.0) * np.log(m0c)) / (m0c - 1.0)))
        s5 = s5 / (2.0 * np.maximum(1.0, m1c) + A)
        u5 = np.where(pos & (kf >= 2) & np.isfinite(s5), scale * s5 * (1.0 - 1e-12), 0.0)
        u = np.maximum(np.maximum(u1, u2), u5)
    u = np.where(np.isfinite(u), u, 0.0)
    return np.maximum.accumulate(u, axis=1)


def _phase_any(prob1: _Problem, lam: float, al0, al1, m0, m1) -> np.ndarray:
    r"""M4: a lower bound of :math:`p_T(\lambda)^2` on the heavy-ball box ``[al0, al1] x
    [m0, m1]`` (``0 < m0 <= m1 <= 1``, complex roots throughout), boxes by horizon intervals
    (0 where it does not apply)."""
    T0, T1 = prob1.Tlo[None, :].astype(float), prob1.Thi[None, :].astype(float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        s0, s1 = np.sqrt(np.maximum(m0, 0.0)), np.sqrt(np.maximum(m1, 0.0))
        n_lo = np.nextafter(np.nextafter((1.0 + m0) - al1 * lam, -np.inf), -np.inf)
        n_hi = np.nextafter(np.nextafter((1.0 + m1) - al0 * lam, np.inf), np.inf)
        # rounding of c: the numerator cancels where alpha lam ~ 1 + beta and is divided by
        # 2 sqrt(beta) (heavy ball's _cos_pad; a fixed 1e-12 let the bound exceed the exact
        # start term by up to 1e-6 relative at beta < 1e-6)
        pad = np.maximum(1e-12, _cos_pad(al1, lam, s0))
        c_lo = np.where(n_lo >= 0, n_lo / (2.0 * s1), n_lo / (2.0 * s0)) - pad
        c_hi = np.where(n_hi >= 0, n_hi / (2.0 * s0), n_hi / (2.0 * s1)) + pad
        # a < 2 (sqrt(b) cos(theta) < 1: B falls in theta) holds for m1 <= 1; checked above
        ok = (m0 > 0) & (n_hi < 2.0 - 1e-12) & (c_hi < 1.0 - 1e-9) & (c_lo > -1.0 + 1e-9)
        th_lo, th_hi = np.arccos(np.clip(c_hi, -1.0, 1.0)), np.arccos(np.clip(c_lo, -1.0, 1.0))
        ph_hi = np.arctan((np.cos(th_lo) - s0) / np.sin(th_lo))
        ph_lo = np.arctan((np.cos(th_hi) - s1) / np.sin(th_hi))
        ps_lo = T0 * th_lo[:, None] - ph_hi[:, None]
        ps_hi = T1 * th_hi[:, None] - ph_lo[:, None]
        slack = 1e-9 * (1.0 + np.abs(ps_lo) + np.abs(ps_hi))
        ps_lo, ps_hi = ps_lo - slack, ps_hi + slack
        zero = np.floor((ps_hi - 0.5 * math.pi) / math.pi) >= np.ceil(
            (ps_lo - 0.5 * math.pi) / math.pi)
        cmin = np.where(zero, 0.0, np.minimum(np.abs(np.cos(ps_lo)), np.abs(np.cos(ps_hi))))
        cmin = np.maximum(cmin - 1e-12, 0.0)
        cmin2 = np.where((c_lo <= 0) & (c_hi >= 0), 0.0, np.minimum(c_lo ** 2, c_hi ** 2))
        r2 = np.maximum(1.0, al0 * lam / np.maximum(1.0 - cmin2, 1e-300))
        # b^T >= m0^T1 (m0 <= 1) or m0^T0 (m0 > 1)
        decay = np.exp(np.where((m0 <= 1.0)[:, None], T1, T0) * np.log(m0)[:, None])
        bound = decay * (r2 * (1.0 - 1e-12))[:, None] * cmin * cmin
    return np.where(ok[:, None] & np.isfinite(bound), bound, 0.0)


def _heavy_part(prob1: _Problem, lam: float, al0, al1, m0, m1) -> tuple[np.ndarray, np.ndarray]:
    """M1 + M4 on the heavy-ball box with ``0 <= m0 <= m1 <= 1`` (per row): (p^2 bound,
    U bound)."""
    S = np.maximum(_start_positive_any(prob1, lam, al0, al1, m0, m1),
                   _start_negative_lower(prob1, lam, al0, al1, m0, m1))
    S = np.maximum(S, _phase_any(prob1, lam, al0, al1, m0, m1))
    if lam == prob1.L:
        S = np.maximum(S, _start_at_L_lower(prob1, al0, m0, m1))
    U = _sum_sq_lower(lam, al0, al1, m0, m1, prob1.Tlo)
    if _CLOSED_FORM:  # heavy ball's step 7 on the heavy-ball box (complex roots throughout)
        lams = np.full(al0.size, lam)
        S = np.maximum(S, _closed_form_start(prob1, lams, al0, al1, m0, m1, prob1.Tlo,
                                             prob1.Thi))
        U = np.maximum(U, _closed_form_sum_sq(lams, al0, al1, m0, m1, prob1.Tlo))
    return S, U


def _negative_part(prob1: _Problem, lam: float, al0, al1, m0, m1) -> tuple[np.ndarray, np.ndarray]:
    """M2 + M3 on the heavy-ball box with ``m0 <= m1 <= 0`` (per row)."""
    S = np.maximum(_start_positive_any(prob1, lam, al0, al1, m0, m1),
                   _start_negative_lower(prob1, lam, al0, al1, m0, np.zeros_like(m1)))
    Sp, Up = _past_any(prob1, lam, al0, m1)
    Sr, Ur = _real_roots_any(prob1, lam, al0, al1, m0, m1)
    U = np.maximum(np.maximum(_noise_any(lam, al0, al1, m0, m1, prob1.Tlo), Up), Ur)
    return np.maximum(np.maximum(S, Sp), Sr), U


def _eigen_terms(prob: _Problem, gamma: float, lam: float, al0, al1, b0, b1
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(start bound, noise bound) of M0-M4 at ``lam``, boxes by horizon intervals."""
    prob1 = replace(prob, gap_form=True, w_mu=1.0, w_L=1.0)
    w = prob.w_mu if prob.gap_form else 0.5 * lam * prob.dist_sq
    m0, m1 = mapped_momentum(gamma, lam, al0, al1, b0, b1)
    n, m = al0.size, prob.Tlo.size
    S = np.zeros((n, m))
    U = _noise_any(lam, al0, al1, m0, m1, prob.Tlo)  # M3: any momentum
    heavy = (m0 >= 0.0) & (m1 <= 1.0)
    if np.any(heavy):
        i = np.flatnonzero(heavy)
        Sh, Uh = _heavy_part(prob1, lam, al0[i], al1[i], m0[i], m1[i])
        S[i], U[i] = np.maximum(S[i], Sh), np.maximum(U[i], Uh)
    over = (m0 >= 0.0) & (m1 > 1.0)
    if np.any(over):  # M1': step 1 and M4 alone
        i = np.flatnonzero(over)
        S[i] = np.maximum(S[i], np.maximum(
            _start_positive_any(prob1, lam, al0[i], al1[i], m0[i], m1[i]),
            _phase_any(prob1, lam, al0[i], al1[i], m0[i], m1[i])))
    neg = m1 <= 0.0
    if np.any(neg):
        i = np.flatnonzero(neg)
        Sn, Un = _negative_part(prob1, lam, al0[i], al1[i], m0[i], m1[i])
        S[i], U[i] = np.maximum(S[i], Sn), np.maximum(U[i], Un)
    both = (m0 < 0.0) & (m1 > 0.0) & (m1 <= 1.0)
    if np.any(both):  # split at b = 0: each point lies in one part, the smaller bound holds
        i = np.flatnonzero(both)
        z = np.zeros(i.size)
        Sn, Un = _negative_part(prob1, lam, al0[i], al1[i], m0[i], z)
        Sh, Uh = _heavy_part(prob1, lam, al0[i], al1[i], z, m1[i])
        S[i] = np.maximum(S[i], np.minimum(Sn, Sh))
        U[i] = np.maximum(U[i], np.minimum(Un, Uh))
    return w * S, U


def momentum_box_lower(prob: _Problem, gamma: float, al0, al1, b0, b1,
                       by_interval: bool = False) -> np.ndarray:
    r"""The lower bound of :math:`\min_T W` of the method with the fixed ``gamma`` on each box
    (module docstring M0-M5); with ``by_interval``, of :math:`W` on each box (rows) and horizon
    interval (columns)."""
    al0, al1, b0, b1 = (np.asarray(v, dtype=float).ravel() for v in
                        np.broadcast_arrays(al0, al1, b0, b1))
    terms = [_eigen_terms(prob, gamma, lam, al0, al1, b0, b1)
             for lam in eigenvalues(prob.mu, prob.L)]
    Umax = terms[0][1]
    for _, U in terms[1:]:
        Umax = np.maximum(Umax, U)
    ell, smp, d = prob.ell[None, :], prob.smp, prob.d
    with np.errstate(invalid="ignore", over="ignore"):
        W = (d * ell + smp) * Umax
        for S, U1 in terms:
            W = combine_instances(W, S, U1, ell, Umax, smp, d)
        W = np.where(np.isnan(W), 0.0, W)
    return (W if by_interval else np.min(W, axis=1)) * (1.0 - _SAFETY)


def certify_momentum_minimum(mu: float, L: float, d: int, Tmax: int, laplace_var: Callable,
                             smp: float, *, gamma: float, best: float,
                             initial_gap: float | None = None, dist_sq: float | None = None,
                             rtol: float = 1e-3, max_boxes: int | None = None, cells: int = 24,
                             any_noise: bool = False, alpha: float | None = None,
                             beta: float | None = None) -> ErrorBracket:
    r"""Branch and bound (module docstring): a proven lower bound of :math:`\min W` of the
    linear momentum method with the constant ``gamma`` over every :math:`0<\alpha\le4/L`,
    :math:`0\le\beta<1`, :math:`1\le T\le T_{\max}` (or the slice with ``alpha`` or ``beta``
    fixed). ``best``: the incumbent (boxes whose bound reaches ``best / (1 + rtol)`` are not
    cut; the result never exceeds it). Arguments as
    :func:`~dpbounds.tuning._certify_error.certify_error_minimum`."""
    if not math.isfinite(gamma):
        raise ValueError(f"gamma must be finite, got {gamma!r}")
    if alpha is not None and not (0.0 < alpha <= ALPHA_L_MAX / L):
        raise ValueError(f"alpha must be in (0, 4/L] (the covered family), got {alpha!r}")
    if beta is not None and not (0.0 <= beta < 1.0):
        raise ValueError(f"beta must be in [0, 1) (a fixed momentum), got {beta!r}")
    if max_boxes is None:
        max_boxes = _MAX_BOXES
    prob = make_problem(mu, L, d, Tmax, laplace_var, smp, initial_gap, dist_sq, any_noise)
    x0 = math.log(1e-3 / (mu * float(Tmax) ** 2))
    x1 = math.log(ALPHA_L_MAX / L)
    y1 = math.log(1e3 * Tmax)
    nx = max(int(math.ceil(x1 - x0)), cells)
    ny = max(int(math.ceil(y1)), cells // 2)
    xs, ys = np.linspace(x0, x1, nx + 1), np.linspace(0.0, y1, ny + 1)

    def box_lows(prob_: _Problem, al0, al1, b0, b1, need: float) -> np.ndarray:
        out = np.empty(al0.size)
        chunk = max(16, min(2048, _CHUNK_CELLS // max(prob_.Tlo.size, 1)))
        for s in range(0, al0.size, chunk):
            sl = slice(s, s + chunk)
            out[sl] = momentum_box_lower(prob_, gamma, al0[sl], al1[sl], b0[sl], b1[sl])
        return out

    return _bracket_on_grid(prob, xs, ys, alpha, beta, best, rtol, max_boxes, box_lows)
