r"""The noise-aware performance estimation problem: the method, its Gram basis and constraints.

Method (the two-parameter fixed-step family, :math:`x_{-1}=x_0`)

.. math:: y_t=x_t+\gamma(x_t-x_{t-1}),\qquad x_{t+1}=x_t+\beta(x_t-x_{t-1})-\alpha g_t,
          \qquad g_t=\nabla F(y_t)+\xi_t,\qquad t=0,\dots,T-1,

gradient descent (:math:`\beta=\gamma=0`), heavy ball (:math:`\gamma=0`, Kuru et al. (5)/(9)),
Nesterov (:math:`\gamma=\beta`, Kuru et al. (6)).

Gram basis (**[DERIVED]**; :math:`x^\ast=0`, :math:`F^\ast=0` without loss of generality): the
vectors :math:`x_0-x^\ast`, :math:`\nabla F` at every point of the problem (the oracle points
:math:`y_0,\dots,y_{T-1}` and, for a function-value objective, :math:`x_T`) and the noises
:math:`\xi_0,\dots,\xi_{T-1}`; every iterate is a fixed linear combination of them
(:func:`layout`). The interpolation inequality of :math:`\mathcal S_{\mu,L}` for a pair
:math:`(i,j)` of points (Taylor, Hendrickx & Glineur 2017, Thm 4),

.. math:: F_j-F_i+\langle g_j,x_i-x_j\rangle+\frac{1}{2(1-\mu/L)}\Big(\frac1L\lVert g_i-g_j\rVert^2
          +\mu\lVert x_i-x_j\rVert^2-\frac{2\mu}L\langle g_i-g_j,x_i-x_j\rangle\Big)\le0,

is stored multiplied by :math:`c=2(L-\mu)>0` (:func:`pair_form`): its quadratic part is then a
polynomial in :math:`\mu,L` and the method's parameters, so a float input gives a **dyadic**
rational matrix and the exact check in :mod:`dpbounds.pep.certificate` needs no division.
The same generic code builds the float matrices for the solver and the exact ones for the check
(the entries are numpy arrays of ``float`` or of :class:`fractions.Fraction`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpbounds._validation import check_finite, check_int, check_open_interval, check_positive
from dpbounds.provenance import Provenance, Source

__all__ = ["SOURCE_INTERPOLATION", "SOURCE_STOCHASTIC_PEP", "FixedStepMethod"]

SOURCE_INTERPOLATION = Source(
    "Taylor, Hendrickx & Glineur, Smooth strongly convex interpolation and exact worst-case "
    "performance of first-order methods, Math. Program. 161, 2017",
    "Theorem 4 (interpolation conditions of S_{mu,L})", Provenance.DERIVED,
    "the standard form of the inequality, written out here and checked against PEPit's "
    "SmoothStronglyConvexFunction (tests/pep: sigma = 0 agrees within 1e-6); imposed in "
    "expectation on the expected Gram matrix (valid: it holds pointwise and is linear in the "
    "Gram matrix and the function values)")
SOURCE_STOCHASTIC_PEP = Source(
    "Taylor & Bach, Stochastic first-order methods: non-asymptotic and computer-aided analyses "
    "via potential functions, COLT 2019",
    "performance estimation with unbiased noise (expected Gram matrix)", Provenance.DERIVED,
    "our formulation: the noise xi_t is orthogonal in expectation to x_0, the earlier noises and "
    "the gradients at y_0..y_t, with E||xi_t||^2 <= s_t^2; an upper bound on the worst case "
    "(the expected Gram matrix of a run is one feasible point)")

OBJECTIVES = ("function_value", "distance")
PAIR_SETS = ("all", "consecutive", "banded")

#: Tight tolerances: the certificate needs the dual matrix within the margin (1e-7 relative) of
#: the multipliers' own matrix; Clarabel's defaults (1e-8) left it 1.9e-8 off, past a margin of
#: 3.3e-9 (heavy ball, T = 3), these leave 4.6e-13.
_OPTIONS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                 "tol_ktratio": 1e-8, "max_iter": 500},
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}


@dataclass(frozen=True)
class FixedStepMethod:
    r"""A fixed-step method :math:`(\alpha,\beta,\gamma)` of the two-parameter family above.

    Parameters
    ----------
    alpha:
        Step size, > 0.
    beta:
        Momentum of the iterate, finite.
    gamma:
        Extrapolation of the gradient point (0: heavy ball; ``beta``: Nesterov), finite.
    name:
        A label for reports.

    Examples
    --------
    >>> FixedStepMethod.nesterov(0.5, 0.3)
    FixedStepMethod(alpha=0.5, beta=0.3, gamma=0.3, name='nesterov')
    """

    alpha: float
    beta: float = 0.0
    gamma: float = 0.0
    name: str = "fixed-step"

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha", float(check_positive("alpha", self.alpha)))
        object.__setattr__(self, "beta", float(check_finite("beta", self.beta)))
        object.__setattr__(self, "gamma", float(check_finite("gamma", self.gamma)))

    @classmethod
    def gradient_descent(cls, alpha: float) -> FixedStepMethod:
        """Gradient descent, :math:`x_{t+1}=x_t-\\alpha g_t`."""
        return cls(alpha, 0.0, 0.0, "gradient descent")

    @classmethod
    def heavy_ball(cls, alpha: float, beta: float) -> FixedStepMethod:
        """Heavy ball (Kuru et al. (5)): gradient at :math:`x_t`."""
        return cls(alpha, beta, 0.0, "heavy ball")

    @classmethod
    def nesterov(cls, alpha: float, beta: float) -> FixedStepMethod:
        """Nesterov (Kuru et al. (6)): gradient at :math:`x_t+\\beta(x_t-x_{t-1})`."""
        return cls(alpha, beta, beta, "nesterov")


@dataclass(frozen=True)
class Layout:
    """Where each vector sits in the Gram basis, and every point as a combination of it.

    ``points`` (N x n) holds the coordinates of the interpolation points (``y_0..y_{T-1}``, then
    ``x_T`` for a function-value objective); the gradient at point ``k`` is basis vector
    ``1 + k``; noise ``t`` is basis vector ``1 + N + t``; ``x_final`` is :math:`x_T`.
    """

    T: int
    objective: str
    n: int
    points: np.ndarray
    x_final: np.ndarray

    @property
    def num_points(self) -> int:
        return int(self.points.shape[0])

    def grad(self, k: int) -> int:
        return 1 + k

    def noise(self, t: int) -> int:
        return 1 + self.num_points + t

    def pairs(self, subset: str = "all") -> list[tuple[int, int]]:
        """Ordered pairs (i, j), i != j, of points; index ``-1`` is the minimiser.

        ``"consecutive"`` keeps the pairs with the minimiser and those of neighbouring points
        (``k``, ``k + 1`` in the order y_0, .., y_{T-1}, x_T): fewer inequalities, so a larger
        (still valid) upper bound.
        """
        idx = [-1, *range(self.num_points)]
        if subset == "all":
            return [(i, j) for i in idx for j in idx if i != j]
        star = [p for k in range(self.num_points) for p in ((-1, k), (k, -1))]
        return star + [p for k in range(self.num_points - 1) for p in ((k, k + 1), (k + 1, k))]

    def orthogonal(self) -> list[tuple[int, int]]:
        """Basis pairs (xi_t, v) with E<xi_t, v> = 0: v = x_0, xi_s (s < t), grad at y_s (s<=t)."""
        out = []
        for t in range(self.T):
            out.append((self.noise(t), 0))
            out += [(self.noise(t), self.noise(s)) for s in range(t)]
            out += [(self.noise(t), self.grad(s)) for s in range(t + 1)]
        return out


def check_method(method: Any) -> FixedStepMethod:
    """``method`` if it is a :class:`FixedStepMethod`, else ValueError naming ``method``."""
    if not isinstance(method, FixedStepMethod):
        raise ValueError("method must be a FixedStepMethod (e.g. FixedStepMethod.heavy_ball("
                         f"alpha, beta)), got {type(method).__name__}")
    return method


def check_class(mu: Any, L: Any) -> tuple[float, float]:
    """``(mu, L)`` as floats with ``0 < mu < L`` (c = 2 (L - mu) > 0 scales every inequality)."""
    L = float(check_positive("L", L))
    mu = float(check_open_interval("mu", mu, 0.0, L))
    return mu, L


#: The SDPs resolve about nine significant digits: condition numbers, steps and noise-to-start
#: ratios beyond this are refused by name (a solver then fails or runs for minutes: measured
#: 166 s and a Clarabel panic on the CLI's fuzz inputs).
MAX_SCALE_RATIO = 1e9


def check_scales(mu: float, L: float, alpha: float, start: float, noise: Any) -> None:
    """ValueError naming the parameter when the problem is beyond the SDP's resolution."""
    if mu * MAX_SCALE_RATIO < L:
        raise ValueError(f"mu must be >= L / {MAX_SCALE_RATIO:g} for the PEP (the SDP resolves "
                         f"about nine digits), got mu = {mu:g}, L = {L:g}")
    if not 1 / MAX_SCALE_RATIO <= alpha * L <= MAX_SCALE_RATIO:
        raise ValueError(f"alpha must satisfy 1e-9 <= alpha L <= 1e9 for the PEP, got alpha L "
                         f"= {alpha * L:g}")
    top = float(np.max(np.asarray(noise, dtype=float), initial=0.0))
    if top > MAX_SCALE_RATIO * start:
        raise ValueError(f"noise_variances must be <= {MAX_SCALE_RATIO:g} x the start value "
                         f"({start:g}) for the PEP (the SDP resolves about nine digits), got "
                         f"{top:g}")


