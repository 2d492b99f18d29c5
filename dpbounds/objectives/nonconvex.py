r"""A separable non-convex, :math:`(L_0,L_1)`-smooth finite sum (Yang et al. rig).

:math:`f_i(x)=\sum_j\big[\cosh(x_j)+a\cos(bx_j)\big]+e_i^\top x` with zero-mean offsets
:math:`e_i` (:func:`dpbounds.data.finite_sum_offsets`), so
:math:`F(x)=\sum_j\cosh(x_j)+a\cos(bx_j)` and the per-sample gradient noise
:math:`\nabla f_i-\nabla F=e_i` satisfies Yang et al.'s Assumption 2.2 with
:math:`\tau_0=\sup\lVert e_i\rVert`, :math:`\tau_1=0` (``yang_et_al.md`` §13, DERIVED rig).

Per coordinate :math:`F''=\cosh t-ab^2\cos(bt)`, so F is non-convex near 0 when
:math:`ab^2>1`, not globally :math:`L`-smooth (``smoothness = inf``), but
:math:`(L_0,L_1)`-smooth coordinate-wise: :math:`|F''|\le(1+ab+ab^2)+|F'|`
(:attr:`l0_smoothness`, :attr:`l1_smoothness`). :attr:`strong_convexity` is
:math:`1-ab^2` (the infimum of :math:`F''`). The global minimum is separable and computed
to machine precision by a 1-D search.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.backend import get_namespace
from dpbounds.objectives._base import Objective, Optimum, finite_array, public_centre
from dpbounds.provenance import YANG, Provenance, Source

__all__ = ["CoshCosineObjective"]


class CoshCosineObjective(Objective):
    r"""``F(x) = Σ_j cosh(x_j) + a cos(b x_j)`` as a finite sum with zero-mean offsets.

    Parameters
    ----------
    d:
        Dimension.
    a, b:
        Shape (non-convex near 0 when ``a b² > 1``; defaults ``a = 1``, ``b = 2``).
    offsets:
        ``(n, d)`` offsets :math:`e_i`; the records are :math:`e_i - c`. ``None`` means
        ``n = 1`` and no gradient noise.
    centre:
        ``(d,)`` public centre :math:`c`, fixed at construction and never recomputed from
        the data (:attr:`centre`); ``None`` (default) takes the mean of ``offsets``, so the
        records sum to 0 and ``F`` is the rig's. Pass ``centre=f.centre`` to build a
        neighbouring data set of ``f``: the mean record :math:`\bar r` then tilts ``F`` by
        :math:`\bar r^\top x`. A record's loss depends on that record and the public
        :math:`(a, b, c)` only, so a clipped sum moves by :math:`C` (add/remove) or
        :math:`2C` (replace-one) between such neighbours **[DERIVED]**; see
        :class:`~dpbounds.objectives.QuadraticObjective` (Notes). Its ``l1_sensitivity`` /
        ``l2_sensitivity`` come from this data set's records (no declared radius), so an
        unclipped run on neighbours needs a public bound passed as ``sensitivity=``.
    backend:
        Array namespace or name.

    Example
    -------
    >>> from dpbounds.objectives import CoshCosineObjective
    >>> f = CoshCosineObjective(3)
    >>> round(f.optimum.value, 6), f.strong_convexity
    (3.211732, -3.0)
    """

    #: computed from the records (no declared radius): a private selection refuses any read
    #: (review of stop 79: DP-GD's noise followed max ||e_i||, 160x apart on neighbours)
    DATA_ONLY: tuple[str, ...] = ("l1_sensitivity", "l2_sensitivity", "tau0")

    name = "cosh_cosine"
    convex = False
    source = Source(YANG, "simulation rig (sheet §13)", Provenance.DERIVED)

    def __init__(self, d: int, *, a: float = 1.0, b: float = 2.0, offsets: Any = None,
                 centre: Any = None, backend: Any = None) -> None:
        d = check_int("d", d)
        self.a = check_nonnegative("a", a)
        self.b = check_positive("b", b)
        e = np.zeros((1, d)) if offsets is None else finite_array("offsets", offsets)
        if e.ndim != 2 or e.shape[1] != d:
            raise ValueError(f"offsets must have shape (n, {d}), got {e.shape}")
        e, self.centre, self._shift_np = public_centre(e, centre)
        super().__init__(e.shape[0], d, backend)
        self.offsets_np = e
        self._to_xp()
        self.tau0 = float(np.max(np.linalg.norm(e, axis=1)))

    def _to_xp(self) -> None:
        self._e = self.xp.asarray(self.offsets_np)
        # mean record (None: 0, the default centre): tilts the full objective
        self._shift = None if self._shift_np is None else self.xp.asarray(self._shift_np)

    def _F(self, x: Any) -> Any:
        xp = self.xp
        return xp.sum(xp.cosh(x) + self.a * xp.cos(self.b * x), axis=1)

    def _mean_grad(self, x: Any) -> Any:
        xp = self.xp
        return xp.sinh(x) - self.a * self.b * xp.sin(self.b * x)

    def _gather(self, idx: Any) -> Any:
        xp = self.xp
        t, m = idx.shape
        return xp.reshape(xp.take(self._e, xp.reshape(idx, (-1,)), axis=0), (t, m, self.d))

    def loss(self, x: Any) -> Any:
        self.check_state(x)
        f = self._F(x)
        return f if self._shift is None else f + self.xp.sum(x * self._shift, axis=1)

    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        e = self._e[None, :, :] if idx is None else self._gather(idx)
        return self._F(x)[:, None] + self.xp.sum(e * x[:, None, :], axis=-1)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        e = self._e[None, :, :] if idx is None else self._gather(idx)
        return self._mean_grad(x)[:, None, :] + e

    def _gradient_parts(self, x: Any, idx: Any) -> tuple[Any, Any]:
        """``(records' part, shared part)`` of :meth:`_data_grad` (as the quadratic's)."""
        xp = self.xp
        shared = self._mean_grad(x)
        if idx is None:
            part = (xp.zeros_like(shared) if self._shift is None
                    else xp.broadcast_to(self._shift[None, :], shared.shape))
            return part, shared
        return xp.mean(self._gather(idx), axis=1), shared

    def _data_grad(self, x: Any, idx: Any) -> Any:
        g = self._mean_grad(x)
        if idx is None:
            return g if self._shift is None else g + self._shift[None, :]
        return g + self.xp.mean(self._gather(idx), axis=1)

    @property
    def smoothness(self) -> float:
        """Not globally smooth (cosh): ``inf``; see :attr:`l0_smoothness`."""
        return math.inf

    @property
    def l0_smoothness(self) -> float:
        """:math:`L_0=1+ab+ab^2` of the coordinate-wise bound :math:`|F''|\\le L_0+L_1|F'|`."""
        return 1.0 + self.a * self.b + self.a * self.b**2

    @property
    def l1_smoothness(self) -> float:
        return 1.0

    @property
    def strong_convexity(self) -> float:
        return 1.0 - self.a * self.b**2

    @property
    def l1_sensitivity(self) -> float:
        return 2.0 * float(np.max(np.sum(np.abs(self.offsets_np), axis=1)))

    @property
    def l2_sensitivity(self) -> float:
        return 2.0 * self.tau0

    def _solve(self) -> Optimum:
        if self._shift_np is None:
            s = self._minimise_1d(0.0)
            x = np.full(self.d, s)
            g = self._g1(s, 0.0)
            val = self.d * (math.cosh(s) + self.a * math.cos(self.b * s))
            gn = abs(g) * math.sqrt(self.d)
        else:  # separable with a tilt r_j per coordinate: one 1-D search each
            x = np.array([self._minimise_1d(float(r)) for r in self._shift_np])
            val = float(np.sum(np.cosh(x) + self.a * np.cos(self.b * x) + self._shift_np * x))
            gn = float(np.linalg.norm([self._g1(float(s), float(r))
                                       for s, r in zip(x, self._shift_np, strict=True)]))
        return Optimum(x, val, gn, "separable 1-D search + Newton", True)

    def _g1(self, s: float, tilt: float) -> float:
        return math.sinh(s) - self.a * self.b * math.sin(self.b * s) + tilt

    def _minimise_1d(self, tilt: float) -> float:
        """Global minimiser of ``cosh s + a cos(b s) + tilt s`` (grid, bracket, Newton)."""
        import scipy.optimize  # here, not at the top: 0.1-0.4 CPU-s of import
        a, b = self.a, self.b
        half = 5.0 + math.asinh(abs(tilt))  # the minimiser has |sinh s| <= |tilt| + a b
        t = np.linspace(-half, half, 20001)
        t0 = t[np.argmin(np.cosh(t) + a * np.cos(b * t) + tilt * t)]
        w = max(1e-3, 2 * half / 20000)  # a grid step or more either side of the grid's best
        res = scipy.optimize.minimize_scalar(
            lambda s: math.cosh(s) + a * math.cos(b * s) + tilt * s,
            bracket=(t0 - w, t0, t0 + w), options={"xtol": 1e-14})
        s = float(res.x)
        for _ in range(5):  # Newton polish on g'(s) = 0
            g1 = self._g1(s, tilt)
            g2 = math.cosh(s) - a * b * b * math.cos(b * s)
            if g2 <= 0:
                break
            s -= g1 / g2
        return s

    def to_backend(self, backend: Any) -> CoshCosineObjective:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.xp = get_namespace(backend)
        new._to_xp()
        return new
