r"""The worst-case function recovered from a PEP solution.

**Construction** (**[DERIVED]** from Taylor, Hendrickx & Glineur 2017, Thm 4's constructive
proof). Factor the Gram matrix :math:`G=V^\top V` (eigendecomposition, :math:`d=\operatorname
{rank}G`): the points, gradients and values :math:`(x_i,g_i,f_i)` (with the minimiser
:math:`(0,0,0)`) satisfy the interpolation inequalities of :math:`\mathcal S_{\mu,L}`. With
:math:`\ell=L-\mu`, :math:`\hat g_i=g_i-\mu x_i`, :math:`\hat f_i=f_i-\frac\mu2\lVert x_i\rVert^2`
the data of :math:`h=F-\frac\mu2\lVert\cdot\rVert^2` are :math:`\ell`-smooth convex-interpolable,
:math:`h^\ast` is interpolated by the :math:`1/\ell`-strongly convex
:math:`\varphi=\max_iq_i`, :math:`q_i(y)=\kappa_i+\langle a_i,y\rangle+\lVert y\rVert^2/(2\ell)`
(:math:`a_i=x_i-\hat g_i/\ell`, :math:`\kappa_i=\lVert\hat g_i\rVert^2/(2\ell)-\hat f_i`), and by
the minimax theorem

.. math:: h(x)=\varphi^\ast(x)=\min_{\lambda\in\Delta}\ \frac\ell2\Big\lVert x-\sum_i\lambda_i
          a_i\Big\rVert^2-\sum_i\lambda_i\kappa_i,\qquad \nabla h(x)=\ell\Big(x-\sum_i
          \lambda_i^\ast a_i\Big),

a convex QP over the simplex (solved here exactly by enumerating supports: at most a few
points). :math:`F=h+\frac\mu2\lVert\cdot\rVert^2` is :math:`L`-smooth, :math:`\mu`-strongly
convex, minimised at 0 with :math:`F^\ast=0`, and takes the PEP's values and gradients at its
points.

**What it shows.** Without noise (:math:`s=0`) the PEP is exact and the method run on
:math:`F` from :math:`x_0` visits exactly the PEP's points (each gradient is the interpolated
one), so :math:`F(x_T)-F^\ast` equals the PEP value (up to the solver's accuracy). **With
noise this recovery is not exact, and no recovery from the SDP solution can be in general**:
the SDP variables are expectations (:math:`G=\mathbb E[P^\top P]`), one point per iterate,
while a run with random noise visits a different point in every realisation, and one function
must interpolate all of them. The Gram factor gives a single noise vector per step; the function
recovered from it is a member of :math:`\mathcal S_{\mu,L}`, so the method run on it with any
noise of the model gives a **lower bound** on the worst case, checked against the PEP value
(an upper bound) by Monte Carlo in tests/pep.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dpbounds.pep.formulation import layout

__all__ = ["RecoveredFunction", "recover_worst_function"]


@dataclass(frozen=True)
class RecoveredFunction:
    r"""An :math:`L`-smooth :math:`\mu`-strongly convex function through given
    (point, gradient, value) triples (see the module docstring); ``x0`` and ``noise`` are the
    PEP's start and noise vectors in the same coordinates.
    """

    mu: float
    L: float
    points: np.ndarray
    grads: np.ndarray
    values: np.ndarray
    x0: np.ndarray
    noise: np.ndarray

    @property
    def d(self) -> int:
        return int(self.points.shape[1])

    def _solve(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(h(x), grad h(x)) for a batch x of shape (K, d)."""
        ell = self.L - self.mu
        ghat = self.grads - self.mu * self.points
        fhat = self.values - self.mu / 2 * np.sum(self.points**2, axis=1)
        a = self.points - ghat / ell  # (m, d)
        kappa = np.sum(ghat**2, axis=1) / (2 * ell) - fhat
        m = a.shape[0]
        K = x.shape[0]
        best = np.full(K, np.inf)
        best_lam = np.zeros((K, m))
        H = ell * a @ a.T
        lin = -ell * x @ a.T - kappa  # (K, m): the linear term of the QP in lambda
        const = ell / 2 * np.sum(x**2, axis=1)
        for size in range(1, m + 1):
            for S in itertools.combinations(range(m), size):
                idx = list(S)
                # KKT on the face: H_SS lam + lin_S + nu 1 = 0, 1^T lam = 1
                M = np.zeros((size + 1, size + 1))
                M[:size, :size] = H[np.ix_(idx, idx)]
                M[:size, size] = 1.0
                M[size, :size] = 1.0
                rhs = np.concatenate([-lin[:, idx], np.ones((K, 1))], axis=1).T
                sol = np.linalg.lstsq(M, rhs, rcond=None)[0].T[:, :size]
                lam = np.zeros((K, m))
                lam[:, idx] = sol
                ok = np.all(sol >= -1e-12, axis=1) & np.isclose(sol.sum(axis=1), 1.0)
                val = 0.5 * np.einsum("ki,ij,kj->k", lam, H, lam) + np.sum(lam * lin, axis=1)
                better = ok & (val < best - 1e-15)
                best[better] = val[better]
                best_lam[better] = lam[better]
        h = best + const
        gh = ell * (x - best_lam @ a)
        return h, gh

    def value(self, x: np.ndarray) -> np.ndarray:
        """F(x) - F* for x of shape (K, d).

        Parameters
        ----------
        x:
            Points, shape (K, d) (or (d,)).
        """
        x = np.atleast_2d(np.asarray(x, dtype=float))
        h, _ = self._solve(x)
        return h + self.mu / 2 * np.sum(x**2, axis=1)

    def grad(self, x: np.ndarray) -> np.ndarray:
        """The gradient at x of shape (K, d).

        Parameters
        ----------
        x:
            Points, shape (K, d) (or (d,)).
        """
        x = np.atleast_2d(np.asarray(x, dtype=float))
        _, gh = self._solve(x)
        return gh + self.mu * x


