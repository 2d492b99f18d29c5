"""Array backends and per-trial random streams for the simulation layer.

Every algorithm in :mod:`dpbounds.algorithms` is written once against the
`Python array API standard <https://data-apis.org/array-api/>`_ and runs on any
namespace this module hands out:

* ``"numpy"`` (the default): ``array_api_compat.numpy``;
* ``"cupy"``: ``array_api_compat.cupy``, when CuPy is installed *and* a CUDA device is
  present (``pip install dpbounds[gpu]``);
* ``"array_api_strict"``: the strict reference namespace, used by the test suite to prove
  that no NumPy-only call hides in algorithm code;
* ``"auto"``: CuPy when available, else NumPy;
* a namespace or array module itself (``numpy``, ``cupy``, ``array_api_strict``,
  ``array_api_compat.numpy``, ...).

Contract for algorithm code (what the simulation helpers rely on)
------------------------------------------------------------------
* Resolve the namespace once with :func:`get_namespace` and use only array-API
  functions of it (``xp.sum``, ``xp.linalg.vector_norm``, ``xp.take``, ``xp.where`` ...);
  never ``np.*`` on arrays that live in ``xp``.
* States are ``(trials, d)`` arrays of dtype ``float64`` unless a caller asks otherwise;
  every trial is an independent run sharing the data.
* Random numbers come from a :class:`TrialRandom`: one independent stream per trial,
  built with :meth:`numpy.random.SeedSequence.spawn` semantics from a seed or a
  :class:`numpy.random.Generator`. All draws come back as ``xp`` arrays whose leading
  axis is ``trials``. Scales may be Python floats or ``xp`` arrays of shape ``(trials,)``
  (one scale per trial) or anything broadcastable to the draw's shape.
* Use :meth:`TrialRandom.split` to give sampling and noise separate streams, so that
  changing a noise level (e.g. ``epsilon = inf``) leaves the mini-batch sequence
  unchanged — this is what makes "ε → ∞ recovers the non-private method" an exact test.
* Convert results for reporting with :func:`to_numpy`.

Where the random numbers are drawn
----------------------------------
For NumPy and array-api-strict the numbers are drawn with NumPy's PCG64 per trial and
converted with ``xp.asarray``; so the two give bit-identical results for one seed. For
CuPy they are drawn **on the device** with ``cupy.random.RandomState`` (XORWOW), one per
trial, seeded from the same :class:`~numpy.random.SeedSequence` children, so that a
``d = 10**6`` noise vector never crosses the PCIe bus. The CuPy streams are therefore
reproducible (same seed, same numbers) and statistically identical to, but not
bit-identical with, the NumPy streams.

The per-step noise blocks (:meth:`TrialRandom.normal_steps`, what the compiled loops of the
first-order algorithms consume) may instead come from a compiled stream, ~3 against ~11 ns per
number on an AVX2 core: xoshiro256++ per trial and a 256-layer ziggurat (:mod:`dpbounds._normals`
documents the stream). Select it with ``TrialRandom(..., normals="fast")`` or the environment
variable ``DPBOUNDS_NORMALS=fast`` (``"numpy"``, NumPy's stream, is the default: the bits that
earlier results and stored sweeps hold). Either way trial ``k``'s numbers depend only on
``(seed, k)``. It applies to float64 draws on the host (NumPy and array-api-strict get the same
bits); float32 and CuPy draws keep their own streams.

Example
-------
>>> from dpbounds.backend import get_namespace, TrialRandom, to_numpy
>>> xp = get_namespace("numpy")
>>> rng = TrialRandom(seed=0, trials=3, xp=xp)
>>> batches, noise = rng.split(2)
>>> idx = batches.subsample(n=100, m=5)          # (3, 5) distinct indices per trial
>>> eta = noise.laplace((4,), scale=0.5)         # (3, 4), variance 2 * 0.5**2
>>> to_numpy(eta).shape
(3, 4)
"""

