"""Theorem 27's orders in blocks of rows (``rdp._wor_log_a_integers``): the same floats as
all rows at once, at a bounded peak.

At the extended orders (up to 131,072) all rows at once held ~75 MiB of temporaries, the
peak of a ``verify`` study's planning (bench/bench_plan_memory.md); blocks of at most
``_ROW_BLOCK_ELEMENTS`` numbers hold 13 MiB in all. The oracle for the values is the same
function with every row in one block (rows are independent), and with one row a block."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from dpbounds.privacy import rdp

ORDERS = np.unique(np.concatenate([rdp.DEFAULT_ORDERS, rdp.EXTENDED_ORDERS]))


def _rdp(q: float, z: float) -> np.ndarray:
    return rdp.without_replacement_gaussian_rdp(q, z, ORDERS, max_exact_order=256.0)


def _peak(q: float, z: float) -> tuple[np.ndarray, int]:
    rdp._log_forward_differences_cached(z, 256)  # the cached table is not the blocks' peak
    rdp._wor_moment_log_terms(q, 1.0 / (2.0 * z * z), int(ORDERS.max()))
    tracemalloc.start()
    try:
        out = _rdp(q, z)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("q", "z"), [(0.01, 1.0), (2e-5, 0.8), (0.3, 10.0)])
def test_blocks_give_the_same_floats_at_a_fraction_of_the_peak(monkeypatch, q, z):
    blocked, peak = _peak(q, z)
    monkeypatch.setattr(rdp, "_ROW_BLOCK_ELEMENTS", 1)  # one row a block
    assert np.array_equal(_rdp(q, z), blocked)
    monkeypatch.setattr(rdp, "_ROW_BLOCK_ELEMENTS", 1 << 40)  # every row in one block
    whole, peak_whole = _peak(q, z)
    assert np.array_equal(whole, blocked)
    # control: all rows at once hold several times more (~17 rows of 131,072 numbers)
    assert peak < 20 * 2**20 < peak_whole  # 13 and 111 MiB at q = 0.01, z = 1
