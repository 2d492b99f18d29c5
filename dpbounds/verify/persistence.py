r"""Noise persistence of the tree-aggregated momentum: the low-frequency part of
:math:`\hat m_t-m_t`.

Lemmas 12 and 7 bound the **norm** :math:`\mathbb E\lVert\hat m_t-m_t\rVert`. A normalized step
:math:`x_{t+1}=x_t-\eta\hat m_t/\lVert\hat m_t\rVert` follows the noise's **direction**: white
noise (independent from step to step) averages out over a window of :math:`W` steps (the
window mean has norm :math:`\approx1/\sqrt W` of a single step's), persistent noise does not
(ratio near 1) and drags the iterate by up to :math:`\eta W`. The noise part is linear in the
node noises, so it is simulated here on its own, with the
:class:`~dpbounds.algorithms.TreeAggregator` and the run's noise levels:

* Algorithm 1: :math:`\hat m_t-m_t=\sum_{[a,b]\in\mathrm{COMPOSE}(1,t)}(1-\alpha)^{t-b}
  \zeta_{[a,b]}` (the tree fed with zeros);
* Algorithm 2 (RECONSTRUCTED): the tree noise of :math:`\hat P_t` with :math:`\sigma_1` for
  nodes starting in the first epoch and :math:`\sigma_2` after, then
  :math:`e_t=e^P_t+(1-\gamma)e_{t-N}` (the lag-:math:`N` recursion re-injects it every epoch).

:func:`tree_noise_persistence` returns the mean instantaneous norm, the mean norm of the
window averages (non-overlapping windows of ``window`` steps, default one epoch) and their
ratio, the **persistence** (:math:`1/\sqrt W` for white noise, 1 for constant noise).

Example
-------
>>> from dpbounds.verify.persistence import tree_noise_persistence
>>> white = tree_noise_persistence(n=64, epochs=4, d=3, alpha=1.0, sigma=1.0, trials=64)
>>> abs(white["persistence"] - 1 / 8) < 0.03
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds._validation import check_closed_interval, check_int, check_positive
from dpbounds.backend import TrialRandom

__all__ = ["tree_noise_persistence"]


def tree_noise_persistence(*, n: int, epochs: int, d: int, alpha: float,
                           sigma: float | None = None, sigma_1: float | None = None,
                           sigma_2: float | None = None, gamma: float | None = None,
                           window: int | None = None, trials: int = 16,
                           seed: Any = 0) -> dict[str, float]:
    """Persistence of the momentum noise of Algorithm 1 (``sigma``) or 2 (``sigma_1``,
    ``sigma_2``, ``gamma``); see the module docstring.

    Parameters
    ----------
    n, epochs, d:
        Steps per epoch (batch 1: the data size), epochs, dimension.
    alpha:
        Momentum weight in ``[0, 1]``.
    sigma:
        Node noise of Algorithm 1.
    sigma_1, sigma_2, gamma:
        Algorithm 2's two node-noise levels and mixing parameter (all or none).
    window:
        Window length ``W`` (default ``n``); at least one full window must fit.
    trials, seed:
        Independent noise paths; trial ``k`` depends only on ``(seed, k)``.
    """
    n = check_int("n", n, minimum=1)
    epochs = check_int("epochs", epochs, minimum=1)
    d = check_int("d", d, minimum=1)
    alpha = check_closed_interval("alpha", alpha, 0.0, 1.0)
    trials = check_int("trials", trials, minimum=1)
    T = n * epochs
    window = n if window is None else check_int("window", window, minimum=1, maximum=T)
    alg2 = gamma is not None
    if alg2:
        if sigma_1 is None or sigma_2 is None:
            raise ValueError("Algorithm 2 needs sigma_1, sigma_2 and gamma")
        gamma = check_closed_interval("gamma", gamma, 0.0, 1.0)
        s1, s2 = check_positive("sigma_1", sigma_1), check_positive("sigma_2", sigma_2)
    else:
        if sigma is None:
            raise ValueError("Algorithm 1 needs sigma (Algorithm 2: sigma_1, sigma_2, gamma)")
        s1 = s2 = check_positive("sigma", sigma)
    if s1 * s1 == 0.0 or s2 * s2 == 0.0:  # the noise energies below would be 0
        raise ValueError("sigma (sigma_1, sigma_2) must be at least 1e-150: its square "
                         "underflows")
    from dpbounds.algorithms import TreeAggregator

    rng = TrialRandom(seed, trials, np)
    tree = TreeAggregator((trials, d), alpha)
    zeros = np.zeros((trials, d))
    past: list[Any] = [None] * n
    noise = np.empty((T, trials, d))
    for t in range(1, T + 1):
        start, _ = tree.next_node()
        z = np.asarray(rng.normal((d,), scale=s1 if start <= n else s2))
        e = np.asarray(tree.step(zeros, z))
        if gamma is not None and t > n:  # alg2
            e = e + (1.0 - gamma) * past[(t - 1) % n]
        past[(t - 1) % n] = e
        noise[t - 1] = e
    inst = float(np.linalg.norm(noise, axis=-1).mean())
    k = T // window
    win = noise[: k * window].reshape(k, window, trials, d).mean(axis=1)
    avg = float(np.linalg.norm(win, axis=-1).mean())
    return {"instantaneous": inst, "window_mean": avg, "persistence": avg / inst,
            "white": 1.0 / float(np.sqrt(window)), "window": float(window)}