from __future__ import annotations

import math
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpbounds import _laplace
from dpbounds._seeds import TrialSeeds
from dpbounds._validation import check_int, check_nonnegative

__all__ = ["TrialRandom", "rowwise_matmul"]

#: Backend names understood by :func:`get_namespace`.
BACKENDS: tuple[str, ...] = ("numpy", "cupy", "array_api_strict", "auto")
#: Largest number of trials (independent streams) in one batch; larger requests are refused
#: before any stream is built (each costs a SeedSequence and a generator).
MAX_TRIALS: int = 10**6


def cupy_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy  # noqa: F401

        return int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:  # ImportError, CUDARuntimeError, driver errors ...
        return False


def _numpy_ns() -> Any:
    import array_api_compat.numpy as xp

    return xp


def _cupy_ns() -> Any:
    if not cupy_available():
        raise ValueError(
            "backend='cupy' needs CuPy installed (pip install dpbounds[gpu]) and a CUDA "
            "device; none was found. Use backend='numpy'."
        )
    import array_api_compat.cupy as xp

    return xp


def get_namespace(backend: str | types.ModuleType | None = None) -> Any:
    """Resolve a backend name or module into an array-API namespace.

    Parameters
    ----------
    backend:
        ``None`` or ``"numpy"`` (default), ``"cupy"``, ``"array_api_strict"``, ``"auto"``
        (CuPy if usable, else NumPy), or a module: ``numpy``/``cupy`` are wrapped by
        ``array_api_compat``; any other module exposing ``__array_api_version__`` is
        returned as is.

    Returns
    -------
    namespace
        An array-API compatible namespace ``xp``.

    Raises
    ------
    ValueError
        For an unknown name, or ``"cupy"`` without CuPy and a GPU.
    """
    if backend is None:
        return _numpy_ns()
    if isinstance(backend, str):
        name = backend.lower().replace("-", "_")
        if name == "numpy":
            return _numpy_ns()
        if name == "cupy":
            return _cupy_ns()
        if name == "array_api_strict":
            import array_api_strict

            return array_api_strict
        if name == "auto":
            return _cupy_ns() if cupy_available() else _numpy_ns()
        raise ValueError(
            f"backend must be one of {BACKENDS} or an array namespace, got {backend!r}"
        )
    if isinstance(backend, types.ModuleType):
        modname = backend.__name__
        if modname == "numpy":
            return _numpy_ns()
        if modname == "cupy":
            return _cupy_ns()
        if hasattr(backend, "__array_api_version__"):
            return backend
    raise ValueError(
        f"backend must be one of {BACKENDS} or an array-API namespace, got {backend!r}"
    )


def backend_name(xp: Any) -> str:
    """Short name of a namespace: ``numpy``, ``cupy``, ``array_api_strict`` or its module name."""
    name = getattr(xp, "__name__", str(xp))
    for key in ("cupy", "array_api_strict", "numpy"):
        if key in name:
            return key
    return name


def is_cupy(xp: Any) -> bool:
    """True for the CuPy namespace."""
    return backend_name(xp) == "cupy"


def is_numpy(xp: Any) -> bool:
    """True for NumPy itself or its array-API wrapper (arrays are ``numpy.ndarray`` then)."""
    return xp is np or getattr(xp, "__name__", "") == "array_api_compat.numpy"


