r"""Quadratic finite sums with any spectrum and a closed-form optimum.

:math:`f_i(x)=\tfrac12x^\top Qx-b^\top x+(e_i-c)^\top x` with a **public centre** :math:`c`
fixed at construction (default: the mean of the given offsets, so that
:math:`\sum_i(e_i-c)=0`, :math:`F(x)=\tfrac12x^\top Qx-b^\top x`, :math:`x^*=Q^{-1}b`,
:math:`F^*=-\tfrac12b^\top Q^{-1}b` for :math:`Q\succ0`; with another data set and the same
centre, :math:`\bar r=\frac1n\sum_i(e_i-c)` tilts it: :math:`x^*=Q^{-1}(b-\bar r)`). A
record's loss depends on that record and public parameters only, so a neighbouring data set
built with the same centre (``centre=f.centre``) moves one term; see :class:`QuadraticObjective`
for the privacy argument. The per-sample gradient
:math:`Qx-b+e_i` differs between samples only by the offsets, so the sensitivities are
state-independent: ``S_1 = 2 sup||e||_1``, L2 ``2 sup||e||_2``. This is the synthetic
finite sum of ``yang_et_al.md`` §13 (``F + <a_i, x>`` with ``Σ a_i = 0``), and with no
offsets (``n = 1``) the deterministic quadratic (24) of Kuru et al. Theorem 3.5.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_finite, check_int
from dpbounds.backend import get_namespace, rowwise_matmul, to_numpy
from dpbounds.objectives._base import Objective, Optimum, finite_array, public_centre
from dpbounds.provenance import KURU, Provenance, Source

__all__ = ["QuadraticObjective"]


class QuadraticObjective(Objective):
    r"""Quadratic :math:`F(x)=\frac12x^\top Qx-b^\top x` as a finite sum with zero-mean offsets.

    Parameters
    ----------
    eigenvalues:
        Spectrum of ``Q`` (any real values; ``Q`` need not be definite, but
        :attr:`optimum` requires ``Q ≻ 0``).
    basis:
        ``None`` (``Q`` diagonal, stored as a vector: fine for ``d = 10**6``), ``"random"``
        (a Haar-random orthogonal basis drawn from ``seed``), or a ``(d, d)`` orthogonal
        matrix ``V`` (``Q = V diag(λ) Vᵀ``).
    b:
        Linear term, shape ``(d,)`` (zeros by default, so ``x* = 0``).
    offsets:
        ``(n, d)`` per-sample offsets ``e_i``; the records are ``e_i - centre``.
        ``None`` means one sample (``n = 1``), no data noise.
    centre:
        ``(d,)`` public centre :math:`c`, fixed at construction and never recomputed from
        the data (:attr:`centre`). ``None`` (default) takes the mean of ``offsets``, so that
        ``Σ (e_i - c) = 0`` and ``F`` is exactly the quadratic; pass ``centre=f.centre`` to
        build a neighbouring data set of ``f`` (see Notes).
    offset_l1_radius, offset_l2_radius:
        Declared bounds on ``||e - c||_1`` and ``||e - c||_2`` over the data universe
        (default: the maximum over the given records).
    seed:
        Seed for ``basis="random"``.
    backend:
        Array namespace or name.

    Notes
    -----
    **Records and neighbours [DERIVED].** The per-example loss
    :math:`f_i(x)=\tfrac12x^\top Qx-b^\top x+(e_i-c)^\top x` is a function of the record
    :math:`e_i` and of the public :math:`(Q,b,c)` only. For a data set :math:`D'` that adds,
    removes or replaces one record and keeps :math:`c` (``QuadraticObjective(eigenvalues,
    b=b, offsets=e2, centre=f.centre, ...)``), every other term is unchanged, so a clipped
    gradient sum moves by at most :math:`C` (add/remove) or :math:`2C` (replace-one): the
    sensitivities the DP algorithms calibrate to. Rebuilding :math:`D'` **without**
    ``centre`` recomputes :math:`c` from :math:`D'`: adding a record :math:`z` then moves
    every centred offset by :math:`(e_z-\bar e)/(n+1)` and a clipped sum by up to
    :math:`C+n\lVert e_z-\bar e\rVert/(n+1)` (57 = 19 C at :math:`D=\{\pm1\}\times10`,
    :math:`D'=D\cup\{1000\}`, :math:`C=3`): that pair is not a neighbouring pair of one
    mechanism, and no privacy claim covers it. The default centre is the mean of the given
    offsets: a run's claim then protects the records :math:`e_i-c` of the data set it
    received; when the raw offsets are private, pass a centre computed from public data.

    Example
    -------
    >>> from dpbounds.objectives import QuadraticObjective
    >>> q = QuadraticObjective([0.5, 1.0], b=[1.0, 1.0])
    >>> q.optimum.x, q.optimum.value
    (array([2., 1.]), -1.5)
    >>> q = QuadraticObjective([1.0], offsets=[[1.0], [-1.0], [3.0]])
    >>> q.centre, q.optimum.x
    (array([1.]), array([0.]))
    >>> q2 = QuadraticObjective([1.0], offsets=[[1.0], [-1.0], [3.0], [5.0]], centre=q.centre)
    >>> q2.optimum.x          # the added record's tilt: x* = -(mean(e) - c) = -1
    array([-1.])
    """

    #: constants that default to the data's own values unless declared (``radius_declared``)
    DATA_RADII: tuple[str, ...] = ("offset_l1_radius", "offset_l2_radius")
    #: the radius each calibration constant is computed from (see ``MarginLossObjective``)
    CALIBRATION_RADII: dict[str, str] = {
        "l1_sensitivity": "offset_l1_radius", "l2_sensitivity": "offset_l2_radius",
        "lipschitz": "offset_l2_radius", "offset_l1_radius": "offset_l1_radius",
        "offset_l2_radius": "offset_l2_radius"}

    name = "quadratic"
    source = Source(KURU, "Theorem 3.5, eq. (24)", Provenance.VERBATIM)

    def __init__(
        self,
        eigenvalues: Any,
        *,
        basis: Any = None,
        b: Any = None,
        offsets: Any = None,
        centre: Any = None,
        offset_l1_radius: float | None = None,
        offset_l2_radius: float | None = None,
        seed: Any = None,
        backend: Any = None,
    ) -> None:
        lam = np.asarray(check_finite("eigenvalues", np.asarray(eigenvalues, dtype=float)),
                         dtype=float).reshape(-1)
        d = lam.shape[0]
        if d < 1:
            raise ValueError("eigenvalues must be non-empty")
        if offsets is None:
            e = np.zeros((1, d))
        else:
            e = finite_array("offsets", offsets)
            if e.ndim != 2 or e.shape[1] != d:
                raise ValueError(f"offsets must have shape (n, {d}), got {e.shape}")
        e, self.centre, self._shift_np = public_centre(e, centre)
        super().__init__(e.shape[0], d, backend)
        self.eigenvalues = lam
        if basis is None:
            self.basis = None
        elif isinstance(basis, str):
            if basis != "random":
                raise ValueError(f"basis must be None, 'random' or a (d, d) matrix, got {basis!r}")
            rng = np.random.default_rng(seed)
            qmat, r = np.linalg.qr(rng.standard_normal((d, d)))
            self.basis = qmat * np.sign(np.diag(r))
        else:
            V = np.asarray(to_numpy(basis), dtype=float)
            if V.shape != (d, d) or not np.allclose(V.T @ V, np.eye(d), atol=1e-8):
                raise ValueError(f"basis must be an orthogonal ({d}, {d}) matrix")
            self.basis = V
        self.b_np = np.zeros(d) if b is None else finite_array("b", b).reshape(-1)
        if self.b_np.shape != (d,):
            raise ValueError(f"b must have shape ({d},), got {self.b_np.shape}")
        self.offsets_np = e
        self._e_l1 = float(np.max(np.sum(np.abs(e), axis=1)))
        self._e_l2 = float(np.max(np.linalg.norm(e, axis=1)))
        # which radius is declared and which the data's own (private selection: review of
        # stop 79, an undeclared offset radius calibrated DP-GD's noise to the data)
        self.radius_declared = {"offset_l1_radius": offset_l1_radius is not None,
                                "offset_l2_radius": offset_l2_radius is not None}
        self.offset_l1_radius = (self._e_l1 if offset_l1_radius is None
                                 else check_finite("offset_l1_radius", offset_l1_radius))
        self.offset_l2_radius = (self._e_l2 if offset_l2_radius is None
                                 else check_finite("offset_l2_radius", offset_l2_radius))
        # a declared radius below the data's own offsets would under-state the sensitivity
        if (self.offset_l1_radius < self._e_l1 * (1 - 1e-12)
                or self.offset_l2_radius < self._e_l2 * (1 - 1e-12)):
            raise ValueError("offset_l1_radius/offset_l2_radius must bound the norms of every "
                             f"(centred) offset: at least {self._e_l1:.6g} / {self._e_l2:.6g}")
        # a radius declared within the tolerance below them (a rounded value) is raised to
        # them: every sensitivity derived from it must bound the actual offsets
        self.offset_l1_radius = max(self.offset_l1_radius, self._e_l1)
        self.offset_l2_radius = max(self.offset_l2_radius, self._e_l2)
        # the values as built: a private selection reads a declared radius only while it
        # still holds them (a subclass that sets another one afterwards is refused)
        self.radius_values = {"offset_l1_radius": self.offset_l1_radius,
                              "offset_l2_radius": self.offset_l2_radius}
        self._to_xp()

    def _to_xp(self) -> None:
        xp = self.xp
        if self.basis is None:
            self._diag = xp.asarray(self.eigenvalues)
            self._Q = None
        else:
            self._diag = None
            self._Q = xp.asarray((self.basis * self.eigenvalues) @ self.basis.T)
        self._b = xp.asarray(self.b_np)
        self._e = xp.asarray(self.offsets_np)
        self._has_offsets = bool(np.any(self.offsets_np != 0))
        # mean record (0 when the centre is the offsets' own mean): tilts the full objective
        self._shift = None if self._shift_np is None else xp.asarray(self._shift_np)

    @property
    def hessian(self) -> np.ndarray:
        """``Q`` as a dense NumPy matrix (small ``d`` only)."""
        if self.basis is None:
            return np.diag(self.eigenvalues)
        return (self.basis * self.eigenvalues) @ self.basis.T

    def _Qx(self, x: Any) -> Any:
        return x * self._diag if self._Q is None else rowwise_matmul(self.xp, x, self._Q)

    def _mean_grad(self, x: Any) -> Any:
        """``Qx - b``: the part of the gradient every sample shares."""
        return self._Qx(x) - self._b

    def _full_grad(self, x: Any) -> Any:
        """Mean data gradient over all n records: ``Qx - b`` plus the mean record."""
        g = self._mean_grad(x)
        return g if self._shift is None else g + self._shift[None, :]

    def _gather(self, idx: Any) -> Any:
        xp = self.xp
        trials, m = idx.shape
        return xp.reshape(xp.take(self._e, xp.reshape(idx, (-1,)), axis=0), (trials, m, self.d))

    # -- Objective API -------------------------------------------------------------------
    def _shared_loss(self, x: Any) -> Any:
        xp = self.xp
        return 0.5 * xp.sum(x * self._Qx(x), axis=1) - xp.sum(x * self._b, axis=1)

    def loss(self, x: Any) -> Any:
        self.check_state(x)
        f = self._shared_loss(x)
        return f if self._shift is None else f + self.xp.sum(x * self._shift, axis=1)

    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        xp = self.xp
        base = self._shared_loss(x)[:, None]
        e = self._e[None, :, :] if idx is None else self._gather(idx)
        return base + xp.sum(e * x[:, None, :], axis=-1)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        e = self._e[None, :, :] if idx is None else self._gather(idx)
        return self._mean_grad(x)[:, None, :] + e

    def _gradient_parts(self, x: Any, idx: Any) -> tuple[Any, Any]:
        """``(records' part, shared part)`` of :meth:`_data_grad`: the mean record (or the
        mini-batch's) and ``Qx - b``, which no record changes (a release-safe grid rounds the
        first alone; see :func:`dpbounds.algorithms._common.gradient_parts`)."""
        xp = self.xp
        shared = self._mean_grad(x)
        if not self._has_offsets:
            return xp.zeros_like(shared), shared
        if idx is None:
            if self._shift is None:  # the records' mean is 0
                return xp.zeros_like(shared), shared
            return xp.broadcast_to(self._shift[None, :], shared.shape), shared
        return xp.mean(self._gather(idx), axis=1), shared

    def _data_grad(self, x: Any, idx: Any) -> Any:
        if idx is None:
            return self._full_grad(x)
        g = self._mean_grad(x)
        if not self._has_offsets:
            return g
        return g + self.xp.mean(self._gather(idx), axis=1)

    # -- constants -----------------------------------------------------------------------
    @property
    def smoothness(self) -> float:
        return float(np.max(self.eigenvalues))

    @property
    def strong_convexity(self) -> float:
        return float(np.min(self.eigenvalues))

    @property
    def gradient_bound(self) -> float:
        """Unbounded on R^d (use :meth:`lipschitz` with a radius)."""
        return math.inf

    @property
    def problem_class(self) -> str:
        """``"quadratic"`` (positive definite; ``"convex"`` when an eigenvalue is 0)."""
        return "quadratic" if self.strong_convexity > 0 else "convex"

    def lipschitz(self, radius: float = math.inf) -> float:
        """``sup ||Qx - b + e|| <= max|λ| r + ||b|| + sup||e||`` on ``||x|| <= r``."""
        if math.isinf(radius):
            return math.inf
        return (float(np.max(np.abs(self.eigenvalues))) * radius
                + float(np.linalg.norm(self.b_np)) + self.offset_l2_radius)

    @property
    def l1_sensitivity(self) -> float:
        """``S_1 = 2 sup ||e||_1`` (the quadratic part cancels between samples)."""
        return 2.0 * self.offset_l1_radius

    @property
    def l2_sensitivity(self) -> float:
        return 2.0 * self.offset_l2_radius

    def _solve(self) -> Optimum:
        lam = self.eigenvalues
        if np.min(lam) <= 0:
            raise ValueError("optimum needs a positive-definite Q (all eigenvalues > 0)")
        # F = x'Qx/2 - (b - mean record)'x: the mean record is 0 for the default centre
        b = self.b_np if self._shift_np is None else self.b_np - self._shift_np
        if self.basis is None:
            x = b / lam
        else:
            x = self.basis @ ((self.basis.T @ b) / lam)
        value = -0.5 * float(b @ x)
        return Optimum(x, value, 0.0, "closed form x* = Q^{-1} b", True)

    def to_backend(self, backend: Any) -> QuadraticObjective:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.xp = get_namespace(backend)
        new._to_xp()
        return new

    @classmethod
    def random(cls, d: int, mu: float, L: float, *, n: int = 1, offset_scale: float = 0.0,
               seed: Any = None, backend: Any = None, rotate: bool = True,
               offset_l1_radius: float | None = None,
               offset_l2_radius: float | None = None) -> QuadraticObjective:
        """Spectrum log-spaced in ``[mu, L]``, random basis, ``b`` and offsets from ``seed``;
        ``offset_l1_radius`` / ``offset_l2_radius`` declare the offsets' domain (default:
        the drawn offsets' own largest norms, which a private selection refuses to read)."""
        d = check_int("d", d)
        n = check_int("n", n)
        rng = np.random.default_rng(seed)
        lam = np.geomspace(mu, L, d) if d > 1 else np.array([L])
        b = rng.standard_normal(d)
        offsets = None if n == 1 else offset_scale * rng.standard_normal((n, d))
        return cls(lam, basis="random" if rotate else None, b=b, offsets=offsets,
                   seed=rng.integers(2**32), backend=backend,
                   offset_l1_radius=offset_l1_radius, offset_l2_radius=offset_l2_radius)
