"""The :class:`Objective` interface shared by every finite-sum objective."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_positive
from dpbounds.backend import MAX_TRIALS, get_namespace, to_numpy

__all__ = ["Objective", "ObjectiveProtocol", "Optimum"]

#: Largest state ``trials x d`` (float64 elements, 8 GiB) an objective hands out.
MAX_STATE_ELEMENTS: int = 2**30


def finite_array(name: str, value: Any, ndim: int | None = None) -> np.ndarray:
    """``value`` as a float64 NumPy array; ``ValueError`` naming ``name`` unless it is real,
    finite (no NaN or inf) and, when ``ndim`` is given, of that dimension."""
    try:
        raw = to_numpy(value)
        if np.iscomplexobj(raw):  # float64() dropped the imaginary part with only a warning
            raise ValueError(f"{name} must be real, got complex values")
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if "must be real" in str(exc):
            raise
        raise ValueError(f"{name} must be an array of real numbers") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if not _all_finite(arr):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} must be finite: {bad} entries are NaN or inf")
    return arr


def _all_finite(arr: np.ndarray) -> bool:
    """``np.all(np.isfinite(arr))`` a million entries at a time for a large C-contiguous array
    (the one-shot mask is an n x d boolean temporary, 1/8 of the data at large d)."""
    if arr.size <= 1 << 20 or not arr.flags.c_contiguous:
        return bool(np.all(np.isfinite(arr)))
    flat = arr.reshape(-1)  # a view
    return all(bool(np.all(np.isfinite(flat[a:a + (1 << 20)])))
               for a in range(0, flat.size, 1 << 20))


def public_centre(offsets: np.ndarray, centre: Any
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    r"""``(records, centre, mean record)`` of per-sample offsets around a public centre.

    ``centre=None`` takes the offsets' own mean: records ``e_i - mean(e)`` (computed as the
    centred objectives always did, bit for bit) and mean record ``None`` (zero). A given
    ``(d,)`` centre is used as is, never recomputed: records ``e_i - c`` and their mean
    (which tilts ``F`` when the data set is not the one the centre came from). A record's
    loss then depends on that record and the public centre only **[DERIVED]**.
    """
    d = offsets.shape[1]
    if centre is None:
        mean = offsets.mean(axis=0, keepdims=True)
        return offsets - mean, mean[0].copy(), None
    c = finite_array("centre", centre).reshape(-1)
    if c.shape != (d,):
        raise ValueError(f"centre must have shape ({d},), got {np.shape(centre)}")
    records = offsets - c[None, :]
    return records, c, records.mean(axis=0)


@dataclass(frozen=True)
class Optimum:
    """A minimiser found by a deterministic solver.

    Attributes
    ----------
    x:
        Minimiser, NumPy array of shape ``(d,)``.
    value:
        ``F(x)`` (full objective, regulariser included).
    grad_norm:
        ``||∇F(x)||_2`` at the returned point (how accurate it is).
    method:
        How it was computed (``"closed form"``, ``"trust-exact"``, ...).
    is_global:
        True for convex objectives (and closed forms); False for a local minimum of a
        non-convex objective.
    """

    x: np.ndarray
    value: float
    grad_norm: float
    method: str
    is_global: bool = True


class Objective:
    r"""A finite-sum objective :math:`F(x) = \frac1n\sum_i \ell_i(x) + R(x)`, batched over trials.

    The data (``n`` samples) live in the backend namespace ``xp`` and are shared by all
    trials; a state ``x`` is an ``xp`` array of shape ``(trials, d)``. Index sets ``idx``
    are integer ``xp`` arrays of shape ``(trials, m)`` (one mini-batch per trial, e.g. from
    :meth:`dpbounds.backend.TrialRandom.subsample`); ``idx=None`` means the full data set.

    The data term :math:`\ell_i` and the data-independent regulariser :math:`R` are kept
    apart: the privacy mechanisms only need to protect the data term.

    Methods every objective provides
    --------------------------------
    ``loss(x)``                         ``(trials,)`` full objective ``F(x)``
    ``grad(x, idx=None)``               ``(trials, d)`` mean data gradient over ``idx`` + ``∇R``
    ``loss_and_grad(x, idx=None)``      both, sharing work (``F`` always on the full data)
    ``sample_losses(x, idx=None)``      ``(trials, m)`` data losses ``ℓ_i(x)`` (no ``R``)
    ``sample_grads(x, idx=None)``       ``(trials, m, d)`` data gradients ``∇ℓ_i(x)``
    ``clipped_mean_grad(x, idx, C)``    ``(trials, d)`` ``mean_i ∇ℓ_i / max(1, ||∇ℓ_i||/C)``
    ``normalized_mean_grad(x, idx, r)`` ``(trials, d)`` ``mean_i ∇ℓ_i / (||∇ℓ_i|| + r)``
    ``regularizer(x)``, ``regularizer_grad(x)``  the data-independent part

    The fused ``clipped_mean_grad``/``normalized_mean_grad`` return the **data term only**
    (the regulariser is public and added noise-free by the algorithm). Their replace-one
    L2 sensitivities are ``2C/m`` and ``< 2/m``.

    Constants (properties)
    ----------------------
    ``smoothness`` (L), ``strong_convexity`` (μ, negative for weakly convex objectives),
    ``gradient_bound`` (G: sup over the declared data domain of ``||∇ℓ_i(x)||_2``,
    state-independent where finite), ``l1_sensitivity`` (Kuru et al.'s :math:`S_1`, eq. (10):
    sup of ``||∇ℓ(x;y) - ∇ℓ(x;y')||_1``, the regulariser cancels),
    ``l2_sensitivity`` (same in L2; a replace-one difference bound, never a bound on
    ``||∇ℓ||``: add/remove needs ``gradient_bound``), ``lipschitz(radius)`` (Lipschitz
    constant of F on the ball ``||x|| <= radius``), ``optimum`` (an :class:`Optimum`, cached).
    """

    #: Short name used in reports.
    name: str = "objective"
    #: True when F is convex.
    convex: bool = True
    #: True when an :math:`\ell_i` depends on other records than its own (e.g. offsets
    #: re-centred over whatever data set the objective is built from): adding, removing or
    #: replacing one record then moves every term, and the clipping sensitivities C / 2C do
    #: not hold. The DP algorithms that count one record's own clipped term (DP-SGD,
    #: DP-NSGD, DP-GD, DP-AGD) refuse such objectives. No bundled objective sets it: the
    #: centred ones (:class:`~dpbounds.objectives.QuadraticObjective`,
    #: :class:`~dpbounds.objectives.HuberWell`,
    #: :class:`~dpbounds.objectives.CoshCosineObjective`) fix their centre at construction as
    #: a public parameter (``centre``), so a record's loss depends on that record only.
    centred_records: bool = False
    #: True when ``loss(x)`` of a ``(trials, d)`` state is computed row by row, so several
    #: states stacked into one call give each row its own value (bit for bit on the host):
    #: the trace recorder then evaluates a mini-batch run's ``F(x_t)`` for several steps in
    #: one full-data pass (:meth:`~dpbounds.algorithms._common.TraceRecorder.record_later`).
    rowwise_states: bool = False

    def __init__(self, n: int, d: int, xp: Any) -> None:
        self.n = check_int("n", n, minimum=1)
        self.d = check_int("d", d, minimum=1)
        self.xp = get_namespace(xp)

    # -- validation helpers -------------------------------------------------------------
    def check_state(self, x: Any, name: str = "x") -> Any:
        """Raise ValueError unless ``x`` is a ``(trials, d)`` array of this backend."""
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) != 2 or shape[1] != self.d:
            raise ValueError(f"{name} must have shape (trials, {self.d}), got shape {shape}")
        return x

    def check_idx(self, idx: Any, trials: int) -> Any:
        """Raise ValueError unless ``idx`` is ``None`` or a ``(trials, m)`` index array."""
        if idx is None:
            return None
        shape = getattr(idx, "shape", None)
        if shape is None or len(shape) != 2 or shape[0] != trials:
            raise ValueError(f"idx must have shape ({trials}, m), got shape {shape}")
        if shape[1] < 1 or shape[1] > self.n:
            raise ValueError(f"idx must hold between 1 and n={self.n} indices per trial")
        return idx

    def initial_state(self, trials: int, x0: Any = None) -> Any:
        """A ``(trials, d)`` float64 state: ``x0`` broadcast over trials (zeros by default).

        ``x0`` is a scalar, a ``(d,)`` or a ``(trials, d)`` array of finite numbers; anything
        else (NaN, inf, a wrong shape) raises ``ValueError`` naming ``x0``.
        """
        xp = self.xp
        trials = check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)
        if trials * self.d > MAX_STATE_ELEMENTS:
            raise ValueError(f"trials x d = {trials} x {self.d} exceeds {MAX_STATE_ELEMENTS} "
                             "state entries (8 GiB): use fewer trials per batch")
        if x0 is None:
            return xp.zeros((trials, self.d), dtype=xp.float64)
        arr = finite_array("x0", x0)
        if arr.ndim == 0:
            arr = np.full(self.d, float(arr))
        if arr.ndim == 1:
            if arr.shape[0] != self.d:
                raise ValueError(f"x0 must have shape ({self.d},), got {arr.shape}")
            arr = np.broadcast_to(arr, (trials, self.d))
        if arr.shape != (trials, self.d):
            raise ValueError(f"x0 must have shape ({self.d},) or ({trials}, {self.d})")
        return xp.asarray(np.ascontiguousarray(arr), dtype=xp.float64)

    # -- to be provided by subclasses --------------------------------------------------
    def sample_losses(self, x: Any, idx: Any = None) -> Any:
        raise NotImplementedError

    def sample_grads(self, x: Any, idx: Any = None) -> Any:
        raise NotImplementedError

    def regularizer(self, x: Any) -> Any:
        return self.xp.zeros((x.shape[0],), dtype=x.dtype)

    def regularizer_grad(self, x: Any) -> Any:
        return self.xp.zeros_like(x)

    def _data_grad(self, x: Any, idx: Any) -> Any:
        """Mean data gradient over idx (generic, materialises per-sample gradients)."""
        return self.xp.mean(self.sample_grads(x, idx), axis=1)

    def _data_weights(self, x: Any, idx: Any, kind: str, param: float) -> Any:
        """Generic clip / normalise through materialised per-sample gradients."""
        xp = self.xp
        g = self.sample_grads(x, idx)
        norms = xp.linalg.vector_norm(g, axis=-1)
        if kind == "clip":
            factor = param / xp.maximum(norms, xp.asarray(param, dtype=norms.dtype))
        else:
            factor = 1.0 / (norms + param)
        return xp.mean(g * factor[..., None], axis=1)

    # -- public API --------------------------------------------------------------------
    def loss(self, x: Any) -> Any:
        """Full objective ``F(x)``, shape ``(trials,)``."""
        self.check_state(x)
        return self.xp.mean(self.sample_losses(x), axis=1) + self.regularizer(x)

    def grad(self, x: Any, idx: Any = None) -> Any:
        """Mini-batch gradient ``mean_{i in idx} ∇ℓ_i(x) + ∇R(x)``, shape ``(trials, d)``."""
        self.check_state(x)
        self.check_idx(idx, x.shape[0])
        return self._data_grad(x, idx) + self.regularizer_grad(x)

    def loss_and_grad(self, x: Any, idx: Any = None, *, grad_at: Any = None
                      ) -> tuple[Any, Any]:
        """``(F(x), grad(x, idx))``, or with ``grad_at`` ``(F(x), grad(grad_at, idx))`` (a
        look-ahead gradient); subclasses share the data pass when ``idx is None``."""
        return self.loss(x), self.grad(x if grad_at is None else grad_at, idx)

    def clipped_mean_grad(self, x: Any, idx: Any, clip_norm: float,
                          include_regularizer: bool = False) -> Any:
        """Mean of per-sample gradients clipped to L2 norm ``clip_norm`` (Abadi et al.).

        By default the data gradients ``∇ℓ_i`` are clipped and the regulariser is left out
        (add it noise-free). ``include_regularizer=True`` clips ``∇ℓ_i + ∇R`` instead (the
        regulariser inside every per-example loss, as in Lee & Kifer's Algorithm 2); the
        result then already contains the (clipped) regulariser.
        """
        clip_norm = check_positive("clip_norm", clip_norm)
        self.check_state(x)
        self.check_idx(idx, x.shape[0])
        if include_regularizer:
            return self._clipped_with_regularizer(x, idx, clip_norm)
        return self._data_weights(x, idx, "clip", clip_norm)

    def _clipped_with_regularizer(self, x: Any, idx: Any, clip_norm: float) -> Any:
        xp = self.xp
        g = self.sample_grads(x, idx) + self.regularizer_grad(x)[:, None, :]
        norms = xp.linalg.vector_norm(g, axis=-1)
        factor = clip_norm / xp.maximum(norms, xp.asarray(clip_norm, dtype=norms.dtype))
        return xp.mean(g * factor[..., None], axis=1)

    def clipped_loss(self, x: Any, clip_value: float, include_regularizer: bool = False) -> Any:
        """``mean_i clip(ℓ_i(x) [+ R(x)], 0, clip_value)`` over all n samples, shape
        ``(trials,)``.

        Lee & Kifer's NoisyMax scores (per-example losses clipped at ``C_obj``; they assume
        non-negative losses). Clipped to ``[0, C_obj]``, the sum moves by at most
        ``clip_value`` and in one direction when a record is added or removed, whatever the
        loss (a loss that can be negative, e.g. a linear tilt, would otherwise move scores
        both ways and by an unbounded amount) **[DERIVED]**; a no-op for losses >= 0.
        """
        self.check_state(x)
        clip_value = check_positive("clip_value", clip_value)
        losses = self.sample_losses(x)
        if include_regularizer:
            losses = losses + self.regularizer(x)[:, None]
        xp = self.xp
        lo, hi = xp.asarray(0.0, dtype=losses.dtype), xp.asarray(clip_value, dtype=losses.dtype)
        return xp.mean(xp.minimum(xp.maximum(losses, lo), hi), axis=1)

    def normalized_mean_grad(self, x: Any, idx: Any, r: float) -> Any:
        """Mean of per-sample normalised data gradients ``g/(||g|| + r)`` (Yang et al.)."""
        r = check_nonnegative("r", r)
        if r == 0:
            raise ValueError("r must be > 0 (valid range (0, inf)), got 0")
        self.check_state(x)
        self.check_idx(idx, x.shape[0])
        return self._data_weights(x, idx, "normalize", r)

    def grad_norm(self, x: Any) -> Any:
        """``||∇F(x)||_2`` on the full data, shape ``(trials,)``."""
        return self.xp.linalg.vector_norm(self.grad(x), axis=-1)

    # -- constants ---------------------------------------------------------------------
    @property
    def smoothness(self) -> float:
        raise NotImplementedError

    @property
    def strong_convexity(self) -> float:
        raise NotImplementedError

    @property
    def gradient_bound(self) -> float:
        return math.inf

    @property
    def problem_class(self) -> str:
        """The problem class the objective declares (``dpbounds.bounds.problem.CLASSES``):
        ``"strongly_convex"`` (convex with ``strong_convexity > 0``), ``"convex"``, else
        ``"nonconvex"`` (the most general: also where the curvature is not known). A theorem
        applies to objectives of its class or a more specific one
        (:func:`dpbounds.extend.check_applies`)."""
        try:
            mu = float(self.strong_convexity)
        except NotImplementedError:
            return "nonconvex"
        if not self.convex or not mu >= 0:
            return "nonconvex"
        return "strongly_convex" if mu > 0 else "convex"

    @property
    def l1_sensitivity(self) -> float:
        return math.inf

    @property
    def l2_sensitivity(self) -> float:
        return 2.0 * self.gradient_bound

    @property
    def condition_number(self) -> float:
        """``κ = L/μ`` (``inf`` if μ <= 0)."""
        mu = self.strong_convexity
        return self.smoothness / mu if mu > 0 else math.inf

    def lipschitz(self, radius: float = math.inf) -> float:
        """Lipschitz constant of ``F`` on the ball ``||x||_2 <= radius``."""
        return self.gradient_bound + self._reg_lipschitz(radius)

    def _reg_lipschitz(self, radius: float) -> float:
        return 0.0

    @cached_property
    def optimum(self) -> Optimum:
        """The minimiser ``(x*, F*)`` by a deterministic solver (computed once, cached)."""
        return self._solve()

    def _solve(self) -> Optimum:
        raise NotImplementedError

    def suboptimality(self, x: Any) -> Any:
        """``F(x) - F*``, shape ``(trials,)``."""
        return self.loss(x) - self.optimum.value

    def to_backend(self, backend: Any) -> Objective:
        """The same objective with its data in another namespace."""
        raise NotImplementedError


@runtime_checkable
class ObjectiveProtocol(Protocol):
    r"""What the algorithms, ``verify`` and ``audit`` call on an objective (structural type).

    Every :class:`Objective` satisfies it; so does any object with these members (a wrapper
    that counts or taps queries, an objective written outside dpbounds). The name is not
    ``Objective``: that is the concrete base class the bundled objectives inherit from.
    Array arguments and results are ``xp`` arrays (states ``(trials, d)``, index sets
    ``(trials, m)``), hence ``Any``: the array API has no static array type.
    ``isinstance(obj, ObjectiveProtocol)`` checks that the members exist (not their types).

    Example
    -------
    >>> from dpbounds.objectives import HuberWell, ObjectiveProtocol, QuadraticObjective
    >>> isinstance(QuadraticObjective.random(3, 0.1, 1.0, n=10, seed=0), ObjectiveProtocol)
    True
    >>> isinstance(HuberWell.random(10, 3, G=1.0, L=1.0, seed=0), ObjectiveProtocol)
    True
    >>> class NoClipping:  # a gradient oracle without the clipped mean DP-SGD needs
    ...     n, d, xp, name, convex = 10, 3, None, "partial", True
    >>> isinstance(NoClipping(), ObjectiveProtocol)
    False
    """

    n: int
    d: int
    xp: Any
    name: str
    convex: bool

    def initial_state(self, trials: int, x0: Any = None) -> Any: ...
    def loss(self, x: Any) -> Any: ...
    def grad(self, x: Any, idx: Any = None) -> Any: ...
    def loss_and_grad(self, x: Any, idx: Any = None, *, grad_at: Any = None
                      ) -> tuple[Any, Any]: ...
    def sample_losses(self, x: Any, idx: Any = None) -> Any: ...
    def sample_grads(self, x: Any, idx: Any = None) -> Any: ...
    def clipped_mean_grad(self, x: Any, idx: Any, clip_norm: float,
                          include_regularizer: bool = False) -> Any: ...
    def clipped_loss(self, x: Any, clip_value: float,
                     include_regularizer: bool = False) -> Any: ...
    def normalized_mean_grad(self, x: Any, idx: Any, r: float) -> Any: ...
    def regularizer(self, x: Any) -> Any: ...
    def regularizer_grad(self, x: Any) -> Any: ...
    def grad_norm(self, x: Any) -> Any: ...
    def suboptimality(self, x: Any) -> Any: ...
    def lipschitz(self, radius: float = math.inf) -> float: ...
    @property
    def smoothness(self) -> float: ...
    @property
    def strong_convexity(self) -> float: ...
    @property
    def gradient_bound(self) -> float: ...
    @property
    def l1_sensitivity(self) -> float: ...
    @property
    def l2_sensitivity(self) -> float: ...
    @property
    def optimum(self) -> Optimum: ...