def to_numpy(x: Any) -> np.ndarray:
    """Copy an array of any supported backend to a NumPy array (host memory)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    try:
        return np.asarray(x)
    except (TypeError, ValueError, RuntimeError):
        return np.from_dlpack(x)


def rowwise_matmul(xp: Any, a: Any, b: Any) -> Any:
    """``a @ b`` for a ``(trials, k)`` array ``a``, each row's result independent of the others.

    Row ``t`` of the result depends only on row ``t`` of ``a`` and on ``b``, bit for bit,
    whatever the number of rows: a single ``(trials, k) @ (k, m)`` BLAS call blocks (and, for
    one row, dispatches to a different kernel) by the number of rows, so the last bits of a
    trial's result would change with the number of trials. This is what keeps trial ``k``
    a function of ``(seed, k)`` alone on NumPy and array-api-strict.

    >>> import numpy as np
    >>> a, b = np.arange(6.0).reshape(3, 2), np.ones((2, 4))
    >>> bool(np.array_equal(rowwise_matmul(np, a, b), a @ b))
    True
    """
    if is_numpy(xp):
        return _fixed_shape_matmul(a, b)
    rows = xp.reshape(a, (a.shape[0], 1, a.shape[1]))  # (trials, 1, k): one matmul per row
    return xp.reshape(xp.matmul(rows, b), (a.shape[0], b.shape[-1]))


#: Rows per BLAS call of :func:`rowwise_matmul` on NumPy. Every call has exactly this many rows
#: (the last block zero-padded), so BLAS always takes the same kernel and blocking and row ``t``
#: of the result depends only on row ``t`` of ``a``. Eight rows run a GEMM at about 2.5x the
#: per-row speed of eight stacked one-row products (measured on the 2-core machine,
#: ``(8, 20) @ (20, 2048)`` and ``(8, 2048) @ (2048, 20)``).
ROW_BLOCK = 8


def _fixed_shape_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in BLAS calls of exactly :data:`ROW_BLOCK` contiguous rows (NumPy only)."""
    m = a.shape[0]
    out = np.empty((m, b.shape[-1]), dtype=np.result_type(a, b))
    full = m - m % ROW_BLOCK
    for s in range(0, full, ROW_BLOCK):
        out[s:s + ROW_BLOCK] = np.ascontiguousarray(a[s:s + ROW_BLOCK]) @ b
    if full < m:
        pad = np.zeros((ROW_BLOCK, a.shape[1]), dtype=a.dtype)
        pad[: m - full] = a[full:]
        out[full:] = (pad @ b)[: m - full]
    return out


#: the streams :meth:`TrialRandom.normal_steps` may draw from (``DPBOUNDS_NORMALS``)
NORMAL_STREAMS = ("numpy", "fast")


def _normals_choice(normals: str | None) -> str:
    """``normals``, or ``DPBOUNDS_NORMALS`` when it is ``None`` (default ``"numpy"``)."""
    import os

    choice = os.environ.get("DPBOUNDS_NORMALS", "numpy") if normals is None else normals
    if choice not in NORMAL_STREAMS:
        raise ValueError(f"normals (DPBOUNDS_NORMALS) must be one of {NORMAL_STREAMS}, "
                         f"got {choice!r}")
    if choice == "fast":
        from dpbounds._normals import AVAILABLE

        if not AVAILABLE:
            raise ValueError("normals='fast' (DPBOUNDS_NORMALS=fast) needs numba: "
                             "pip install 'dpbounds[fast]'")
    return choice


def _seed_sequences(seed: Any, trials: int) -> TrialSeeds:
    """One child SeedSequence per trial (a :class:`~dpbounds._seeds.TrialSeeds`: the
    sequences are hashed for all trials at once when the generators are built)."""
    if isinstance(seed, np.random.SeedSequence):
        root = seed
    elif isinstance(seed, np.random.Generator):
        # Draw the entropy from the Generator (this advances it deterministically).
        root = np.random.SeedSequence(seed.integers(0, 2**63, size=4).tolist())
    elif seed is None or isinstance(seed, (int, np.integer)) or (
        isinstance(seed, Sequence) and not isinstance(seed, str)
    ):
        if isinstance(seed, (int, np.integer)) and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        try:
            root = np.random.SeedSequence(seed)
        except (TypeError, ValueError):  # (1, -2) said numpy's "expected non-negative integer"
            raise ValueError(f"seed must be None, a non-negative int, a sequence of them, a "
                             f"SeedSequence or a numpy Generator, got {seed!r}") from None
    else:
        raise ValueError(
            f"seed must be None, a non-negative int, a SeedSequence or a numpy Generator, "
            f"got {seed!r}"
        )
    # Explicit spawn keys (not root.spawn) so the result does not depend on how many
    # children were spawned from ``root`` before: trial k's is (*root.spawn_key, k).
    return TrialSeeds(root.entropy, root.spawn_key, (), trials)


