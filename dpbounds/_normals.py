r"""A compiled Gaussian stream per trial: xoshiro256++ bits and a 256-layer ziggurat.

The per-step loops of the first-order algorithms draw ``trials x d`` Gaussian noise numbers per
step; NumPy's ``Generator.standard_normal`` costs ~11.5 ns per number on an AVX2 Zen 3 core
(its per-call overhead and the PCG64 bit generator behind a function pointer), most of a step
of 4 trials at d = 16. This module fills the same blocks with a compiled generator, ~2-3 ns
per number (``bench/bench_step_loop.py``, ``noise floor``). It is selected by
``TrialRandom(..., normals="fast")`` or ``DPBOUNDS_NORMALS=fast`` (:mod:`dpbounds.backend`);
the default stays NumPy's stream, whose bits earlier results and stored sweeps hold.

The stream (what a seed means)
------------------------------
* **Bits.** Trial ``k`` owns one xoshiro256++ generator (Blackman & Vigna 2019, "Scrambled
  linear pseudorandom number generators", reference code ``xoshiro256plusplus.c``: VERBATIM
  recurrence). Its 256-bit state is ``SeedSequence(entropy, spawn_key=(*key_k, 0x6e6f726d))
  .generate_state(4, uint64)``, where ``key_k`` is the spawn key of trial ``k``'s child in
  :class:`~dpbounds.backend.TrialRandom` (``0x6e6f726d`` is "norm": a child of its own, so the
  state shares no words with the trial's PCG64 state). Trial ``k``'s numbers therefore depend
  only on ``(seed, k)``: not on the number of trials, nor on how the draws are cut into blocks
  (each trial's generator is consumed in order; a block of ``s`` steps takes the next ``s d``
  numbers).
* **Normals.** Marsaglia & Tsang's ziggurat (J. Stat. Softw. 5(8), 2000) with 256 layers,
  ``r = 3.6541528853610088``, ``v = 4.92867323399e-3`` (VERBATIM, their Table 1), in Doornik's
  formulation ("An improved ziggurat method to generate normal random samples", 2005: tables
  ``X``/``R`` and the tail method; RECONSTRUCTED from his published C code). One 64-bit word
  gives the layer (its low 8 bits) and the signed uniform (its high 53 bits), disjoint bits
  (Doornik's fix of the original's correlation); ~99% of numbers take one word. The wedges and
  the tail use further words, uniforms in (0, 1) from their high 53 bits.

``tests/test_normals.py`` checks the distribution (Kolmogorov-Smirnov against the normal CDF,
the first four moments with their sampling CIs, the tail beyond ``r``) and the trial
independence (trial ``k``'s bits for 1 and 8 trials, and for blocks of any length).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - exercised without the fast extra
    numba = None  # type: ignore[assignment]  # the module-or-None idiom for an optional import

__all__ = ["AVAILABLE", "STREAM_KEY", "fill_standard_normal", "initial_states"]

#: Whether the compiled stream can run (numba installed: the ``fast`` extra).
AVAILABLE = numba is not None

#: last spawn-key word of the child SeedSequence that seeds a trial's xoshiro256++ state
STREAM_KEY = 0x6E6F726D

_LAYERS = 256
_R = 3.6541528853610088  # Marsaglia & Tsang (2000), 256 layers: the base strip's edge
_V = 4.92867323399e-3  # the area of each layer


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Doornik's ``X`` (layer edges, ``X[0] = V / f(R)`` the base strip's width with its tail)
    and ``Ratio[i] = X[i+1] / X[i]`` (a uniform inside it lands in the layer's rectangle)."""
    x = np.zeros(_LAYERS + 1)
    f = math.exp(-0.5 * _R * _R)
    x[0] = _V / f
    x[1] = _R
    for i in range(2, _LAYERS):
        x[i] = math.sqrt(-2.0 * math.log(_V / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    x[_LAYERS] = 0.0
    return x, x[1:] / x[:-1]


_X, _RATIO = _tables()


def initial_states(seqs: Any) -> np.ndarray:
    """The ``(trials, 4)`` uint64 xoshiro256++ states of trials with these SeedSequences (a
    list, or a :class:`~dpbounds._seeds.TrialSeeds` family: hashed for all trials at once)."""
    if hasattr(seqs, "child"):
        out = seqs.child(STREAM_KEY).states(4, np.uint64)
    else:
        out = np.empty((len(seqs), 4), dtype=np.uint64)
        for k, s in enumerate(seqs):
            child = np.random.SeedSequence(s.entropy, spawn_key=(*s.spawn_key, STREAM_KEY))
            out[k] = child.generate_state(4, np.uint64)
    out[~out.any(axis=1), 0] = np.uint64(1)  # the one forbidden state (probability 2^-256)
    return out


def _identity(*args: Any, **kwargs: Any) -> Any:
    return lambda f: f


_jit: Any = numba.njit if numba is not None else _identity
#: ``_nrt=False``: no reference counting, as the step loops (dpbounds.algorithms._step_kernels):
#: each helper call that takes the state array would otherwise count references atomically,
#: 35-55 against ~3 ns per number here; nothing here allocates
_OPTS = dict(boundscheck=False, cache=True, nogil=True, _nrt=False)

_U11 = np.uint64(11)
_U17 = np.uint64(17)
_U23 = np.uint64(23)
_U41 = np.uint64(41)
_U45 = np.uint64(45)
_U19 = np.uint64(19)
_MASK8 = np.uint64(0xFF)
_TWO_M53 = 2.0 ** -53


@_jit(**_OPTS, inline="always")
def _next(s):  # pragma: no cover - compiled
    """xoshiro256++: the next 64-bit output of state ``s`` (4 words, updated in place)."""
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    a = s0 + s3
    result = ((a << _U23) | (a >> _U41)) + s0
    t = s1 << _U17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _U45) | (s3 >> _U19)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return result


@_jit(**_OPTS, inline="always")
def _open01(s):  # pragma: no cover - compiled
    """A uniform in (0, 1) from the high 53 bits (never 0: the tail takes its log)."""
    return (np.int64(_next(s) >> _U11) + 0.5) * _TWO_M53


@_jit(**_OPTS, inline="always")
def _normal(s, X, ratio):  # pragma: no cover - compiled
    while True:
        w = _next(s)
        i = np.intp(w & _MASK8)
        # signed uniform in [-1, 1), 53 bits; through int64 (< 2^53, exact): a uint64 -> float
        # conversion is a slow library call here (28 against 1 ns per number)
        u = np.int64(w >> _U11) * (2.0 * _TWO_M53) - 1.0
        if abs(u) < ratio[i]:
            return u * X[i]
        if i == 0:  # the tail beyond R (Marsaglia's method, as Doornik's DRanNormalTail)
            while True:
                x = math.log(_open01(s)) / _R
                y = math.log(_open01(s))
                if -2.0 * y >= x * x:
                    return x - _R if u < 0 else _R - x
        x = u * X[i]  # a wedge: accept under the density
        f0 = math.exp(-0.5 * (X[i] * X[i] - x * x))
        f1 = math.exp(-0.5 * (X[i + 1] * X[i + 1] - x * x))
        if f1 + _open01(s) * (f0 - f1) < 1.0:
            return x


@_jit(**_OPTS)
def _fill(states, out, X, ratio):  # pragma: no cover - compiled
    trials, n = out.shape
    for k in range(trials):
        s = states[k]  # a view: the state advances in place
        for j in range(n):
            out[k, j] = _normal(s, X, ratio)


def fill_standard_normal(states: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out`` (``(trials, ...)`` float64, C-contiguous) with standard normals, row ``k``
    from trial ``k``'s state ``states[k]`` (advanced in place)."""
    if not AVAILABLE:
        raise ValueError("the fast normal stream needs numba: pip install 'dpbounds[fast]'")
    if out.dtype != np.float64 or not out.flags.c_contiguous or out.shape[0] != len(states):
        raise ValueError("out must be a C-contiguous float64 array with one row per state")
    _fill(states, out.reshape(len(states), -1), _X, _RATIO)