def check_horizon(T: Any) -> int:
    """``T`` as an int in 1..10000 (the size guard in the solver refuses large ones sooner)."""
    return check_int("T", T, minimum=1, maximum=10_000)


def method_numbers(method: FixedStepMethod, n: int, exact: bool) -> tuple[Any, Any, Any, Any]:
    """(alpha, beta, gamma, zero vector of length n): floats, or exact Fractions."""
    if exact:
        a, b, g = (Fraction(v) for v in (method.alpha, method.beta, method.gamma))
        return a, b, g, np.array([Fraction(0)] * n, dtype=object)
    return method.alpha, method.beta, method.gamma, np.zeros(n)


def layout(method: FixedStepMethod, T: int, objective: str, *, exact: bool = False) -> Layout:
    """The Gram layout of ``method`` run for ``T`` steps (exact: Fraction entries)."""
    with_final = objective == "function_value"
    N = T + int(with_final)
    n = 1 + N + T
    a, b, g, zero = method_numbers(method, n, exact)
    x_prev, x = zero.copy(), zero.copy()
    x[0] = x_prev[0] = 1  # x_{-1} = x_0
    pts = []
    for t in range(T):
        pts.append(x + g * (x - x_prev))
        step = zero.copy()
        step[1 + t] = a
        step[1 + N + t] = a
        x, x_prev = x + b * (x - x_prev) - step, x
    if with_final:
        pts.append(x)
    return Layout(T, objective, n, np.array(pts, dtype=object if exact else float), x)


