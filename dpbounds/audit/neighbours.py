r"""Worst-case neighbouring data sets for auditing, as objectives the algorithms accept.

The audit objective has linear per-sample losses,

.. math:: F_D(x) = \frac1n\sum_{i\in D}\langle c_i, x\rangle + \frac\lambda2\lVert x\rVert^2,

so every per-sample gradient is the constant :math:`c_i`: a record's gradient has the same
norm and direction at every iterate, and the gap between the gradient queries on
neighbouring data sets is the same at every step. With :math:`\lVert c_i\rVert` above the
clipping norm, clipping is active and the clipped gradient sits exactly on the clipping
sphere, so the change attains the declared sensitivity:

* **replace-one** (:func:`replace_one_pair`): :math:`D=\{+r e_1\}`, :math:`D'=\{-r e_1\}`:
  the one record's gradient flips, a change of :math:`2r` (:math:`2C` after clipping to
  :math:`C<r`), in L1 and L2 alike;
* **add/remove** (:func:`add_remove_pair`): :math:`D=\{+r e_1\}`, :math:`D'=D\cup\{-r e_1\}`:
  the added record pulls against the other, a change of the sum by :math:`r` (:math:`C`);
* **replace-one with an offset record** (:func:`offset_pair`): :math:`D=\{+r e_1, o e_1\}`,
  :math:`D'=\{-r e_1, o e_1\}` with :math:`o = C` (never clipped): the same change of
  :math:`2C`, and clipped sums of norm :math:`2C` on D and exactly 0 on D', so a noise scale
  read from the data (a bug) differs between the neighbours.

The declared data domain (``l2_radius``, ``l1_radius``) is the ball the records were drawn
from, so ``gradient_bound``, ``l1_sensitivity`` and ``l2_sensitivity`` are exactly the
bounds the algorithms calibrate with. :math:`\lambda` is the public regulariser (it gives
strong convexity where an algorithm needs it and is never noised).

**Transcript tap.** Every iterative algorithm in :mod:`dpbounds.algorithms` evaluates the
public regulariser gradient once per step, at the point where it queries the data
gradient. With ``record=True`` the objective keeps a host copy of every such point
(:attr:`LinearObjective.queries`): the iterates the algorithm released, from which the
audit recovers the per-step noisy gradients. Nothing else about the algorithm is touched.

Example
-------
>>> import numpy as np
>>> from dpbounds.audit.neighbours import replace_one_pair
>>> d, dp = replace_one_pair(dim=1, radius=2.0)
>>> d.gradients, dp.gradients
(array([[2.]]), array([[-2.]]))
>>> d.l2_sensitivity, d.l1_sensitivity
(4.0, 4.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.backend import get_namespace, to_numpy
from dpbounds.objectives._base import Objective, Optimum

__all__ = []


class LinearObjective(Objective):
    r"""Linear per-sample losses :math:`\ell_i(x)=\langle c_i,x\rangle` plus
    :math:`\frac\lambda2\lVert x\rVert^2` (see the module docstring).

    Parameters
    ----------
    gradients:
        ``(n, d)`` array of the per-sample gradients :math:`c_i`.
    l2:
        :math:`\lambda \ge 0`, the public regulariser.
    smoothness:
        Declared :math:`L \ge \lambda` (default ``max(λ, 1)``): any upper bound is a valid
        smoothness constant; algorithms take default step sizes from it.
    l2_radius, l1_radius:
        Declared bounds on :math:`\lVert c\rVert_2`, :math:`\lVert c\rVert_1` over the data
        domain (default: the largest over ``gradients``).
    record:
        Keep a host copy of every point the regulariser gradient is evaluated at
        (:attr:`queries`).
    backend:
        Array namespace or name.
    """

    name = "linear (audit)"
    #: radii that default to the data's own values unless declared (``radius_declared``)
    DATA_RADII: tuple[str, ...] = ("l1_radius", "l2_radius")
    #: the radius each calibration constant is computed from (see ``MarginLossObjective``)
    CALIBRATION_RADII: dict[str, str] = {
        "l1_sensitivity": "l1_radius", "l2_sensitivity": "l2_radius",
        "gradient_bound": "l2_radius", "lipschitz": "l2_radius", "l1_radius": "l1_radius",
        "l2_radius": "l2_radius"}

    def __init__(self, gradients: Any, *, l2: float = 0.0, smoothness: float | None = None,
                 l2_radius: float | None = None, l1_radius: float | None = None,
                 record: bool = False, backend: Any = None) -> None:
        c = np.asarray(gradients, dtype=float)
        if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] < 1 or not np.all(np.isfinite(c)):
            raise ValueError(f"gradients must be a finite (n, d) array, got shape {c.shape}")
        super().__init__(c.shape[0], c.shape[1], backend)
        self.gradients = c
        self.l2 = check_nonnegative("l2", l2)
        L = max(self.l2, 1.0) if smoothness is None else check_positive("smoothness", smoothness)
        if L < self.l2:
            raise ValueError(f"smoothness must be >= l2 = {self.l2}, got {L}")
        self._smoothness = float(L)
        self.radius_declared = {"l1_radius": l1_radius is not None,
                                "l2_radius": l2_radius is not None}
        self.l2_radius = float(np.max(np.linalg.norm(c, axis=1))) if l2_radius is None \
            else check_positive("l2_radius", l2_radius)
        self.l1_radius = float(np.max(np.sum(np.abs(c), axis=1))) if l1_radius is None \
            else check_positive("l1_radius", l1_radius)
        self.record = bool(record)
        self.queries: list[np.ndarray] = []
        self._c = self.xp.asarray(c)

    # -- the transcript tap --------------------------------------------------------------
    def tapped(self) -> LinearObjective:
        """A copy with an empty :attr:`queries` list that records (same data, backend)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.record = True
        new.queries = []
        return new

    def regularizer(self, x: Any) -> Any:
        return 0.5 * self.l2 * self.xp.sum(x * x, axis=1)

    def regularizer_grad(self, x: Any) -> Any:
        if self.record:
            self.queries.append(np.array(to_numpy(x), dtype=float, copy=True))
        return self.l2 * x

    # -- data term -----------------------------------------------------------------------
    def _rows(self, idx: Any) -> Any:
        xp = self.xp
        if idx is None:
            return self._c[None, :, :]
        trials, m = idx.shape
        return xp.reshape(xp.take(self._c, xp.reshape(idx, (-1,)), axis=0),
                          (trials, m, self.d))

    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        return self.xp.sum(self._rows(idx) * x[:, None, :], axis=-1)

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        self.check_state(x)
        rows = self._rows(idx)
        if idx is None:
            rows = self.xp.broadcast_to(rows, (x.shape[0], self.n, self.d))
        return rows

    def _data_grad(self, x: Any, idx: Any) -> Any:
        if idx is None:
            return self.xp.broadcast_to(self.xp.mean(self._c, axis=0)[None, :], x.shape)
        return self.xp.mean(self._rows(idx), axis=1)

    # -- constants -----------------------------------------------------------------------
    @property
    def smoothness(self) -> float:
        return self._smoothness

    @property
    def strong_convexity(self) -> float:
        return self.l2

    @property
    def gradient_bound(self) -> float:
        return self.l2_radius

    @property
    def l1_sensitivity(self) -> float:
        return 2.0 * self.l1_radius

    @property
    def l2_sensitivity(self) -> float:
        return 2.0 * self.l2_radius

    def _reg_lipschitz(self, radius: float) -> float:
        return self.l2 * radius

    def _solve(self) -> Optimum:
        if self.l2 <= 0:
            raise ValueError("a linear objective without regulariser (l2 = 0) has no minimum")
        x = -self.gradients.mean(axis=0) / self.l2
        value = float(self.gradients.mean(axis=0) @ x + 0.5 * self.l2 * x @ x)
        return Optimum(x, value, 0.0, "closed form x* = -mean(c) / l2", True)

    def to_backend(self, backend: Any) -> LinearObjective:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.xp = get_namespace(backend)
        new._c = new.xp.asarray(self.gradients)
        new.queries = []
        return new


