r"""Features of a run's released transcript: what the audit statistics are computed on.

The iterative algorithms release every iterate (their privacy is proved for the whole
sequence of noisy gradients, by composition), so the audit may use the tapped query points
of :class:`~dpbounds.audit.neighbours.LinearObjective` and the final state. From them:

* :func:`noisy_gradients` inverts a first-order momentum update,

  .. math::

      p_t = x_{t-1} + \beta_t^{\mathrm{NAG}}(x_{t-1}-x_{t-2}),\qquad
      x_t = p_t - \alpha_t\tilde g_t + \beta_t^{\mathrm{HB}}(x_{t-1}-x_{t-2}),

  (gradient descent: :math:`\beta=0`; momentum restarts set :math:`x_{t-2}=x_{t-1}`) and
  returns the released noisy data gradients :math:`\tilde g_t-\lambda p_t` — per step, the
  data gradient plus that step's noise, so the Neyman–Pearson statistic of independent
  per-step noise is a sum over steps;
* :func:`direction_statistics` handles normalised steps :math:`x_{t+1}=x_t-\eta\,\hat m_t/
  \lVert\hat m_t\rVert`, which release only the *direction* of the noisy momentum. In
  :math:`d` dimensions with the signal on :math:`e_1` the scale-free ratio
  :math:`u_1/\sqrt{\mathrm{mean}_{j\ge2}u_j^2}` of the direction :math:`u` equals
  :math:`\hat m_1/\sqrt{\mathrm{mean}_{j\ge2}\hat m_j^2}`: the noisy first coordinate over an
  estimate of its noise level from :math:`d-1` pure-noise coordinates (a noncentral
  :math:`t` with :math:`d-1` degrees of freedom). In one dimension a normalised step keeps
  only a sign, and the final iterate of a few steps takes a handful of values; with
  :math:`d` in the tens the direction carries almost all the information of :math:`\hat m`.

Example
-------
>>> import numpy as np
>>> from dpbounds.audit.transcript import noisy_gradients
>>> pts = [np.array([[0.0]]), np.array([[-1.0]])]     # x_0, x_1 of gradient descent
>>> noisy_gradients(pts, np.array([[-1.5]]), step_sizes=[1.0, 1.0]).tolist()
[[1.0, 0.5]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = []


def _stack(points: Sequence[np.ndarray], steps: int, what: str) -> np.ndarray:
    if len(points) != steps:
        raise ValueError(f"the transcript has {len(points)} query points, expected {steps} "
                         f"({what})")
    return np.stack([np.asarray(p, dtype=float) for p in points])  # (T, trials, d)


def noisy_gradients(points: Sequence[np.ndarray], x_final: Any, *, step_sizes: Any,
                    momenta: Any = None, kind: str = "hb", restarts: Any = None,
                    l2: float = 0.0) -> np.ndarray:
    """Released noisy data gradients of a momentum method, ``(trials, T * d)``.

    ``points[t]`` is the query point of step ``t`` (``T`` of them), ``x_final`` the state
    after the last step; ``kind`` is ``"hb"`` (heavy ball, gradient descent when all momenta
    are 0) or ``"nag"`` (Nesterov, the gradient taken at the extrapolated point).
    """
    alpha = np.asarray(step_sizes, dtype=float).reshape(-1)
    T = alpha.size
    beta = np.zeros(T) if momenta is None else np.asarray(momenta, dtype=float).reshape(-1)
    restart = np.zeros(T, bool) if restarts is None else np.asarray(restarts, bool).reshape(-1)
    P = _stack(points, T, "one per step")
    xT = np.asarray(x_final, dtype=float)
    # states x_0 .. x_T
    xs = [P[0]]
    for t in range(1, T):
        if kind == "nag" and beta[t] != 0.0 and not restart[t]:
            xs.append((P[t] + beta[t] * xs[t - 1]) / (1.0 + beta[t]))
        else:
            xs.append(P[t])
    xs.append(xT)
    out = []
    for t in range(T):
        nxt = xs[t + 1]
        if kind == "hb" and beta[t] != 0.0:
            prev = xs[t] if (t == 0 or restart[t]) else xs[t - 1]
            nxt = nxt - beta[t] * (xs[t] - prev)
        out.append((P[t] - nxt) / alpha[t] - l2 * P[t])
    g = np.stack(out, axis=1)  # (trials, T, d)
    return g.reshape(g.shape[0], -1)


def _t_ratio(u: np.ndarray) -> np.ndarray:
    """``u[..., 0] / rms(u[..., 1:])`` along the last axis."""
    rms = np.sqrt(np.mean(u[..., 1:] ** 2, axis=-1))
    return u[..., 0] / np.where(rms > 0, rms, np.inf)


def direction_statistics(points: Sequence[np.ndarray], x_final: Any, *, steps: int
                         ) -> np.ndarray:
    """Per-step scale-free ratios of the normalised step directions, ``(trials, T)``.

    Needs ``d >= 2`` (the noise level is estimated from coordinates 2..d).
    """
    P = _stack(points, steps, "one per step")
    if P.shape[-1] < 2:
        raise ValueError("direction statistics need d >= 2")
    nxt = np.concatenate([P[1:], np.asarray(x_final, dtype=float)[None]], axis=0)
    return _t_ratio(P - nxt).T


def output_features(x: Any, *, direction: bool = False) -> np.ndarray:
    """The released output itself, ``(trials, d)``; with ``direction=True`` the scale-free
    ratio of its direction, ``(trials, 1)`` (for outputs projected onto a sphere)."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[0] < 1:
        raise ValueError(f"x must be a (trials, d) array of outputs; got shape {x.shape}")
    if direction:
        return _t_ratio(x)[:, None]
    return x.reshape(x.shape[0], -1)
