r"""A Huber well: a finite sum that is exactly :math:`G`-Lipschitz and :math:`L`-smooth.

Every sample loss is the Huber function of the distance to its own centre,

.. math::

    \ell_i(x) = G\,h_\delta(\lVert x - c_i\rVert),\qquad
    h_\delta(s) = \begin{cases} s^2/(2\delta) & s \le \delta\\ s - \delta/2 & s > \delta
    \end{cases},\qquad \delta = G/L,

so :math:`\nabla\ell_i(x) = G\,(x-c_i)/\max(\lVert x-c_i\rVert,\delta)`: every per-sample
gradient has norm :math:`\le G` (equality outside the ball of radius :math:`\delta`), and
every :math:`\ell_i` is :math:`L`-smooth (the Hessian of the norm's Huber function has
eigenvalues :math:`G/\delta = L` inside and :math:`G/s \le L` outside). The constants the
non-convex bounds assume (Tran & Cutkosky: :math:`\lVert\nabla f(\cdot,z)\rVert\le G`,
per-sample :math:`L`; Yang et al.: :math:`\tau_0 = 2G`, :math:`L_0 = L`, :math:`L_1 = 0`) hold
**exactly**, not up to a data radius, so a difference query ``∇ℓ_i(x) - ∇ℓ_i(x')`` of
Algorithm 2 sees the true gradient with norm :math:`\le L\lVert x-x'\rVert`.

Centres :math:`c_i = e_i - c` around a public centre :math:`c` fixed at construction (default:
the mean of the given offsets; see :class:`HuberWell` for why it is a parameter) with
zero-mean offsets :math:`\lVert e_i\rVert\le\rho<\delta`: near
the origin every sample is in its quadratic zone, so :math:`F(x)=\frac L2\frac1n\sum_i
\lVert x-e_i\rVert^2` there and the minimiser is :math:`x^*=0` with
:math:`F^*=\frac L{2n}\sum_i\lVert e_i\rVert^2` (closed form). Outside radius
:math:`\delta+\rho` every sample gradient has norm :math:`G` and points (almost) outward:
:math:`\lVert\nabla F\rVert\ge G\,(1-\rho/(\lVert x\rVert-\rho))`.

The data term is the whole objective (no regulariser); the per-sample gradient noise
:math:`\lVert\nabla\ell_i-\nabla F\rVert\le 2G`, and :math:`\le 2L\rho` in the quadratic zone.

Example
-------
>>> import numpy as np
>>> from dpbounds.objectives import HuberWell
>>> f = HuberWell.random(n=50, d=3, G=1.0, L=2.0, spread=0.2, seed=0)
>>> x = f.initial_state(1, np.full(3, 5.0))
>>> float(f.grad_norm(x)[0]) <= 1.0 + 1e-12
True
>>> f.optimum.value == float(f.loss(f.initial_state(1, f.optimum.x))[0])
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.backend import get_namespace, is_numpy
from dpbounds.objectives._base import Objective, Optimum, finite_array, public_centre

__all__ = ["HuberWell"]


class HuberWell(Objective):
    r"""Sum of Huber wells :math:`G\,h_{G/L}(\lVert x-e_i\rVert)` around zero-mean centres.

    Parameters
    ----------
    offsets:
        ``(n, d)`` offsets :math:`e_i`; the wells' centres (the records) are
        :math:`e_i - c`. With the default ``centre`` their largest norm must stay below
        :math:`\delta = G/L` (so the optimum is in closed form).
    centre:
        ``(d,)`` public centre :math:`c`, fixed at construction and never recomputed from
        the data (:attr:`centre`). ``None`` (default) takes the mean of ``offsets``
        (:math:`\sum_i (e_i - c) = 0`, :math:`x^* = 0`). Pass ``centre=f.centre`` to build a
        neighbouring data set of ``f``: any records are then accepted, and the optimum is
        in closed form (:math:`x^*` the mean record) when every record lies within
        :math:`\delta` of it, else found numerically.
    G:
        Per-sample gradient bound (exact: attained outside the quadratic zone), ``> 0``.
    L:
        Per-sample smoothness, ``> 0``.
    backend:
        Array namespace or name.

    Notes
    -----
    **Records and neighbours [DERIVED].** :math:`\ell_i` depends on the record
    :math:`e_i` and the public :math:`(G, L, c)` only, and :math:`\lVert\nabla\ell_i\rVert
    \le G`; a neighbouring data set built with the same centre (``HuberWell(e2, G=G, L=L,
    centre=f.centre)``) changes one term, so the clipped sum moves by at most :math:`C`
    (add/remove) or :math:`2C` (replace-one), and an unclipped gradient sum by :math:`G` /
    :math:`2G`. Rebuilt without ``centre``, every centre moves with the data set's mean and
    no privacy claim covers the pair (see :class:`~dpbounds.objectives.QuadraticObjective`).
    """

    name = "huber_well"
    convex = True

    def __init__(self, offsets: Any, *, G: float = 1.0, L: float = 1.0,
                 centre: Any = None, backend: Any = None) -> None:
        e = finite_array("offsets", offsets, ndim=2)
        e, self.centre, self._shift_np = public_centre(e, centre)
        super().__init__(e.shape[0], e.shape[1], backend)
        self.G = check_positive("G", G)
        self.L = check_positive("L", L)
        self.delta = self.G / self.L
        self.offsets_np = e
        self.spread = float(np.max(np.linalg.norm(e, axis=1)))
        if self._shift_np is None and self.spread >= self.delta:
            raise ValueError(f"offsets: the largest centre norm {self.spread:.6g} must be below "
                             f"delta = G/L = {self.delta:.6g} (valid range [0, G/L))")
        self._to_xp()

    @classmethod
    def random(cls, n: int, d: int, *, G: float = 1.0, L: float = 1.0, spread: float = 0.0,
               seed: Any = None, backend: Any = None) -> HuberWell:
        """Centres uniform on the sphere of radius ``spread`` (then centred), from ``seed``.

        ``spread`` is a fraction-free radius in ``[0, G/L)``; ``n`` samples in dimension ``d``.
        """
        n = check_int("n", n, minimum=1)
        d = check_int("d", d, minimum=1)
        spread = check_nonnegative("spread", spread)
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((n, d))
        z /= np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-300)
        e = spread * z
        e -= e.mean(axis=0, keepdims=True)
        # centring can push a norm above `spread`; rescale so the declared radius holds
        m = float(np.max(np.linalg.norm(e, axis=1))) if n > 1 else 0.0
        if m > spread > 0:
            e *= spread / m
        return cls(e, G=G, L=L, backend=backend)

    def _to_xp(self) -> None:
        self._e = self.xp.asarray(self.offsets_np)

    def _gather(self, idx: Any) -> Any:
        xp = self.xp
        if idx is None:
            return self._e[None, :, :]
        trials, m = idx.shape
        return xp.reshape(xp.take(self._e, xp.reshape(idx, (-1,)), axis=0), (trials, m, self.d))

    # -- Objective API -------------------------------------------------------------------
    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        xp = self.xp
        z = x[:, None, :] - self._gather(idx)
        s = xp.linalg.vector_norm(z, axis=-1)
        quad = s * s / (2 * self.delta)
        return self.G * xp.where(s <= self.delta, quad, s - self.delta / 2)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        xp = self.xp
        z = x[:, None, :] - self._gather(idx)
        s = xp.linalg.vector_norm(z, axis=-1)
        scale = self.G / xp.maximum(s, xp.asarray(self.delta, dtype=s.dtype))
        return z * scale[..., None]

    # -- constants -----------------------------------------------------------------------
    @property
    def smoothness(self) -> float:
        return self.L

    @property
    def sample_smoothness(self) -> float:
        """Per-sample smoothness (read by Algorithm 2 for its difference clipping)."""
        return self.L

    @property
    def strong_convexity(self) -> float:
        """Linear growth far out: not strongly convex (0)."""
        return 0.0

    @property
    def gradient_bound(self) -> float:
        return self.G

    def lipschitz(self, radius: float = math.inf) -> float:
        return self.G

    def _solve(self) -> Optimum:
        if self._shift_np is None:
            x = np.zeros(self.d)
            value = self.L / 2 * float(np.mean(np.sum(self.offsets_np**2, axis=1)))
            return Optimum(x, value, 0.0, "closed form x* = 0 (all samples quadratic there)",
                           True)
        # another data set around the same centre: F is the mean of L/2 ||x - e_i||^2 near
        # the mean record m when every record is in its quadratic zone there (x* = m)
        m = self._shift_np
        z = self.offsets_np - m
        if float(np.max(np.linalg.norm(z, axis=1))) <= self.delta:
            value = self.L / 2 * float(np.mean(np.sum(z**2, axis=1)))
            return Optimum(m.copy(), value, 0.0, "closed form x* = mean record (all samples "
                           "quadratic there)", True)
        return self._solve_numerically(m)

    def _solve_numerically(self, start: np.ndarray) -> Optimum:
        """Convex and L-smooth: L-BFGS from ``start`` on the NumPy copy."""
        import scipy.optimize  # here, not at the top: 0.1-0.4 CPU-s of import
        f = self if is_numpy(self.xp) else self.to_backend("numpy")
        res = scipy.optimize.minimize(
            lambda v: float(f.loss(v[None, :])[0]), start, method="L-BFGS-B",
            jac=lambda v: np.asarray(f.grad(v[None, :])[0]),
            options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000})
        x = np.asarray(res.x, dtype=float)
        gn = float(np.linalg.norm(f.grad(x[None, :])[0]))
        return Optimum(x, float(f.loss(x[None, :])[0]), gn, "L-BFGS-B (convex)", True)

    def to_backend(self, backend: Any) -> HuberWell:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.xp = get_namespace(backend)
        new._to_xp()
        return new
