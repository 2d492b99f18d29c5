r"""Exact rational checks of the heavy-ball LMI (22): certificates, Farkas certificates, bounds.

Every float is a dyadic rational :math:`n\,2^e`, and sums and products of dyadic rationals are
dyadic, so the matrices of Kuru et al.'s Proposition 3.4 can be assembled from the given floats
**without rounding** (Python integers, :class:`Dyadic`) and their definiteness decided exactly: a
symmetric matrix is positive semidefinite iff all its principal minors are :math:`\ge0`. Three
proofs are checked this way:

* **a certificate** :math:`(\rho,P,c_0,c)`: :math:`G=c_0X_0+c[X_1+(1-\rho^2)X_2]-\Phi(A,B,P,\rho)
  \succeq0`, :math:`P\succeq0`, :math:`c_0\ge0`, :math:`c>0`
  (:func:`certificate_holds`);
* **infeasibility** at :math:`\rho` (Farkas): a :math:`Z=RR^\top\succeq0` with
  :math:`\langle Z,X_0\rangle\le0`, :math:`\langle Z,X_1+(1-\rho^2)X_2\rangle<0` and
  :math:`W(Z)=[A\,B]Z[A\,B]^\top-\rho^2Z_{[1:2,1:2]}\succeq0`. For any :math:`(P,c_0,c=1)`,
  :math:`\langle Z,G\rangle=c_0\langle Z,X_0\rangle+\langle Z,X_1+(1-\rho^2)X_2\rangle
  -\langle W(Z),P\rangle<0`, so :math:`G\not\succeq0`: no certificate with :math:`c>0` exists at
  :math:`\rho` (:func:`farkas_holds`), nor, by monotonicity, below it;
* **the quadratic rate, rounded down** (:func:`quadratic_rate_lower_bound`): the largest root
  modulus of :math:`z^2-(1+\beta-\alpha\lambda)z+\beta`, :math:`\lambda\in\{\mu,L\}`, with the
  square root bracketed exactly. Quadratics are in :math:`\mathcal S_{\mu,L}`, so no certificate
  with :math:`c>0` has a smaller :math:`\rho` (:math:`V_{P,c}\ge c(F-F^\ast)` decays at rate
  :math:`\rho^2` along every mode of the quadratic iteration).

A check takes a few tens of microseconds (integer arithmetic; :class:`fractions.Fraction` would
be 20 times slower). The search in :mod:`dpbounds.lmi.heavy_ball_lmi` uses a float64 pre-check
and calls these only for the numbers it returns.

Example
-------
>>> from dpbounds.lmi.exact import certificate_holds, quadratic_rate_lower_bound
>>> certificate_holds(0.5, 1.0, 0.5, 0.0, 0.75, [[1.0, 0.0], [0.0, 0.0]], 0.0, 0.0)  # c = 0
False
>>> quadratic_rate_lower_bound(0.5, 1.0, 0.5, 0.0)  # gradient descent: max|1 - alpha lambda|
0.75
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from dpbounds._validation import (
    check_finite,
    check_nonnegative,
    check_positive,
    check_scalars,
)

__all__ = []


class Dyadic:
    """An exact dyadic rational ``n * 2**e`` (``n``, ``e`` Python integers): +, -, * and signs."""

    __slots__ = ("n", "e")

    def __init__(self, n: int, e: int = 0) -> None:
        self.n, self.e = n, e

    @classmethod
    def of(cls, x: Any) -> Dyadic:
        """The exact value of a finite float (or int)."""
        t = type(x)
        if t is Dyadic:
            return x
        if t is int:
            return cls(x, 0)
        n, d = float(x).as_integer_ratio()  # d is a power of two
        return cls(n, 1 - d.bit_length())

    def __add__(self, other: Any) -> Dyadic:
        o = other if type(other) is Dyadic else Dyadic.of(other)
        if self.e <= o.e:
            return Dyadic(self.n + (o.n << (o.e - self.e)), self.e)
        return Dyadic((self.n << (self.e - o.e)) + o.n, o.e)

    __radd__ = __add__

    def __neg__(self) -> Dyadic:
        return Dyadic(-self.n, self.e)

    def __sub__(self, other: Any) -> Dyadic:
        return self + (-(other if isinstance(other, Dyadic) else Dyadic.of(other)))

    def __rsub__(self, other: Any) -> Dyadic:
        return Dyadic.of(other) + (-self)

    def __mul__(self, other: Any) -> Dyadic:
        o = other if type(other) is Dyadic else Dyadic.of(other)
        return Dyadic(self.n * o.n, self.e + o.e)

    __rmul__ = __mul__

    def __abs__(self) -> Dyadic:
        return Dyadic(abs(self.n), self.e)

    def sign(self) -> int:
        return (self.n > 0) - (self.n < 0)

    def __lt__(self, other: Any) -> bool:
        return (self - other).n < 0

    def __le__(self, other: Any) -> bool:
        return (self - other).n <= 0

    def __gt__(self, other: Any) -> bool:
        return (self - other).n > 0

    def __ge__(self, other: Any) -> bool:
        return (self - other).n >= 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dyadic | int | float):
            return NotImplemented
        return (self - other).n == 0

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value type; not needed as a key

    def fraction(self) -> Fraction:
        return Fraction(self.n) * Fraction(2) ** self.e

    def __repr__(self) -> str:
        return f"Dyadic({self.n}, {self.e})"


Matrix = list[list[Dyadic]]
_ZERO, _HALF = Dyadic(0), Dyadic(1, -1)


def _q(x: Any) -> Dyadic:
    return Dyadic.of(x)


def _finite_matrix(name: str, M: Any, shape: tuple[int, int | None]) -> np.ndarray:
    M = np.asarray(check_finite(name, M), dtype=float)
    if M.ndim != 2 or M.shape[0] != shape[0] or (shape[1] is not None and M.shape[1] != shape[1]):
        want = f"{shape[0]} x {shape[1] if shape[1] is not None else 'k'}"
        raise ValueError(f"{name} must be a {want} matrix, got shape {M.shape}")
    return M


def _point(mu: Any, L: Any, alpha: Any, beta: Any) -> tuple[float, ...]:
    check_scalars(mu=mu, L=L, alpha=alpha, beta=beta)  # an array said numpy's TypeError
    return tuple(float(check_finite(n, v)) for n, v in
                 (("mu", mu), ("L", L), ("alpha", alpha), ("beta", beta)))


def _det(S: Matrix) -> Dyadic:
    if len(S) == 1:
        return S[0][0]
    if len(S) == 2:
        return S[0][0] * S[1][1] - S[0][1] * S[1][0]
    return (S[0][0] * (S[1][1] * S[2][2] - S[1][2] * S[2][1])
            - S[0][1] * (S[1][0] * S[2][2] - S[1][2] * S[2][0])
            + S[0][2] * (S[1][0] * S[2][1] - S[1][1] * S[2][0]))


def is_psd(M: Matrix) -> bool:
    """Exact test of a symmetric :class:`Dyadic` matrix (size <= 3): every principal minor >= 0."""
    n = len(M)
    return all(_det([[M[i][j] for j in idx] for i in idx]) >= 0
               for k in range(1, n + 1) for idx in combinations(range(n), k))


def _blocks(mu: Any, L: Any, alpha: Any, beta: Any) -> tuple[Matrix, Matrix, Matrix, Matrix]:
    """[A B] (2x3), X0, X1, X2 of Prop. 3.4 in exact arithmetic (B = [-alpha; 0])."""
    mu, L, a, b = _q(mu), _q(L), _q(alpha), _q(beta)
    z, h = _ZERO, _HALF
    AB = [[1 + b, -b, -a], [Dyadic(1), z, z]]
    X0 = [[2 * mu * L, z, -(mu + L)], [z, z, z], [-(mu + L), z, Dyadic(2)]]
    q, lb = (1 - L * a) * b, L * b * b
    X1 = [[-h * lb, h * lb, -h * q], [h * lb, -h * lb, h * q], [-h * q, h * q, h * a * (2 - L * a)]]
    X2 = [[h * mu, z, -h], [z, z, z], [-h, z, z]]
    return AB, X0, X1, X2


def _lmi_x(X1: Matrix, X2: Matrix, r2: Dyadic) -> Matrix:
    return [[X1[i][j] + (1 - r2) * X2[i][j] for j in range(3)] for i in range(3)]


def certificate_holds(mu: Any, L: Any, alpha: Any, beta: Any, rho: Any, P: Any, c0: Any,
                      c: Any) -> bool:
    r"""Whether :math:`(\rho,P,c_0,c)` satisfies (22) exactly (with :math:`c>0`, :math:`P\succeq0`).

    ``c > 0`` is required: with :math:`c=0`, :math:`P=0`, :math:`c_0=0` satisfies (22) at every
    :math:`\rho`, and bound (23) divides by :math:`c`.
    """
    point = _point(mu, L, alpha, beta)
    check_scalars(rho=rho, c0=c0, c=c)
    rho, c0, c = (float(check_finite(n, v)) for n, v in (("rho", rho), ("c0", c0), ("c", c)))
    P = _finite_matrix("P", P, (2, 2))
    if not (0 < rho < 1 and c0 >= 0 and c > 0):
        return False
    AB, X0, X1, X2 = _blocks(*point)
    r2 = _q(rho) * _q(rho)
    p = [[_q(P[0][0]), _q(P[0][1])], [_q(P[1][0]), _q(P[1][1])]]
    if p[0][1] != p[1][0] or not is_psd(p):
        return False
    PAB = [[sum(p[i][k] * AB[k][j] for k in range(2)) for j in range(3)] for i in range(2)]
    Xc = _lmi_x(X1, X2, r2)
    c0, c = _q(c0), _q(c)
    G = [[c0 * X0[i][j] + c * Xc[i][j] - sum(AB[k][i] * PAB[k][j] for k in range(2))
          for j in range(3)] for i in range(3)]
    for i in range(2):
        for j in range(2):
            G[i][j] += r2 * p[i][j]
    return is_psd(G)


def farkas_holds(mu: Any, L: Any, alpha: Any, beta: Any, rho: Any, R: Any) -> bool:
    r"""Whether :math:`Z=RR^\top` proves (22) infeasible at ``rho`` (see the module docstring).

    ``R`` is a 3 x k array; :math:`Z=RR^\top` is positive semidefinite by construction.
    """
    AB, X0, X1, X2 = _blocks(*_point(mu, L, alpha, beta))
    check_scalars(rho=rho)
    rho = float(check_finite("rho", rho))
    Rq = [[_q(x) for x in row] for row in _finite_matrix("R", R, (3, None))]
    Z = [[sum(u * v for u, v in zip(Rq[i], Rq[j], strict=True)) for j in range(3)]
         for i in range(3)]
    r2 = _q(rho) * _q(rho)
    ABZ = [[sum(AB[i][k] * Z[k][j] for k in range(3)) for j in range(3)] for i in range(2)]
    W = [[sum(ABZ[i][k] * AB[j][k] for k in range(3)) - r2 * Z[i][j] for j in range(2)]
         for i in range(2)]

    def inner(X: Matrix) -> Dyadic:
        return sum((Z[i][j] * X[i][j] for i in range(3) for j in range(3)), _ZERO)

    return inner(X0) <= 0 and inner(_lmi_x(X1, X2, r2)) < 0 and is_psd(W)


def _sqrt_down(x: Fraction) -> Fraction:
    """A rational r <= sqrt(x) with at least 60 correct bits (x >= 0), by integer square root."""
    if x <= 0:
        return Fraction(0)
    p, q = x.numerator, x.denominator
    k = max(0, (121 - (p.bit_length() - q.bit_length())) // 2 + 1)  # x * 4**k >= 2**120
    return Fraction(math.isqrt((p << (2 * k)) // q), 1 << k)


def _float_down(x: Fraction) -> float:
    """The largest float <= x (x >= 0)."""
    if x >= Fraction(sys.float_info.max):
        return sys.float_info.max
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def quadratic_rate_lower_bound(mu: Any, L: Any, alpha: Any, beta: Any) -> float:
    r"""The heavy-ball rate on quadratics, rounded **down** (a proven lower bound on the LMI rate).

    Largest modulus of the roots of :math:`z^2-sz+\beta`, :math:`s=1+\beta-\alpha\lambda`,
    :math:`\lambda\in\{\mu,L\}`: :math:`(|s|+\sqrt{s^2-4\beta})/2` for real roots,
    :math:`\sqrt\beta` for a complex pair, evaluated exactly from the given floats with the
    square root rounded down (no cancellation error in :math:`s^2-4\beta`).
    """
    check_scalars(mu=mu, L=L, alpha=alpha, beta=beta)
    mu, L, alpha = (float(check_positive(n, v)) for n, v in (("mu", mu), ("L", L),
                                                             ("alpha", alpha)))
    beta = float(check_nonnegative("beta", beta))
    if beta >= 1:
        raise ValueError(f"beta must lie in [0, 1), got {beta}")
    b = _q(beta)
    best = Fraction(0)
    for lam in (mu, L):
        s = 1 + b - _q(alpha) * _q(lam)
        disc = s * s - 4 * b
        if disc < 0:
            r = _sqrt_down(b.fraction())
        else:
            r = (abs(s).fraction() + _sqrt_down(disc.fraction())) / 2
        best = max(best, r)
    return _float_down(best)