def _unit(dim: int) -> np.ndarray:
    # an audit pair is a few records in a few dimensions; 10^6 keeps a typo from eating memory
    e = np.zeros(check_int("dim", dim, minimum=1, maximum=10**6))
    e[0] = 1.0
    return e


def _domain(kwargs: dict[str, Any], radius: float) -> dict[str, Any]:
    """``kwargs`` with the records' domain declared where not given: records on the first
    axis of norm at most ``radius`` (both norms), the same for both data sets, so the runs'
    noise is the pair's public bound, not each data set's largest record."""
    return {"l1_radius": radius, "l2_radius": radius, **kwargs}


def replace_one_pair(dim: int = 1, radius: float = 1.0, **kwargs: Any
                     ) -> tuple[LinearObjective, LinearObjective]:
    r"""``(D, D')`` with one record each, :math:`+r e_1` and :math:`-r e_1` (replace-one)."""
    r = check_positive("radius", radius)
    e = _unit(dim)
    kwargs = _domain(kwargs, r)
    return (LinearObjective((r * e)[None, :], **kwargs),
            LinearObjective((-r * e)[None, :], **kwargs))


def offset_pair(dim: int = 1, radius: float = 1.0, offset: float = 1.0, copies: int = 1,
                **kwargs: Any) -> tuple[LinearObjective, LinearObjective]:
    r"""Replace-one ``(D, D')`` with ``1 + copies`` records each: :math:`D=\{+r e_1, o e_1\}`,
    :math:`D'=\{-r e_1, o e_1\}` (``o = offset``); with ``copies = k > 1`` the offset is
    split over ``k`` equal records :math:`(o/k) e_1` (same sums, ``n = k + 1`` records: a
    full batch is then ``B = n > 1``, so a sampling rate read as ``1/n`` is wrong).

    With ``offset`` equal to the clipping norm :math:`C < r`, the offset record is never
    clipped and the clipped sums are :math:`2C e_1` on D and exactly 0 on D': the records of
    D' cancel. A full-batch mechanism sees the same change :math:`2C` of the sum as on
    :func:`replace_one_pair` (the offset moves both neighbours' releases by the same
    constant), while a noise scale computed from the data (the ``data_dependent`` mutant:
    sigma times the clipped sum's norm over C) is 2 sigma on D and 0 (floored) on D'."""
    r = check_positive("radius", radius)
    o = check_positive("offset", offset)
    k = check_int("copies", copies, minimum=1)
    e = _unit(dim)
    kwargs = _domain(kwargs, max(r, o / k))
    rest = np.tile((o / k) * e, (k, 1))
    return (LinearObjective(np.vstack([r * e, rest]), **kwargs),
            LinearObjective(np.vstack([-r * e, rest]), **kwargs))


def add_remove_pair(dim: int = 1, radius: float = 1.0, **kwargs: Any
                    ) -> tuple[LinearObjective, LinearObjective]:
    r"""``(D, D')``: :math:`D=\{+r e_1\}`, :math:`D'=D\cup\{-r e_1\}` (add/remove)."""
    r = check_positive("radius", radius)
    e = _unit(dim)
    kwargs = _domain(kwargs, r)
    return (LinearObjective((r * e)[None, :], **kwargs),
            LinearObjective(np.stack([r * e, -r * e]), **kwargs))
