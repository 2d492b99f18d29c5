r"""Powers of a 2x2 companion matrix in closed form (Lucas sequences), for every horizon at once.

Heavy ball and Nesterov's method on a quadratic are, per eigenvalue, the recurrence
:math:`e_{t+1}=a\,e_t-b\,e_{t-1}` with iteration matrix
:math:`M=\begin{bmatrix}a&-b\\1&0\end{bmatrix}` (:math:`b\ge0`). By Cayley-Hamilton

.. math:: M^t=\begin{bmatrix}U_{t+1}&-b\,U_t\\U_t&-b\,U_{t-1}\end{bmatrix},\qquad
          U_0=0,\ U_1=1,\ U_{t+1}=aU_t-bU_{t-1},

where :math:`U_t` is the Lucas sequence :math:`U_t(a,b)=\sum_{j=0}^{t-1}r_1^jr_2^{t-1-j}` of
the roots :math:`r_{1,2}` of :math:`z^2-az+b`. :func:`lucas_u` evaluates it at any ``t`` in
:math:`O(1)` (no loop over steps), so a quantity needed at every horizon
:math:`T=1..T_{\max}` costs :math:`O(T_{\max})` vectorised work instead of :math:`T_{\max}`
sequential matrix products. The formulas stay accurate through the double root
(:math:`a^2=4b`, e.g. Polyak's heavy ball at the extreme eigenvalues):

* complex roots :math:`re^{\pm i\theta}`: :math:`U_t=r^{t-1}\sin(t\theta)/\sin\theta`;
* real roots, :math:`|r_1|\ge|r_2|`, :math:`x=r_2/r_1\in[0,1]`:
  :math:`U_t=r_1^{t-1}\,(1-x^t)/(1-x)`, with :math:`1-x=\sqrt{a^2-4b}/|r_1|` computed without
  cancellation and :math:`1-x^t=-\mathrm{expm1}(t\,\mathrm{log1p}(-(1-x)))`.

Example
-------
>>> import numpy as np
>>> M = np.array([[0.9, -0.2], [1.0, 0.0]])
>>> P = np.linalg.matrix_power(M, 7)
>>> bool(np.isclose(companion_power_norm_sq(0.9, 0.2, 7), np.linalg.norm(P, 2) ** 2))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = []


def _discriminant(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a^2 - 4b with the rounding error of a^2 added back (Dekker's exact product).

    Near the double root a^2 = 4b the plain difference loses all its digits, and its error
    enters the roots as sqrt(error): U_t would then be off by ~1e-10 relative at t ~ 1e3.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        sq = a * a
        big = a * 134217729.0  # 2^27 + 1: split a into two 26-bit halves
        hi = big - (big - a)
        lo = a - hi
        err = ((hi * hi - sq) + 2.0 * hi * lo) + lo * lo
        out = (sq - 4.0 * b) + err
    return np.where(np.isfinite(out), out, sq - 4.0 * b)


def lucas_u(a: Any, b: Any, t: Any) -> np.ndarray:
    r"""The Lucas sequence :math:`U_t(a,b)` (:math:`b\ge0`, integer :math:`t\ge0`), broadcast.

    :math:`U_t` is the (2,1) entry of :math:`M^t`, :math:`M=[[a,-b],[1,0]]` (module docstring).
    Negative :math:`a` uses :math:`U_t(a,b)=(-1)^{t-1}U_t(|a|,b)` (the roots change sign), so
    that the angle of a complex pair stays in :math:`(0,\pi/2]`, where :math:`\sin` is accurate.
    """
    a, b, t = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                  np.asarray(t, dtype=float))
    sign = np.where((a < 0) & (np.mod(t - 1.0, 2.0) == 1.0), -1.0, 1.0)
    a = np.abs(a)
    disc = _discriminant(a, b)
    cplx = disc < 0
    out = np.empty(a.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        if np.any(cplx):  # complex pair r e^{+-i theta}, theta in (0, pi/2]; b > 0 here
            ac, bc, tc = a[cplx], b[cplx], t[cplx]
            sq = np.sqrt(-disc[cplx])
            r = np.sqrt(bc)
            theta = np.arctan2(sq, ac)
            out[cplx] = np.exp((tc - 1.0) * np.log(r)) * np.sin(tc * theta) / (sq / (2.0 * r))
        real = ~cplx
        if np.any(real):  # roots r1 >= r2 >= 0, x = r2 / r1 in [0, 1]
            tr = t[real]
            sd = np.sqrt(disc[real])
            r1 = 0.5 * (a[real] + sd)
            pos = r1 > 0
            omx = np.where(pos, sd / np.where(pos, r1, 1.0), 1.0)  # 1 - x without cancellation
            geo = np.where(omx > 0, -np.expm1(tr * np.log1p(-omx)) / np.where(omx > 0, omx, 1.0),
                           tr)  # sum_{j<t} x^j
            val = np.exp((tr - 1.0) * np.log(r1)) * geo
            out[real] = np.where(pos, val, np.where(tr == 1.0, 1.0, 0.0))  # a = b = 0
    return np.where(t == 0, 0.0, sign * out)


class CompanionPowers:
    r""":math:`\lVert M^t\rVert_2^2` for many matrices :math:`M_i=[[a_i,-b_i],[1,0]]` and any t.

    Everything that does not depend on :math:`t` (discriminant, roots, angle) is computed once
    per matrix; :meth:`norm_sq` then costs one ``exp`` and one ``sin``/``cos`` pair (complex
    roots) or one ``exp`` and one ``expm1`` (real roots) per evaluation.
    The norm does not depend on the sign of :math:`a` (:math:`M(-a)=-DM(a)D`,
    :math:`D=\mathrm{diag}(1,-1)`), so :math:`|a|` is used.
    """

    def __init__(self, a: Any, b: Any) -> None:
        a, b = np.broadcast_arrays(np.abs(np.asarray(a, dtype=float)),
                                   np.asarray(b, dtype=float))
        self.shape = a.shape
        a, b = a.ravel(), b.ravel()
        disc = _discriminant(a, b)
        self.b = b
        self.cplx = disc < 0
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            # complex pair r e^{+-i theta}, theta in (0, pi/2]
            sq = np.sqrt(np.where(self.cplx, -disc, 0.0))
            r = np.sqrt(np.where(self.cplx, b, 1.0))
            self.theta = np.arctan2(sq, a)
            self.sin_th, self.cos_th = sq / (2.0 * r), a / (2.0 * r)
            # real roots r1 >= r2 >= 0, x = r2 / r1 = 1 - omx
            sd = np.sqrt(np.where(self.cplx, 0.0, disc))
            r1 = 0.5 * (a + sd)
            self.pos = r1 > 0
            r1 = np.where(self.pos, r1, 1.0)
            self.omx = np.where(self.pos, sd / r1, 1.0)
            self.log1p_omx = np.log1p(-self.omx)
            # the modulus of the roots (complex: r; real: r1)
            self.root = np.where(self.cplx, r, r1)
            self.log_root = np.log(self.root)

    def _terms(self, i: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, ...]:
        """(U_{t-1}, U_t, U_{t+1}) of matrices ``i`` at horizons ``t >= 1`` (same shapes)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            root = self.root[i]
            base = np.exp((t - 2.0) * self.log_root[i])            # root^(t-2)
            cplx = self.cplx[i]
            # complex: U_k = r^(k-1) sin(k theta) / sin(theta), angle addition for k = t -+ 1
            th = self.theta[i]
            st, ct = np.sin(t * th), np.cos(t * th)
            sin_th, cos_th = self.sin_th[i], self.cos_th[i]
            c_prev = (st * cos_th - ct * sin_th) / sin_th
            c_mid = root * st / sin_th
            c_next = root * root * (st * cos_th + ct * sin_th) / sin_th
            # real: U_k = r1^(k-1) sum_{j<k} x^j, the sums by 1 + x * previous (no cancellation)
            omx = self.omx[i]
            g_prev = np.where(omx > 0, -np.expm1((t - 1.0) * self.log1p_omx[i])
                              / np.where(omx > 0, omx, 1.0), t - 1.0)
            g_prev = np.where(t == 1.0, 0.0, g_prev)  # the empty sum (0 * log 0 would be nan)
            x = 1.0 - omx
            g = 1.0 + x * g_prev
            g_next = 1.0 + x * g
            r_prev, r_mid, r_next = g_prev, root * g, root * root * g_next
            pos = self.pos[i]
            r_prev = np.where(pos, r_prev, 0.0)  # a = b = 0: M = [[0, 0], [1, 0]], M^2 = 0
            r_mid = np.where(pos, r_mid, np.where(t == 1.0, 1.0, 0.0))
            r_next = np.where(pos, r_next, 0.0)
            base = np.where(pos | cplx, base, 1.0)
            return (base * np.where(cplx, c_prev, r_prev), base * np.where(cplx, c_mid, r_mid),
                    base * np.where(cplx, c_next, r_next))

    def norm_sq(self, i: np.ndarray, t: np.ndarray) -> np.ndarray:
        r"""``||M_i^t||_2^2`` (``i`` flat indices into the matrices, broadcast with ``t``).

        The largest eigenvalue of :math:`P^\top P` for :math:`P=[[p,q],[r,s]]` is
        :math:`\tfrac12\big(\lVert P\rVert_F^2+\sqrt{((p-s)^2+(q+r)^2)((p+s)^2+(q-r)^2)}\big)`:
        the product form of :math:`\lVert P\rVert_F^4-4\det(P)^2` has no cancellation.
        """
        i, t = np.broadcast_arrays(np.asarray(i), np.asarray(t, dtype=float))
        u_prev, u, u_next = self._terms(i, np.maximum(t, 1.0))
        b = self.b[i]
        p, q, r, s = u_next, -b * u, u, -b * u_prev
        identity = t == 0  # M^0 = I
        if np.any(identity):
            p, q = np.where(identity, 1.0, p), np.where(identity, 0.0, q)
            r, s = np.where(identity, 0.0, r), np.where(identity, 1.0, s)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            # scale by the largest entry: the product is of order entry^4 and would underflow
            c = np.maximum(np.maximum(np.abs(p), np.abs(q)), np.maximum(np.abs(r), np.abs(s)))
            c = np.where((c > 0) & np.isfinite(c), c, 1.0)
            p, q, r, s = p / c, q / c, r / c, s / c
            fro = p * p + q * q + r * r + s * s
            prod = ((p - s) ** 2 + (q + r) ** 2) * ((p + s) ** 2 + (q - r) ** 2)
            return 0.5 * (fro + np.sqrt(prod)) * c * c


def companion_power_norm_sq(a: Any, b: Any, t: Any) -> np.ndarray:
    r""":math:`\lVert M^t\rVert_2^2` for :math:`M=[[a,-b],[1,0]]` (broadcast over a, b, t)."""
    a, b, t = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                  np.asarray(t, dtype=float))
    powers = CompanionPowers(a, b)
    return powers.norm_sq(np.arange(a.size), t.ravel()).reshape(a.shape)


def companion_spectral_radius(a: Any, b: Any) -> np.ndarray:
    r"""Largest :math:`|r|` over the roots of :math:`z^2-az+b` (:math:`b\ge0`)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    disc = a * a - 4.0 * b
    with np.errstate(invalid="ignore"):
        return np.where(disc >= 0, 0.5 * (np.abs(a) + np.sqrt(np.maximum(disc, 0.0))),
                        np.sqrt(np.maximum(b, 0.0)))
