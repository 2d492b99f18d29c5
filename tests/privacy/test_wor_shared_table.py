"""One exact forward-difference table per evaluation of the without-replacement Gaussian RDP.

``without_replacement_gaussian_rdp`` needs the table of ``Delta^l g(0)``,
``g(j) = exp((j - 1) j / (2 z^2))``, twice: Theorem 27's terms (levels up to 257) and the
integer-moment terms (levels up to 256). Above ``z = 4`` the table is exact integer arithmetic
in mpmath, most of a calibration's time, and it was computed once for each. Now the shorter
one is the start of the longer one. Oracles: each shared entry against a direct 700-digit sum
``sum_i (-1)^(l-i) C(l, i) g(i)`` written here (an upper bound, within the table's margin);
the result against the two-table evaluation, rebuilt from the private parts (the same
bound to 1e-11); the count of tables (negative control: the two-table path computes two).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from dpbounds.privacy import rdp

LEVELS = (1, 2, 3, 64, 129, 200, 255, 256, 257)


def _log_fd_oracle(z: float, level: int) -> float:
    with mp.workdps(700):  # the alternating sum cancels ~1.6 digits a level at z ~ 13
        zz = mp.mpf(z)
        s = mp.fsum((-1) ** (level - i) * mp.binomial(level, i)
                    * mp.exp((i - 1) * i / (2 * zz * zz)) for i in range(level + 1))
        return float(mp.log(s))


@pytest.mark.parametrize("z", [4.5, 13.75, 40.0])
def test_the_shared_table_bounds_every_level_from_above(z):
    table = np.asarray(rdp._log_forward_differences(z, 256))  # levels 1..257
    short = np.asarray(rdp._log_forward_differences(z, 255))  # what the moment terms used
    for level in LEVELS:
        truth = _log_fd_oracle(z, level)
        for t in (table, short) if level <= 256 else (table,):
            got = float(t[level - 1])
            if level == 1:  # g(1) - g(0) = 0 exactly
                assert truth == got == -np.inf
                continue
            assert truth <= got <= truth + 1e-9 * max(1.0, abs(truth)), (z, level, got, truth)


def _two_tables(q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """The evaluation as it was: each part computes its own table (``table=None``)."""
    ints = np.unique(np.concatenate([np.floor(orders), np.ceil(orders)]))
    own = rdp._wor_moment_log_terms(q, 1.0 / (2.0 * z * z), int(ints.max()))
    log_a = rdp._wor_log_a_integers(q, z, ints, levels=256, own_terms=own)
    return log_a * (1.0 + rdp._ZCDP_ROUNDING_MARGIN + 1e-15 * ints * np.log1p(ints))


@pytest.mark.parametrize(("q", "z"), [(0.01, 4.3), (1e-3, 12.9), (0.2, 30.0)])
def test_one_table_gives_the_two_tables_bound(q, z):
    ints = np.arange(2.0, 513.0)
    shared = rdp._wor_gaussian_moment_log_a(q, z, ints, 256)
    old = _two_tables(q, z, ints)
    assert np.all(np.isfinite(shared))
    np.testing.assert_allclose(shared, old, rtol=1e-11, atol=0)


def test_one_exact_table_per_evaluation(monkeypatch):
    calls: list[int] = []
    original = rdp._log_forward_differences

    def counted(z: float, n: int) -> np.ndarray:
        calls.append(n)
        return original(z, n)

    monkeypatch.setattr(rdp, "_log_forward_differences", counted)
    rdp._log_forward_differences_cached.cache_clear()
    z = 13.0 + 2.0**-20  # above the float table's range: the exact (mpmath) table
    rdp.without_replacement_gaussian_rdp(0.01, z, rdp.DEFAULT_ORDERS)
    assert calls == [256]
    # negative control: the two-table evaluation computes both lengths
    calls.clear()
    rdp._log_forward_differences_cached.cache_clear()
    _two_tables(0.01, z, np.asarray(rdp.DEFAULT_ORDERS))
    assert sorted(calls) == [255, 256]


def test_past_the_exact_tables_bit_budget_levels_are_bounds_or_infinite():
    """z = 6.5 with 1025 levels (``max_exact_order = 1024``) is past the exact table's bit
    budget. The float table it fell back to cancels above z = 4: an independent review read
    level 54 e^-0.013 below the true difference, and the RDP at order 64 1.65e-4 too low
    (0.697935 against 0.698050 at ``max_exact_order = 256``). Now the exact table stops
    within the budget and the levels above are +inf (no bound from the table)."""
    z = 6.5
    table = np.asarray(rdp._log_forward_differences(z, 1024))
    finite = np.isfinite(table)
    for level in (2, 54, 300):
        truth = _log_fd_oracle(z, level)
        assert truth <= table[level - 1] <= truth + 1e-9 * max(1.0, abs(truth)), level
    assert table[0] == -np.inf and finite[1:900].all()  # level 1 is 0 exactly
    assert not finite[-40:].any()  # the budget ends near level 979
    got = rdp.without_replacement_gaussian_rdp(0.9, z, [64.0], max_exact_order=1024)[0]
    ref = rdp.without_replacement_gaussian_rdp(0.9, z, [64.0], max_exact_order=256)[0]
    assert got >= ref * (1 - 1e-12)  # order 64 needs 64 levels: both tables hold them exactly