def pair_form(lay: Layout, i: int, j: int, mu: Any, L: Any) -> tuple[np.ndarray, dict[int, int]]:
    r"""The scaled interpolation inequality of the pair (i, j): (quadratic form Q, f-coefficients).

    The inequality times :math:`c=2(L-\mu)` reads :math:`c(F_j-F_i)+\langle Q,G\rangle\le0` with
    :math:`Q=c\,\mathrm{sym}(g_jd^\top)+aa^\top+\mu L\,dd^\top-2\mu\,\mathrm{sym}(ad^\top)`,
    :math:`d=x_i-x_j`, :math:`a=g_i-g_j` (index ``-1``: the minimiser, zero vectors).
    The returned dict maps a point to its coefficient in :math:`F_j-F_i` (before the factor c).
    """
    n = lay.n
    exact = lay.points.dtype == object
    zero: Any = np.array([Fraction(0)] * n, dtype=object) if exact else np.zeros(n)

    def x(k: int) -> Any:
        return zero if k < 0 else lay.points[k]

    def g(k: int) -> Any:
        v = zero.copy()
        if k >= 0:
            v[lay.grad(k)] = 1
        return v

    c = 2 * (L - mu)
    d, a, gj = x(i) - x(j), g(i) - g(j), g(j)
    Q = (c / 2) * (np.outer(gj, d) + np.outer(d, gj)) + np.outer(a, a) + (mu * L) * np.outer(d, d) \
        - mu * (np.outer(a, d) + np.outer(d, a))
    fc = {k: s for k, s in ((j, 1), (i, -1)) if k >= 0}
    return Q, fc
