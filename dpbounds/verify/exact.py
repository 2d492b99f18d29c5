r"""Exact values a run must reproduce: the oracles of the two-sided ``== exact`` verdicts.

Everything here is computed from the *definitions*, independently of the algorithms' code:

* :func:`tree_noise_covariance` — the per-coordinate covariance of the tree noise
  :math:`e_t=\hat m_t-m_t` of Tran & Cutkosky's Algorithm 1 (a sum over the dyadic nodes of
  :math:`\mathrm{COMPOSE}(1,t)`, node :math:`[a,b]` weighted :math:`(1-\alpha)^{t-b}`) and of the
  reconstructed Algorithm 2 (the geometric re-injection
  :math:`e_t=n_t+(1-\gamma)e_{t-S}`, so :math:`e_t=\sum_k(1-\gamma)^k n_{t-kS}` with the
  *shared* nodes of :math:`n_t, n_{t-S}, \dots` added before squaring) **[DERIVED]** from the
  recursions written in :mod:`dpbounds.algorithms.tree_momentum`'s docstring. The noise is an
  isotropic Gaussian vector, so :math:`\lVert e_t\rVert^2` has mean :math:`d\,c_{tt}` and the
  sum over traced steps has variance :math:`2d\sum_{t,t'}c_{tt'}^2` (both exact);
* :func:`tree_sigma_for_epsilon` — the node noise the zCDP accountant requires for the
  *claimed* :math:`(\varepsilon,\delta)` (Bun & Steinke Prop. 1.3, standard conversion
  :math:`\varepsilon=\rho+2\sqrt{\rho\log(1/\delta)}` inverted in closed form, and
  :math:`\rho=\sum_i K_i\Delta_i^2/(2\sigma_i^2)`, Tran & Cutkosky Thm 10 **[DERIVED]**);
* :func:`momentum_exact` — :math:`\mathbb E[F(x_T)-F^*]` of heavy ball / Nesterov with
  full-batch gradients and Laplace noise on a quadratic, by the linear recursion of the mean and
  covariance in the Hessian's eigenbasis (exact: the noise enters linearly, its covariance
  :math:`2b_t^2 I` is rotation invariant) **[DERIVED]**.

Example
-------
>>> import numpy as np
>>> from dpbounds.verify.exact import tree_noise_covariance
>>> c = tree_noise_covariance([1, 2, 3], alpha=0.5, sigma_1=1.0)
>>> np.allclose(np.diag(c), [1.0, 1.0, 1.25])   # [1,2]; then [1,2] at weight 1/2 plus [3,3]
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = []


def tree_noise_covariance(steps: Sequence[int] | np.ndarray, *, alpha: float, sigma_1: float,
                          sigma_2: float | None = None, gamma: float | None = None,
                          steps_per_epoch: int | None = None) -> np.ndarray:
    r"""Per-coordinate covariance :math:`c_{tt'}` of the tree noise at the paper's ``steps``.

    Algorithm 1: ``sigma_1`` at every node. Algorithm 2 (``gamma`` and ``steps_per_epoch``
    ``S`` given): nodes starting in the first epoch get ``sigma_1``, later ones ``sigma_2``,
    and :math:`e_t=\sum_{k\ge0,\,t-kS\ge1}(1-\gamma)^k n_{t-kS}`.

    Vectorised: the node of bit :math:`j` of :math:`s` in COMPOSE(1, s) ends at
    :math:`\lfloor s/2^{j+1}\rfloor 2^{j+1}+2^j`; all (step, epoch back, bit) triples are built
    as arrays (the former loop over them in Python cost 240 s for 5764 steps of Algorithm 2
    at E = 1441, and was not in the planner's cost model). Memory is ~40 bytes per triple:
    ``len(steps)`` times the epochs back times ~log2 T (see :func:`tree_check_rows`).
    """
    alg2 = gamma is not None
    if alg2 and (steps_per_epoch is None or sigma_2 is None):
        raise ValueError("Algorithm 2 needs sigma_2, gamma and steps_per_epoch")
    t = np.asarray(steps, dtype=np.int64).ravel()
    if t.size and int(t.min()) < 1:
        raise ValueError(f"steps must be >= 1, got {int(t.min())}")
    rows = np.arange(t.size, dtype=np.int64)
    if alg2 and gamma is not None and gamma < 1.0:  # every earlier epoch re-injected
        S = int(steps_per_epoch or 0)
        back = (t - 1) // S  # epochs back with t - k S >= 1
        r = np.repeat(rows, back + 1)
        k = np.arange(r.size, dtype=np.int64) - np.repeat(np.cumsum(back + 1) - (back + 1),
                                                          back + 1)
        s = t[r] - k * S
        coef = np.exp(k * math.log1p(-gamma)) if gamma > 0 else np.ones(r.size)
    else:
        r, s, coef = rows, t, np.ones(t.size)
    levels = int(t.max()).bit_length() if t.size else 0
    lev = np.arange(levels, dtype=np.int64)
    on = ((s[:, None] >> lev[None, :]) & 1).astype(bool)  # bit j of s: a node in COMPOSE
    ri = np.broadcast_to(r[:, None], on.shape)[on]
    ss = np.broadcast_to(s[:, None], on.shape)[on]
    cc = np.broadcast_to(coef[:, None], on.shape)[on]
    jj = np.broadcast_to(lev[None, :], on.shape)[on]
    end = ((ss >> (jj + 1)) << (jj + 1)) + (np.int64(1) << jj)
    lag = (ss - end).astype(float)
    if alpha >= 1.0:
        w = cc * (lag == 0)
    else:
        w = cc * np.exp(lag * math.log1p(-alpha))
    keys, col = np.unique(end * 64 + jj, return_inverse=True)
    start = (keys >> 6) - (np.int64(1) << (keys & 63)) + 1
    from scipy import sparse

    W = sparse.csr_matrix((w, (ri, col.ravel())), shape=(t.size, keys.size))  # sums repeats
    first = start <= (steps_per_epoch or 0)
    var = np.where(first | (not alg2), float(sigma_1) ** 2, float(sigma_2 or 0.0) ** 2)
    return np.asarray((W @ sparse.diags(var) @ W.T).todense())


#: most (step, epoch back) pairs :func:`tree_check_rows` keeps for one covariance
_COVARIANCE_PAIRS = 200_000
#: most traced steps :func:`tree_check_rows` keeps (the OOM of an Algorithm 2 path run, 23 GB)
_COVARIANCE_ROWS = 4096


def tree_check_rows(steps: np.ndarray, steps_per_epoch: int | None = None,
                    budget: int = _COVARIANCE_PAIRS, max_rows: int = _COVARIANCE_ROWS
                    ) -> np.ndarray:
    """Indices of the traced steps the exact tree-noise check uses: evenly spaced ones, at
    most ``max_rows`` (the covariance is a dense ``rows x rows`` matrix: 4096 rows are 134 MB)
    and, for Algorithm 2 (``steps_per_epoch`` given: every step re-injects every earlier
    epoch), at most ``budget`` (step, epoch back) pairs, so that the check costs
    O(budget log T) whatever E. The measured sum is taken over the same steps, so the check
    stays exact."""
    st = np.asarray(steps, dtype=np.int64).ravel()
    if st.size == 0:
        return np.arange(0)
    keep = min(st.size, max(2, int(max_rows)))
    if steps_per_epoch is not None:
        pairs = float(((st - 1) // int(steps_per_epoch) + 1).sum())
        if pairs > budget:
            keep = min(keep, max(2, int(st.size * budget / pairs)))
    if keep >= st.size:
        return np.arange(st.size)
    return np.unique(np.linspace(0, st.size - 1, keep).round().astype(np.int64))


def tree_step_levels(n_steps: int, sigma_1: float, sigma_2: float | None = None,
                     steps_per_epoch: int | None = None) -> np.ndarray:
    """Noise level of the node formed at each step ``1..n_steps`` (one draw per step)."""
    t = np.arange(1, n_steps + 1)
    if sigma_2 is None:
        return np.full(n_steps, float(sigma_1))
    if steps_per_epoch is None:  # found by mypy: `start <= None` raised a bare TypeError
        raise ValueError("steps_per_epoch must be given with sigma_2 (Algorithm 2)")
    start = t - (t & -t) + 1  # the node formed at t is [t - lowbit(t) + 1, t]
    return np.where(start <= steps_per_epoch, float(sigma_1), float(sigma_2))


def expected_norm_factor(d: int) -> float:
    r""":math:`\mathbb E\lVert Z\rVert` for :math:`Z\sim N(0, I_d)`:
    :math:`\sqrt2\,\Gamma((d+1)/2)/\Gamma(d/2)`."""
    return math.sqrt(2.0) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))


def rho_for_epsilon(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\rho` with :math:`\rho+2\sqrt{\rho\log(1/\delta)}\le\varepsilon`
    (Bun & Steinke 2016, Prop. 1.3, VERBATIM conversion, inverted in closed form)."""
    lg = math.log(1.0 / delta)
    return (math.sqrt(lg + epsilon) - math.sqrt(lg)) ** 2


def tree_sigma_for_epsilon(epsilon: float, delta: float, groups: Sequence[tuple[float, int,
                                                                                 float]]
                           ) -> list[float]:
    r"""Node noise of each group ``(sensitivity, nodes K, share of rho)`` for the claimed
    :math:`(\varepsilon,\delta)`: :math:`\sigma_i=\Delta_i\sqrt{K_i/(2 s_i\rho)}`."""
    rho = rho_for_epsilon(epsilon, delta)
    return [sens * math.sqrt(k / (2.0 * share * rho)) for sens, k, share in groups]


def momentum_exact(eigenvalues: np.ndarray, e0: np.ndarray, *, kind: str,
                   step_sizes: Sequence[float] | np.ndarray, momenta: Sequence[float] | np.ndarray,
                   laplace_scales: Sequence[float] | np.ndarray,
                   restarts: Sequence[bool] | np.ndarray | None = None) -> tuple[float, float]:
    r""":math:`\mathbb E[F(x_T)-F^*]` and its noise part for heavy ball (``"hb"``) or Nesterov
    (``"nag"``) on :math:`F(x)=F^*+\frac12(x-x^*)^\top H(x-x^*)`.

    ``eigenvalues`` of :math:`H`, ``e0`` the start's error in the eigenbasis; per step
    :math:`t` a step :math:`\alpha_t`, momentum :math:`\beta_t` and Laplace scale :math:`b_t`
    (per-coordinate variance :math:`2b_t^2`). Recursions (:math:`x_{-1}=x_0`):
    heavy ball :math:`x_{t+1}=x_t-\alpha_t(\nabla F(x_t)+\xi_t)+\beta_t(x_t-x_{t-1})`;
    Nesterov :math:`y_t=x_t+\beta_t(x_t-x_{t-1})`, :math:`x_{t+1}=y_t-\alpha_t(\nabla F(y_t)
    +\xi_t)`. Each eigen-direction is a 2-state linear system driven by white noise.
    ``restarts[t]`` (DP-MASG's stage changes) sets :math:`x_{t-1}:=x_t` before step
    :math:`t`: the lagged state's mean and covariance become the current one's (DERIVED).
    """
    lam = np.asarray(eigenvalues, dtype=float)
    m_cur = np.asarray(e0, dtype=float).copy()
    m_prev = m_cur.copy()
    # covariance of (e_t, e_{t-1}) per direction: [[a, b], [b, c]]
    a = np.zeros_like(lam)
    b = np.zeros_like(lam)
    c = np.zeros_like(lam)
    flags = np.zeros(len(step_sizes), dtype=bool) if restarts is None else np.asarray(restarts)
    for al, be, sc, restart in zip(step_sizes, momenta, laplace_scales, flags):
        if restart:  # x_{t-1} := x_t: (e_t, e_{t-1}) becomes (e_t, e_t)
            m_prev = m_cur.copy()
            b, c = a.copy(), a.copy()
        if kind == "hb":
            p, r = 1.0 - al * lam + be, -be * np.ones_like(lam)
        else:
            p, r = (1.0 + be) * (1.0 - al * lam), -be * (1.0 - al * lam)
        v = 2.0 * sc * sc * al * al
        m_cur, m_prev = p * m_cur + r * m_prev, m_cur
        a, b, c = p * p * a + 2 * p * r * b + r * r * c + v, p * a + r * b, a
    noise = 0.5 * float(np.sum(lam * a))
    return 0.5 * float(np.sum(lam * m_cur**2)) + noise, noise
