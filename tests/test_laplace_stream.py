"""NumPy's Laplace stream, compiled (``dpbounds._laplace``): the bits are NumPy's own.

Oracle: ``Generator.laplace(0.0, 1.0, size)`` itself (bit for bit, the stream left in the same
state), and for the rejection of ``U = 0`` (probability 2^-53 a number, never met by chance) a
stub stream checked against a scalar re-implementation of NumPy's ``random_laplace``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds import _laplace
from dpbounds.backend import TrialRandom

pytestmark = pytest.mark.skipif(_laplace._kernel() is None, reason="needs numba (fast extra)")


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.Philox, np.random.SFC64])
@pytest.mark.parametrize("shape", [(4096,), (5001,), (3, 4099), (100_000,)])
def test_bits_and_stream_equal_numpy(bitgen, shape):
    for seed in (0, 7, 2**40 + 3):
        ours, ref = np.random.Generator(bitgen(seed)), np.random.Generator(bitgen(seed))
        got = _laplace.standard_laplace(ours, shape)
        want = ref.laplace(0.0, 1.0, shape)
        assert got.shape == want.shape
        assert np.array_equal(_bits(got), _bits(want))
        # the stream is consumed exactly as NumPy's: the next draws agree too
        assert ours.random() == ref.random()


def test_below_threshold_and_numpy_kernels_take_numpy_call(monkeypatch):
    small = _laplace.COMPILED_MIN_SIZE - 1
    assert np.array_equal(_bits(_laplace.standard_laplace(np.random.default_rng(1), (small,))),
                          _bits(np.random.default_rng(1).laplace(0.0, 1.0, small)))
    monkeypatch.setenv("DPBOUNDS_KERNELS", "numpy")
    assert _laplace._kernel() is None
    assert np.array_equal(_bits(_laplace.standard_laplace(np.random.default_rng(1), (9000,))),
                          _bits(np.random.default_rng(1).laplace(0.0, 1.0, 9000)))


class _Stub:
    """A stream of given doubles (zeros included), served by ``random(size)`` in order."""

    def __init__(self, values):
        self.values, self.i = list(values), 0

    def random(self, size):
        out = np.array(self.values[self.i:self.i + size])
        assert out.size == size, "the draw asked for more doubles than NumPy consumes"
        self.i += size
        return out


def _numpy_random_laplace(stream):
    """distributions.c's random_laplace, scalar: reject U = 0, then the two branches."""
    while True:
        u = stream.values[stream.i]
        stream.i += 1
        if u >= 0.5:
            return 0.0 - 1.0 * math.log(2.0 - u - u)
        if u > 0.0:
            return 0.0 + 1.0 * math.log(u + u)


def test_zero_uniforms_are_rejected_in_stream_order():
    rng = np.random.default_rng(5)
    size = _laplace.COMPILED_MIN_SIZE + 10
    values = list(rng.random(size + 10))
    for at in (0, 17, 18, size - 1):  # zeros inside the block; two in a row at 17, 18
        values[at] = 0.0
    values[size] = 0.0  # the first top-up double is a zero too: one more is taken
    ref_stream, ours = _Stub(values), _Stub(values)
    want = np.array([_numpy_random_laplace(ref_stream) for _ in range(size)])
    got = _laplace.standard_laplace(ours, (size,))
    assert np.array_equal(_bits(got), _bits(want))
    assert ours.i == ref_stream.i == size + 5  # five zeros rejected, no double skipped
    assert np.isfinite(got).all()


def test_out_is_filled_and_checked():
    out = np.empty((2, 5000))
    res = _laplace.standard_laplace(np.random.default_rng(2), (2, 5000), out)
    assert res is out
    assert np.array_equal(_bits(out), _bits(np.random.default_rng(2).laplace(0.0, 1.0, (2, 5000))))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        _laplace.standard_laplace(np.random.default_rng(2), (5000,), np.empty((2, 5000))[:, 0])


def test_trial_random_laplace_keeps_its_bits():
    """TrialRandom.laplace (in place per trial, a mask, a prefetching block) against each trial's
    own generator drawing with NumPy's call: the bits of earlier results are unchanged."""
    d = 6000
    new, old = TrialRandom(11, 3), TrialRandom(11, 3)
    where = np.array([True, False, True])
    got = np.asarray(new.laplace((d,), 0.7, where=where))
    ref = np.stack([g.laplace(0.0, 1.0, (d,)) if w else np.zeros(d)
                    for g, w in zip(old._gens, where)]) * 0.7
    assert np.array_equal(_bits(got), _bits(ref))
    scales = np.array([1.0, 2.0, 3.0])
    got = np.asarray(new.laplace((d,), scales))
    ref = np.stack([g.laplace(0.0, 1.0, (d,)) for g in old._gens]) * scales[:, None]
    assert np.array_equal(_bits(got), _bits(ref))
    pre, plain = TrialRandom(4, 2).prefetch(3), TrialRandom(4, 2)
    for _ in range(3):
        assert np.array_equal(_bits(pre.laplace((5000,), 2.0)), _bits(plain.laplace((5000,), 2.0)))


def test_trial_random_laplace_of_shape_scalar():
    """``laplace()`` (shape ``()``, the default) raised TypeError after the in-place fill
    (review of stop 83): each trial draws one number, NumPy's."""
    for where in (None, np.array([True, False, True])):
        got = np.asarray(TrialRandom(0, 3).laplace(scale=0.5, where=where))
        ref = [g.laplace(0.0, 1.0) if where is None or where[k] else 0.0
               for k, g in enumerate(TrialRandom(0, 3)._gens)]
        assert got.shape == (3,)
        assert np.array_equal(_bits(got), _bits(np.array(ref) * 0.5))
