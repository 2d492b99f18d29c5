r"""The LMI (22) of Kuru et al., Prop. 3.4, as matrices: its blocks and its assembly at a point.

For a step :math:`\alpha` and momentum :math:`\beta`, a rate :math:`\rho\in(0,1)` is certified when
there are a symmetric :math:`P\succeq0` (2x2), :math:`c_0\ge0` and :math:`c>0` with

.. math:: c_0X_0+c\,[X_1+(1-\rho^2)X_2]\succeq\Phi(A,B,P,\rho)
          =\begin{bmatrix}A^\top PA-\rho^2P&A^\top PB\\B^\top PA&B^\top PB\end{bmatrix}
          \qquad(22)

(:math:`3\times3`; :math:`A=[[1+\beta,-\beta],[1,0]]`, :math:`B=[-\alpha;0]`, :math:`C=[1,0]`).

Conventions settled here (**[DERIVED]**, ``kuru_et_al.md`` §3, §11):

* **Sign of** :math:`B`. (18) prints :math:`B=[\alpha;0]`, which turns (17) into gradient *ascent*;
  (16) and (42) need :math:`B=[-\alpha;0]` (the IQC reference code's ``G_hbm``). Only the
  :math:`-\alpha` version is certifiable; :func:`lmi_blocks` accepts ``b_sign=+1`` to show it.
* :math:`c>0`. The paper writes :math:`c_0,c\ge0`, but with :math:`c=0` the point
  :math:`P=0,c_0=0` satisfies (22) at every :math:`\rho`, and (23) divides by :math:`c`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import (
    check_finite,
    check_nonnegative,
    check_positive,
    check_scalars,
)

__all__ = [
    "assemble_lmi",
    "lmi_blocks",
]


_EPS = np.finfo(float).eps


# ----------------------------------------------------------------------------- matrices
def _check(mu: float, L: float, alpha: float, beta: float) -> tuple[float, float, float, float]:
    check_scalars(mu=mu, L=L, alpha=alpha, beta=beta)  # an array said numpy's TypeError
    mu = float(check_positive("mu", mu))
    L = float(check_positive("L", L))
    if mu > L:
        raise ValueError(f"mu must lie in (0, L={L}], got {mu}")
    alpha = float(check_positive("alpha", alpha))
    beta = float(check_nonnegative("beta", beta))
    if beta >= 1:
        raise ValueError(f"beta must lie in [0, 1), got {beta}")
    with np.errstate(over="ignore", invalid="ignore"):
        big = (2.0 * mu * L, L * alpha * alpha, mu + L)
    if not all(math.isfinite(v) for v in big):
        raise ValueError(f"mu, L, alpha too large: the LMI's matrices overflow float64 "
                         f"(2 mu L = {big[0]:g}, L alpha^2 = {big[1]:g})")
    return mu, L, alpha, beta


def _check_margin(margin: Any) -> float:
    margin = float(check_nonnegative("margin", margin))
    if margin >= 1:
        raise ValueError(f"margin must lie in [0, 1) (it is relative to the LMI's size), "
                         f"got {margin}")
    return margin


def lmi_blocks(mu: float, L: float, alpha: float, beta: float, *, b_sign: int = -1) -> dict:
    r"""The matrices of Proposition 3.4 in their :math:`3\times3` form (``d = 1``).

    Returns ``A, B, C, X0, X1, X2`` exactly as printed, except :math:`B=[b\_sign\cdot\alpha;0]`
    (default :math:`-\alpha`, see the module docstring; ``b_sign=+1`` is (18) as printed).
    """
    if b_sign not in (-1, 1):
        raise ValueError(f"b_sign must be -1 or +1, got {b_sign!r}")
    return _blocks(*_check(mu, L, alpha, beta), b_sign)


def _blocks(mu: float, L: float, alpha: float, beta: float, b_sign: int = -1) -> dict:
    A = np.array([[1.0 + beta, -beta], [1.0, 0.0]])
    B = np.array([[b_sign * alpha], [0.0]])
    C = np.array([[1.0, 0.0]])
    CtC = C.T @ C
    X0 = np.zeros((3, 3))
    X0[:2, :2] = 2.0 * mu * L * CtC
    X0[:2, 2:] = -(mu + L) * C.T
    X0[2:, :2] = -(mu + L) * C
    X0[2, 2] = 2.0
    q = (1.0 - L * alpha) * beta
    X1 = 0.5 * np.array([
        [-L * beta**2, L * beta**2, -q],
        [L * beta**2, -L * beta**2, q],
        [-q, q, alpha * (2.0 - L * alpha)],
    ])
    X2 = 0.5 * np.array([[mu, 0.0, -1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    return {"A": A, "B": B, "C": C, "X0": X0, "X1": X1, "X2": X2}


def _check_certificate(rho: Any, P: Any, c0: Any, c: Any) -> tuple[float, np.ndarray, float,
                                                                   float]:
    rho = float(check_finite("rho", rho))
    P = np.asarray(check_finite("P", P), dtype=float)
    if P.shape != (2, 2):
        raise ValueError(f"P must be a 2x2 matrix, got shape {P.shape}")
    return rho, P, float(check_finite("c0", c0)), float(check_finite("c", c))


def assemble_lmi(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
    *, b_sign: int = -1,
) -> np.ndarray:
    r"""The matrix :math:`c_0X_0+c[X_1+(1-\rho^2)X_2]-\Phi(A,B,P,\rho)` of (22), in float64.

    Built directly from the printed blocks (no solver data). :func:`verify_certificate` decides
    definiteness on the same matrix in exact arithmetic.
    """
    m = lmi_blocks(mu, L, alpha, beta, b_sign=b_sign)
    with np.errstate(over="ignore", invalid="ignore"):
        G = _assemble(m, *_check_certificate(rho, P, c0, c))
    if not np.all(np.isfinite(G)):
        raise ValueError("the LMI overflows float64: rho, P, c0 or c too large")
    return G


def _assemble(m: dict, rho: float, P: np.ndarray, c0: float, c: float) -> np.ndarray:
    AB, r2 = np.hstack([m["A"], m["B"]]), np.float64(rho) ** 2  # numpy: overflow gives inf
    Phi = AB.T @ P @ AB
    Phi[:2, :2] -= r2 * P
    G = c0 * m["X0"] + c * (m["X1"] + (1.0 - r2) * m["X2"]) - Phi
    return 0.5 * (G + G.T)