def recover_worst_function(result: object) -> RecoveredFunction:
    """The function of the module docstring from a PEP solution.

    Parameters
    ----------
    result:
        A :class:`~dpbounds.pep.PEPResult` of the noise basis (``pairs`` ``"all"`` or
        ``"consecutive"``; exact recovery needs ``"all"`` and zero noise).

    Returns
    -------
    RecoveredFunction
        ``value`` / ``grad`` on batches of shape (K, d), the start ``x0`` and the noise
        vectors of the Gram factor.

    Examples
    --------
    >>> from dpbounds.pep import FixedStepMethod, pep_worst_case, recover_worst_function
    >>> r = pep_worst_case(FixedStepMethod.gradient_descent(1.0), 0.1, 1.0, 1,
    ...                    initial_gap=1.0, certify=False)
    >>> F = recover_worst_function(r)
    >>> x1 = F.x0 - 1.0 * F.grad(F.x0[None])[0]
    >>> bool(abs(F.value(x1[None])[0] - r.value) < 1e-6)
    True
    """
    from dpbounds.pep.stochastic import PEPResult

    if not isinstance(result, PEPResult) or result.pairs == "banded":
        raise ValueError("result must be a PEPResult of pep_worst_case with pairs 'all' or "
                         "'consecutive' (the banded Gram matrix is only given on its band)")
    lay = layout(result.method, result.T, result.objective)
    w, U = np.linalg.eigh((result.gram + result.gram.T) / 2)
    keep = w > 1e-10 * max(w.max(), 1e-300)
    V = (U[:, keep] * np.sqrt(w[keep])).T  # G ~ V^T V, V: (d, n)
    pts = lay.points @ V.T
    grads = np.array([V[:, lay.grad(k)] for k in range(lay.num_points)])
    vals = np.asarray(result.function_values, dtype=float)
    d = V.shape[0]
    # the minimiser: x* = 0, g* = 0, F* = 0
    pts = np.vstack([np.zeros(d), pts])
    grads = np.vstack([np.zeros(d), grads])
    vals = np.concatenate([[0.0], vals])
    noise = np.array([V[:, lay.noise(t)] for t in range(result.T)])
    return RecoveredFunction(result.mu, result.L, pts, grads, vals, V[:, 0].copy(), noise)
