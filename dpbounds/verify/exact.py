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


def _compose(t: int) -> list[tuple[int, int]]:
    """COMPOSE(1, t): the dyadic nodes covering ``[1, t]``, one per set bit of ``t``."""
    out, start = [], 1
    for j in range(t.bit_length() - 1, -1, -1):
        if t >> j & 1:
            out.append((start, start + (1 << j) - 1))
            start += 1 << j
    return out


def tree_noise_covariance(steps: Sequence[int] | np.ndarray, *, alpha: float, sigma_1: float,
                          sigma_2: float | None = None, gamma: float | None = None,
                          steps_per_epoch: int | None = None) -> np.ndarray:
    r"""Per-coordinate covariance :math:`c_{tt'}` of the tree noise at the paper's ``steps``.

    Algorithm 1: ``sigma_1`` at every node. Algorithm 2 (``gamma`` and ``steps_per_epoch``
    ``S`` given): nodes starting in the first epoch get ``sigma_1``, later ones ``sigma_2``,
    and :math:`e_t=\sum_{k\ge0,\,t-kS\ge1}(1-\gamma)^k n_{t-kS}`.
    """
    alg2 = gamma is not None
    if alg2 and (steps_per_epoch is None or sigma_2 is None):
        raise ValueError("Algorithm 2 needs sigma_2, gamma and steps_per_epoch")
    q = 1.0 - alpha
    rows: list[dict[tuple[int, int], float]] = []
    for t in steps:
        t = int(t)
        w: dict[tuple[int, int], float] = {}
        k, s = 0, t
        while s >= 1:
            coef = (1.0 - gamma) ** k if gamma is not None else 1.0  # gamma given: alg2
            for node in _compose(s):
                w[node] = w.get(node, 0.0) + coef * q ** (s - node[1])
            if not alg2 or coef == 0.0:
                break
            k, s = k + 1, s - steps_per_epoch  # type: ignore[operator]
        rows.append(w)
    from scipy import sparse

    nodes = sorted({nd for w in rows for nd in w})
    col = {nd: i for i, nd in enumerate(nodes)}
    ri = [i for i, w in enumerate(rows) for _ in w]
    ci = [col[nd] for w in rows for nd in w]
    vals = [v for w in rows for v in w.values()]
    # sparse: Algorithm 2 at E epochs touches ~E log T nodes per traced step
    W = sparse.csr_matrix((vals, (ri, ci)), shape=(len(rows), len(nodes)))
    # alg2: steps_per_epoch and sigma_2 are set (checked above), so the `or` never applies
    var = np.array([(sigma_1 if not alg2 or a <= (steps_per_epoch or 0) else (sigma_2 or 0.0)) ** 2
                    for a, _ in nodes])
    return np.asarray((W @ sparse.diags(var) @ W.T).todense())


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
                   laplace_scales: Sequence[float] | np.ndarray) -> tuple[float, float]:
    r""":math:`\mathbb E[F(x_T)-F^*]` and its noise part for heavy ball (``"hb"``) or Nesterov
    (``"nag"``) on :math:`F(x)=F^*+\frac12(x-x^*)^\top H(x-x^*)`.

    ``eigenvalues`` of :math:`H`, ``e0`` the start's error in the eigenbasis; per step
    :math:`t` a step :math:`\alpha_t`, momentum :math:`\beta_t` and Laplace scale :math:`b_t`
    (per-coordinate variance :math:`2b_t^2`). Recursions (:math:`x_{-1}=x_0`):
    heavy ball :math:`x_{t+1}=x_t-\alpha_t(\nabla F(x_t)+\xi_t)+\beta_t(x_t-x_{t-1})`;
    Nesterov :math:`y_t=x_t+\beta_t(x_t-x_{t-1})`, :math:`x_{t+1}=y_t-\alpha_t(\nabla F(y_t)
    +\xi_t)`. Each eigen-direction is a 2-state linear system driven by white noise.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    m_cur = np.asarray(e0, dtype=float).copy()
    m_prev = m_cur.copy()
    # covariance of (e_t, e_{t-1}) per direction: [[a, b], [b, c]]
    a = np.zeros_like(lam)
    b = np.zeros_like(lam)
    c = np.zeros_like(lam)
    for al, be, sc in zip(step_sizes, momenta, laplace_scales):
        if kind == "hb":
            p, r = 1.0 - al * lam + be, -be * np.ones_like(lam)
        else:
            p, r = (1.0 + be) * (1.0 - al * lam), -be * (1.0 - al * lam)
        v = 2.0 * sc * sc * al * al
        m_cur, m_prev = p * m_cur + r * m_prev, m_cur
        a, b, c = p * p * a + 2 * p * r * b + r * r * c + v, p * a + r * b, a
    noise = 0.5 * float(np.sum(lam * a))
    return 0.5 * float(np.sum(lam * m_cur**2)) + noise, noise
