r"""Per-trial seed sequences, hashed for all trials at once.

Trial ``k`` of a run draws from ``np.random.SeedSequence(entropy, spawn_key=(*prefix, k,
*suffix))``. Building one ``SeedSequence`` object per trial (then a ``PCG64`` from it) cost
~20-70 us per trial here, more than the draws of a short audit run, so a 40,000-run audit spent
half its CPU seeding. :class:`TrialSeeds` holds the family (entropy, prefix, suffix, number of
trials) and computes the generator states of all trials with NumPy's own hash, vectorised over
``k``: the same bits as ``SeedSequence(...).generate_state`` (NumPy's documented algorithm,
Melissa O'Neill's ``seed_seq`` hash; checked against NumPy for random families in
``tests/test_seeds.py``), so every stream is unchanged. Indexing or iterating gives the real
``SeedSequence`` objects, for callers that need them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

__all__: list[str] = []

# numpy/random/bit_generator.pyx (SeedSequence): the hash constants
_INIT_A, _MULT_A = np.uint32(0x43B0D7E5), np.uint32(0x931E8875)
_INIT_B, _MULT_B = np.uint32(0x8B51F9DD), np.uint32(0x58F38DED)
_MIX_L, _MIX_R = np.uint32(0xCA01F9DD), np.uint32(0x4973F715)
_XSHIFT = np.uint32(16)
_POOL = 4  # DEFAULT_POOL_SIZE


def _words(value: Any) -> np.ndarray:
    """NumPy's coercion (``_coerce_to_uint32_array``) of an entropy or spawn-key item to
    uint32 words: an int to its little-endian 32-bit words (``[0]`` for 0), a uint32 array as
    is, a sequence to the concatenation of its items'."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint32:
        return value.copy()
    if isinstance(value, (int, np.integer)):
        n = int(value)
        if n < 0:
            raise ValueError("seed entropy and spawn keys must be non-negative")
        words = [0] if n == 0 else []
        while n > 0:
            words.append(n & 0xFFFFFFFF)
            n >>= 32
        return np.array(words, dtype=np.uint32)
    if isinstance(value, (str, bytes, float, np.inexact)):
        raise TypeError(f"unsupported seed item {value!r}")
    items = [_words(v) for v in value]
    return np.concatenate(items) if items else np.zeros(0, np.uint32)


class _Hash:
    """The ``hash_const`` walk of ``hashmix``: the constants do not depend on the data."""

    def __init__(self) -> None:
        self.const = _INIT_A

    def __call__(self, value: np.ndarray) -> np.ndarray:
        value = value ^ self.const
        self.const = self.const * _MULT_A
        value = value * self.const
        return value ^ (value >> _XSHIFT)


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r: Any = _MIX_L * x - _MIX_R * y  # uint32 arrays (numpy's stubs widen the product)
    return r ^ (r >> _XSHIFT)


class _FixedState(ISeedSequence):
    """A seed sequence whose state is already computed (what ``PCG64`` asks for)."""

    __slots__ = ("_state",)

    def __init__(self, state: np.ndarray) -> None:
        self._state = state

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words != self._state.size or np.dtype(dtype) != self._state.dtype:
            raise ValueError("this seed state was computed for another request")
        return self._state.copy()


class TrialSeeds:
    """The seed sequences ``SeedSequence(entropy, spawn_key=(*prefix, k, *suffix))`` for
    ``k = 0..trials-1`` (a sequence of them, computed on demand)."""

    __slots__ = ("entropy", "prefix", "suffix", "trials")

    def __init__(self, entropy: Any, prefix: tuple = (), suffix: tuple = (),
                 trials: int = 1) -> None:
        self.entropy, self.prefix, self.suffix = entropy, tuple(prefix), tuple(suffix)
        self.trials = int(trials)

    def __len__(self) -> int:
        return self.trials

    def __getitem__(self, k: int) -> np.random.SeedSequence:
        if not -self.trials <= k < self.trials:
            raise IndexError(k)
        k %= self.trials
        return np.random.SeedSequence(self.entropy, spawn_key=(*self.prefix, k, *self.suffix))

    def __iter__(self) -> Iterator[np.random.SeedSequence]:
        return (self[k] for k in range(self.trials))

    def child(self, *suffix: int) -> TrialSeeds:
        """The family with ``suffix`` appended to every trial's spawn key."""
        return TrialSeeds(self.entropy, self.prefix, self.suffix + tuple(suffix), self.trials)

    def states(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        """``(trials, n_words)``: row ``k`` is ``self[k].generate_state(n_words, dtype)``."""
        dtype = np.dtype(dtype)
        if dtype not in (np.uint32, np.uint64):
            raise ValueError(f"dtype must be uint32 or uint64, got {dtype}")
        pool = self._pools()
        n32 = n_words * (2 if dtype == np.uint64 else 1)
        out = np.empty((self.trials, n32), dtype=np.uint32)
        const = _INIT_B
        with np.errstate(over="ignore"):
            for i in range(n32):
                v = pool[:, i % _POOL] ^ const
                const = const * _MULT_B
                v = v * const
                out[:, i] = v ^ (v >> _XSHIFT)
        if dtype == np.uint64:  # little-endian pairs, as NumPy views them
            lo, hi = out[:, 0::2].astype(np.uint64), out[:, 1::2].astype(np.uint64)
            return lo | (hi << np.uint64(32))
        return out

    def generators(self) -> list[np.random.Generator]:
        """One ``Generator(PCG64(self[k]))`` per trial, the same streams, seeded at once."""
        # Any: PCG64 takes any ISeedSequence at run time; its stubs list only SeedSequence
        pcg: Any = np.random.PCG64
        return [np.random.Generator(pcg(_FixedState(s))) for s in self.states(4, np.uint64)]

    def _pools(self) -> np.ndarray:
        """``(trials, 4)`` uint32: every trial's ``SeedSequence.pool`` (``mix_entropy``)."""
        if self.trials >= 2**32:
            raise ValueError("trials must be < 2^32")
        entropy = _words(self.entropy)
        if len(entropy) < _POOL:  # a spawn key is never empty here: NumPy pads the entropy
            entropy = np.concatenate([entropy, np.zeros(_POOL - len(entropy), np.uint32)])
        head = np.concatenate([entropy] + [_words(v) for v in self.prefix]) \
            if self.prefix else entropy
        tail = [_words(v) for v in self.suffix]
        k = np.arange(self.trials, dtype=np.uint32)[:, None]  # k < 2^32: one word, [0] for 0
        cols = [np.broadcast_to(head, (self.trials, head.size)), k] + [
            np.broadcast_to(t, (self.trials, t.size)) for t in tail]
        data = np.concatenate(cols, axis=1)
        h = _Hash()
        with np.errstate(over="ignore"):
            mixer = [h(data[:, i]) if i < data.shape[1] else h(np.zeros(self.trials, np.uint32))
                     for i in range(_POOL)]
            for src in range(_POOL):
                for dst in range(_POOL):
                    if src != dst:
                        mixer[dst] = _mix(mixer[dst], h(mixer[src]))
            for src in range(_POOL, data.shape[1]):
                for dst in range(_POOL):
                    mixer[dst] = _mix(mixer[dst], h(data[:, src]))
        return np.stack(mixer, axis=1)