class TrialRandom:
    """Independent, reproducible random streams, one per trial, drawing into ``xp``.

    Parameters
    ----------
    seed:
        ``None``, a non-negative int, a :class:`numpy.random.SeedSequence` or a
        :class:`numpy.random.Generator`. Trial ``k`` gets the SeedSequence child with spawn
        key ``k``, so the stream of trial ``k`` does not depend on the number of trials.
    trials:
        Number of independent streams (leading axis of every draw).
    xp:
        Array namespace (or backend name) of the arrays returned.
    dtype:
        Floating dtype name of real draws, ``"float64"`` (default) or ``"float32"``.
    normals:
        Stream of the block draws :meth:`normal_steps`: ``"numpy"`` (NumPy's PCG64 and
        ziggurat: the same bits as :meth:`normal`) or ``"fast"`` (the compiled xoshiro256++
        stream of :mod:`dpbounds._normals`, float64 on the host only; needs numba); ``None`` reads
        the environment variable ``DPBOUNDS_NORMALS`` (default ``"numpy"``). Streams made by
        :meth:`split` inherit it.

    Notes
    -----
    NumPy and array-api-strict draw with NumPy's PCG64 and convert; CuPy draws on the
    device with ``cupy.random.RandomState`` seeded from the same children (see the module
    docstring). All methods return arrays of shape ``(trials, *shape)``.
    """

    def __init__(
        self,
        seed: Any = None,
        trials: int = 1,
        xp: Any = None,
        dtype: str = "float64",
        *,
        normals: str | None = None,
        _seqs: TrialSeeds | None = None,
    ) -> None:
        self.trials = check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)
        self.normals = _normals_choice(normals)
        self.xp = get_namespace(xp)
        if dtype not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        self.dtype_name = dtype
        self.dtype = getattr(self.xp, dtype)
        self._seqs = _seqs if _seqs is not None else _seed_sequences(seed, self.trials)
        self._cupy = is_cupy(self.xp)
        self._generators: list[Any] | None = None
        self._block = self._left = 0  # > 0: one kind of draw comes from blocks (prefetch)
        self._buffer: tuple[Any, Any, int] | None = None  # (kind and shape, block, next step)
        self._fast_states: np.ndarray | None = None  # (trials, 4) xoshiro256++ states

    @property
    def _gens(self) -> list[Any]:
        """One generator per trial, built on the first draw (a parent that is only
        :meth:`split` never builds its own)."""
        if self._generators is None:
            if self._cupy:
                import cupy

                self._generators = [
                    cupy.random.RandomState(
                        int(s.generate_state(1, np.uint64)[0] >> np.uint64(1)))
                    for s in self._seqs
                ]
            else:
                self._generators = self._seqs.generators()
        return self._generators

    def generators(self) -> list[np.random.Generator]:
        """The per-trial NumPy generators (trial ``k``'s is built from ``(seed, k)`` alone),
        for a sampler that draws from each trial's stream itself (exact integer noise:
        :mod:`dpbounds.privacy.discrete`). ``ValueError`` on CuPy (its generators differ)."""
        if self._cupy:
            raise ValueError("per-trial NumPy generators need the numpy backend, not cupy")
        self._check_not_prefetching()
        return list(self._gens)

    # -- construction ------------------------------------------------------------------
    def split(self, k: int) -> list[TrialRandom]:
        """``k`` new independent stream families, e.g. ``sampler, noise = rng.split(2)``.

        Deterministic: ``split`` of a fresh object with the same seed always returns the same
        children, whatever was drawn from the parent.
        """
        k = check_int("k", k, minimum=1)
        out = []
        for j in range(k):
            seqs = self._seqs.child(1_000_003, j)  # trial k's key: (*its key, 1_000_003, j)
            out.append(TrialRandom(None, self.trials, self.xp, self.dtype_name,
                                   normals=self.normals, _seqs=seqs))
        return out

    def prefetch(self, steps: int) -> TrialRandom:
        """This stream, drawing ahead in blocks: for a loop that draws one kind of noise of one
        shape per step (``noise.laplace((d,), b_t)`` for ``steps`` steps).

        Each generator fills a block of up to ``steps`` draws in one call instead of one call
        per step and trial (the per-step Python cost of small problems). NumPy's generators
        fill arrays in order, so every draw has exactly the bits it has without prefetching,
        and trial ``k`` still depends only on ``(seed, k)``. A prefetching stream serves one
        kind and shape of draw, with ``where=None``: anything else raises ``RuntimeError``
        (the order of a mixed sequence would change). Blocks hold at most 2^18 numbers per
        trial. On CuPy this returns the stream unchanged (device draws are already batched).
        """
        steps = check_int("steps", steps, minimum=1)
        if not self._cupy:
            self._block = self._left = steps
        return self

    def _check_not_prefetching(self) -> None:
        if self._block:
            raise RuntimeError("a prefetching stream serves one kind of draw (normal, laplace "
                               "or exponential); draw the others from another stream")

    def _prefetched(self, kind: str, shp: tuple[int, ...], where: Any, draw: Any) -> Any:
        """The next ``(trials, *shp)`` draw from the block (a new block when it is used up)."""
        if where is not None:
            raise RuntimeError("a prefetching stream draws for every trial (where=None)")
        key = (kind, shp)
        if self._buffer is not None and self._buffer[0] != key:
            raise RuntimeError(f"a prefetching stream serves one kind of draw: it drew "
                               f"{self._buffer[0]} and was asked for {key}")
        if self._buffer is None or self._buffer[2] == self._buffer[1].shape[1]:
            cap = max(1, (1 << 18) // max(1, math.prod(shp)))
            block = min(self._left, cap) if self._left > 0 else min(self._block, cap)
            self._left = max(0, self._left - block)
            blk = np.stack([draw(g, (block, *shp)) for g in self._gens])
            self._buffer = (key, blk, 0)
        _, blk, i = self._buffer
        self._buffer = (key, blk, i + 1)
        return self.xp.asarray(blk[:, i], dtype=self.dtype)

    # -- helpers -----------------------------------------------------------------------
    def _ndarray_float64(self) -> bool:
        """Whether draws are float64 NumPy arrays (``numpy`` or ``array_api_compat.numpy``,
        what ``get_namespace("numpy")`` returns), so a block may be filled in place."""
        return (getattr(self.xp, "__name__", "") in ("numpy", "array_api_compat.numpy")
                and self.dtype_name == "float64")

    def _shape(self, shape: int | Sequence[int]) -> tuple[int, ...]:
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        return tuple(check_int("shape", s, minimum=0) for s in shape)

    def _stack(self, draws: list[Any], dtype: Any = None) -> Any:
        xp = self.xp
        if self._cupy:
            import cupy

            arr = cupy.stack(draws)
            return arr if dtype is None else arr.astype(dtype, copy=False)
        arr = np.stack(draws)
        if dtype is None:
            return xp.asarray(arr)
        return xp.asarray(arr, dtype=dtype)

    def _scaled(self, base: Any, scale: Any, ndim_extra: int) -> Any:
        """Multiply a (trials, *shape) draw by a scalar or per-trial scale."""
        xp = self.xp
        if isinstance(scale, (int, float, np.floating, np.integer)):
            check_nonnegative("scale", float(scale))
            return base if float(scale) == 1.0 else base * float(scale)
        s = scale if not isinstance(scale, np.ndarray) else xp.asarray(scale, dtype=self.dtype)
        if s.ndim == 1 and s.shape[0] == self.trials and ndim_extra > 0:
            s = xp.reshape(s, (self.trials,) + (1,) * ndim_extra)
        return base * s

    # -- real draws --------------------------------------------------------------------
    def _mask(self, where: Any) -> np.ndarray | None:
        """``where`` as a host boolean array of shape ``(trials,)`` (``None``: every trial)."""
        if where is None:
            return None
        mask = np.asarray(to_numpy(where))
        if mask.shape != (self.trials,) or mask.dtype != bool:
            raise ValueError(f"where must be a boolean array of shape ({self.trials},), got "
                             f"dtype {mask.dtype} and shape {mask.shape}")
        return mask

    def _real(self, shp: tuple[int, ...], where: Any, draw_numpy: Any, draw_cupy: Any) -> Any:
        """Stack one draw per trial; trials outside ``where`` get zeros and their stream is
        not advanced, so what trial ``k`` draws depends only on its own history."""
        self._check_not_prefetching()
        mask = self._mask(where)
        if self._cupy:
            import cupy

            zero = cupy.zeros(shp, dtype=self.dtype_name)
            return self._stack([draw_cupy(g) if mask is None or mask[k] else zero
                                for k, g in enumerate(self._gens)])
        zero = np.zeros(shp)
        return self._stack([draw_numpy(g) if mask is None or mask[k] else zero
                            for k, g in enumerate(self._gens)], self.dtype)

    def normal(self, shape: int | Sequence[int] = (), scale: Any = 1.0, *,
               where: Any = None) -> Any:
        """Gaussian ``N(0, scale**2)`` draws (``scale`` is the standard deviation).

        ``where`` (optional boolean ``(trials,)`` array): draw only for those trials; the
        others get zeros and their streams do not advance.
        """
        shp = self._shape(shape)
        if self._block or self._buffer is not None:
            base = self._prefetched("normal", shp, where, lambda g, s: g.standard_normal(s))
            return self._scaled(base, scale, len(shp))
        base = self._real(shp, where, lambda g: g.standard_normal(shp),
                          lambda g: g.standard_normal(shp, dtype=self.dtype_name))
        return self._scaled(base, scale, len(shp))

    def laplace(self, shape: int | Sequence[int] = (), scale: Any = 1.0, *,
                where: Any = None) -> Any:
        """Laplace draws with **scale** ``b``: density ``exp(-|x|/b)/(2b)``, variance ``2 b**2``
        (``where`` as in :meth:`normal`)."""
        shp = self._shape(shape)
        if self._block or self._buffer is not None:
            base = self._prefetched("laplace", shp, where,
                                    lambda g, s: _laplace.standard_laplace(g, s))
            return self._scaled(base, scale, len(shp))
        if self._ndarray_float64():
            # each generator fills its slice in place (NumPy's bits: dpbounds._laplace)
            self._check_not_prefetching()
            mask = self._mask(where)
            base = np.empty((self.trials, *shp))
            rows = base.reshape(self.trials, -1)  # views, also for shape () (review of 83)
            for k, g in enumerate(self._gens):
                if mask is None or mask[k]:
                    _laplace.standard_laplace(g, shp, rows[k].reshape(shp))
                else:
                    rows[k] = 0.0
            return self._scaled(self.xp.asarray(base), scale, len(shp))
        base = self._real(shp, where, lambda g: g.laplace(0.0, 1.0, shp),
                          lambda g: g.laplace(0.0, 1.0, shp, dtype=self.dtype_name))
        return self._scaled(base, scale, len(shp))

    def exponential(self, shape: int | Sequence[int] = (), scale: Any = 1.0, *,
                    where: Any = None) -> Any:
        """Exponential draws with mean ``scale`` (``where`` as in :meth:`normal`)."""
        shp = self._shape(shape)
        if self._block or self._buffer is not None:
            base = self._prefetched("exponential", shp, where,
                                    lambda g, s: g.standard_exponential(s))
            return self._scaled(base, scale, len(shp))
        base = self._real(shp, where, lambda g: g.standard_exponential(shp),
                          lambda g: g.standard_exponential(shp, dtype=self.dtype_name))
        return self._scaled(base, scale, len(shp))

    def uniform(self, shape: int | Sequence[int] = (), low: float = 0.0, high: float = 1.0, *,
                where: Any = None) -> Any:
        """Uniform draws on ``[low, high)`` (``where`` as in :meth:`normal`)."""
        shp = self._shape(shape)
        return self._real(shp, where, lambda g: g.uniform(low, high, shp),
                          lambda g: g.uniform(low, high, shp, dtype=self.dtype_name))

    def normal_steps(self, steps: int, shape: int | Sequence[int] = (),
                     scale: Any = 1.0) -> Any:
        """``steps`` consecutive Gaussian draws of shape ``shape`` per trial, in one call per
        generator: shape ``(trials, steps, *shape)``.

        The bits are those of ``steps`` calls of :meth:`normal` (NumPy's generators fill
        arrays in order), so a loop may draw its per-step noise in blocks of any length. With
        ``normals="fast"`` (NumPy float64) they come from the compiled stream of
        :mod:`dpbounds._normals` instead: its own numbers, also independent of the block
        length and of the number of trials.
        ``scale`` is a float, or an array of ``steps`` per-step standard deviations (a noise
        level that changes with the step, as Algorithm 2's two levels); it goes through the
        same scaling as :meth:`normal` (so :func:`dpbounds.audit.scaled_noise` applies).
        """
        steps = check_int("steps", steps, minimum=1)
        shp = self._shape(shape)
        self._check_not_prefetching()
        full = (steps, *shp)
        if self._cupy:
            base = self._stack([g.standard_normal(full, dtype=self.dtype_name)
                                for g in self._gens])
        elif self.normals == "fast" and self.dtype_name == "float64":
            from dpbounds import _normals

            if self._fast_states is None:
                self._fast_states = _normals.initial_states(self._seqs)
            base = np.empty((self.trials, *full))
            _normals.fill_standard_normal(self._fast_states, base)
            if not self._ndarray_float64():  # array-api-strict: the same bits, converted
                base = self.xp.asarray(base)
        elif self._ndarray_float64():
            # each generator fills its slice in place: the same bits as a fresh array, no
            # stacking copy (a third of the draw's cost at d = 16)
            base = np.empty((self.trials, *full))
            for k, g in enumerate(self._gens):
                g.standard_normal(out=base[k])
        else:
            base = self._stack([g.standard_normal(full) for g in self._gens], self.dtype)
        if not isinstance(scale, (int, float, np.floating, np.integer)):
            per_step = np.asarray(to_numpy(scale), dtype=np.float64)
            if per_step.shape != (steps,):
                raise ValueError(f"scale must be a float or an array of shape ({steps},), "
                                 f"got shape {per_step.shape}")
            if not np.all(per_step >= 0):
                raise ValueError("scale must be >= 0 (valid range [0, inf))")
            scale = self.xp.asarray(per_step.reshape((1, steps) + (1,) * len(shp)),
                                    dtype=self.dtype)
        return self._scaled(base, scale, len(full))

    # -- index draws -------------------------------------------------------------------
    def permutation(self, n: int) -> Any:
        """One uniformly random permutation of ``range(n)`` per trial, shape ``(trials, n)``."""
        n = check_int("n", n, minimum=1)
        self._check_not_prefetching()
        if self._cupy:
            return self._stack([g.permutation(n) for g in self._gens], self.xp.int64)
        return self._stack([g.permutation(n) for g in self._gens], self.xp.int64)

    def subsample(self, n: int, m: int) -> Any:
        """``m`` distinct indices out of ``range(n)`` per trial (sampling without replacement).

        Returns an integer array of shape ``(trials, m)``; ``m == n`` gives a permutation.
        """
        n = check_int("n", n, minimum=1)
        m = check_int("m", m, minimum=1, maximum=n)
        self._check_not_prefetching()
        if self._cupy:
            return self._stack([g.choice(n, m, replace=False) for g in self._gens],
                               self.xp.int64)
        return self._stack([g.choice(n, m, replace=False, shuffle=True) for g in self._gens],
                           self.xp.int64)

    def subsample_steps(self, n: int, m: int, steps: int) -> Any:
        """``m`` distinct indices out of ``range(n)`` for each of ``steps`` steps, per trial:
        shape ``(trials, steps, m)``, every step's set uniform over the ``m``-subsets.

        One call per generator for the whole block (the per-step :meth:`subsample` costs a
        call per step and trial). Floyd's algorithm (Bentley & Floyd, CACM 30(9), 1987) on
        a block of bounded integers ``r_i ~ U{0..n-m+i}``: ``r_i``, or ``n-m+i`` when
        ``r_i`` was already taken, for ``O(m^2)`` work per step; above ``m^2 > 16 n`` the
        first ``m`` of a sort of ``n`` uniform keys (``O(n log n)``). The stream differs from
        :meth:`subsample`'s, and depends on the block: callers draw blocks of a length that
        is a function of ``(n, m)`` only, so trial ``k`` stays a function of ``(seed, k)``.
        """
        n = check_int("n", n, minimum=1)
        m = check_int("m", m, minimum=1, maximum=n)
        steps = check_int("steps", steps, minimum=1)
        self._check_not_prefetching()
        if self._cupy:  # device generators: one choice per step (reproducible, not blocked)
            return self._stack([self.xp.stack([g.choice(n, m, replace=False)
                                               for _ in range(steps)])
                                for g in self._gens], self.xp.int64)
        if m * m > 16 * n:
            keys = [g.random((steps, n)) for g in self._gens]
            return self._stack([np.argsort(k, axis=1, kind="stable")[:, :m] for k in keys],
                               self.xp.int64)
        if m == 1:  # one bound: NumPy's scalar path draws the same stream, at half the cost
            r = np.stack([g.integers(0, n, size=(steps, 1)) for g in self._gens])
        else:
            highs = np.arange(n - m + 1, n + 1, dtype=np.int64)  # r_i in [0, n - m + i]
            r = np.stack([g.integers(0, highs, size=(steps, m)) for g in self._gens])
        out = np.empty_like(r)
        for i in range(m):
            c = r[..., i]
            if i:
                taken = np.any(out[..., :i] == c[..., None], axis=-1)
                c = np.where(taken, n - m + i, c)
            out[..., i] = c
        return self._stack(list(out), self.xp.int64)

    def integers(self, n: int, shape: int | Sequence[int] = ()) -> Any:
        """Integers uniform on ``range(n)``, **with** replacement, shape ``(trials, *shape)``."""
        n = check_int("n", n, minimum=1)
        shp = self._shape(shape)
        self._check_not_prefetching()
        if self._cupy:
            return self._stack([g.randint(0, n, shp) for g in self._gens], self.xp.int64)
        return self._stack([g.integers(0, n, shp) for g in self._gens], self.xp.int64)


def trial_random(seed: Any = None, trials: int = 1, backend: Any = None,
                 dtype: str = "float64") -> TrialRandom:
    """Shorthand for ``TrialRandom(seed, trials, get_namespace(backend), dtype)``."""
    return TrialRandom(seed, trials, get_namespace(backend), dtype)
