"""The float table of forward differences (``rdp._log_forward_differences_float``) against the
general signed-log loop it had before its fast path (kept here, verbatim, as the oracle): bit
for bit the same floats and signs of zero, for the z it serves (z <= 4, where every level takes
the fast path) and beyond (z = 10 to 100, where round-off makes a level decrease and the
general loop takes over part way)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbounds.privacy import rdp


def _general_loop(z: float, n: int) -> np.ndarray:
    j = np.arange(n + 2, dtype=float)
    mag = (j - 1.0) * j / (2.0 * z * z)
    pos = np.ones(n + 2, dtype=bool)
    out = np.empty(n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for level in range(n + 1):
            la, lb = mag[1:], mag[:-1]
            sa, sb = pos[1:], pos[:-1]
            hi, lo = np.maximum(la, lb), np.minimum(la, lb)
            gap = np.where(np.isfinite(hi), lo - hi, -np.inf)
            sub = hi + np.log1p(-np.exp(gap))
            add = hi + np.log1p(np.exp(gap))
            same = sa == sb
            mag = np.where(same, np.where(la == lb, -np.inf, sub), add)
            pos = np.where(same, np.where(la > lb, sa, ~sa), sa)
            out[level] = mag[0]
    return out


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a.view(np.uint64), b.view(np.uint64)))


@settings(max_examples=150, deadline=None)
@given(z=st.floats(1e-3, 4.0), n=st.integers(0, 600))
def test_the_fast_levels_are_the_general_loops_floats(z, n):
    assert _same_bits(rdp._log_forward_differences_float(z, n), _general_loop(z, n))


@settings(max_examples=60, deadline=None)
@given(z=st.floats(4.0, 200.0), n=st.integers(0, 300))
def test_where_round_off_decreases_a_level_the_general_loop_takes_over(z, n):
    assert _same_bits(rdp._log_forward_differences_float(z, n), _general_loop(z, n))


def test_the_hand_over_happens_and_changes_nothing():
    """At z = 22.7 level 13 decreases (round-off; the exact table serves such z): the general
    loop runs from there. Control: a table whose fast levels ran past it would differ."""
    z, n = 22.7, 40
    table = rdp._log_forward_differences_float(z, n)
    assert _same_bits(table, _general_loop(z, n))
    j = np.arange(n + 2, dtype=float)
    mag = (j - 1.0) * j / (2.0 * z * z)
    wrong = np.empty(n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for level in range(n + 1):  # the fast step at every level, no hand-over
            mag = mag[1:] + np.log1p(-np.exp(mag[:-1] - mag[1:]))
            wrong[level] = mag[0]
    assert not _same_bits(wrong, table)


@settings(max_examples=30, deadline=None)
@given(q=st.floats(1e-6, 0.999), z=st.floats(0.3, 60.0),
       orders=st.lists(st.floats(1.01, 700.0), min_size=1, max_size=12))
def test_the_remembered_binomials_change_no_float(q, z, orders):
    """The WOR RDP with the log-binomial rows remembered (from an earlier call with other
    noise) equals the RDP computed with none remembered, bit for bit, and the rows it keeps
    are read-only (a caller writing into them would change later results)."""
    o = np.array(sorted(set(orders)))
    rdp.without_replacement_gaussian_rdp(q, z * 1.37, o)  # remembers these orders' rows
    warm = np.asarray(rdp.without_replacement_gaussian_rdp(q, z, o))
    rdp._log_binomials.cache_clear()
    cold = np.asarray(rdp.without_replacement_gaussian_rdp(q, z, o))
    assert _same_bits(warm, cold)
    inside, log_comb = rdp._log_binomials(np.array([5.0, 9.0]).tobytes(), 9)
    assert not inside.flags.writeable and not log_comb.flags.writeable
    assert float(np.exp(log_comb[1, 2])) == pytest.approx(126.0)  # C(9, 5)
    assert inside[0].tolist() == [True, True, True, False, False, False, False]  # k = 3..9


@settings(max_examples=30, deadline=None,  # the fixture only restores the memory: each
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # example empties it
@given(q=st.floats(1e-6, 0.999), z=st.floats(0.3, 60.0),
       orders=st.lists(st.floats(1.01, 700.0), min_size=1, max_size=12))
def test_a_remembered_rdp_is_the_computed_one_and_its_own_copy(remembered_rdp, q, z, orders):
    """An RDP vector answered from memory (the same sampling rate, noise and orders asked
    before) is the one computed with nothing remembered, bit for bit; the caller gets its
    own copy (writing into it changes no later answer), and other noise is computed anew."""
    o = np.array(sorted(set(orders)))
    rdp._wor_rdp_remembered.cache_clear()
    rdp._log_binomials.cache_clear()
    cold = np.asarray(rdp.without_replacement_gaussian_rdp(q, z, o))
    assert rdp._wor_rdp_remembered.cache_info().misses == 1
    kept = cold.copy()
    cold[:] = -1.0  # the caller's array
    warm = np.asarray(rdp.without_replacement_gaussian_rdp(q, z, o))
    assert rdp._wor_rdp_remembered.cache_info().hits == 1
    assert _same_bits(warm, kept) and warm.flags.writeable
    other = np.asarray(rdp.without_replacement_gaussian_rdp(q, z * 1.5, o))
    assert rdp._wor_rdp_remembered.cache_info().misses == 2
    assert np.all(other <= kept)  # more noise, no more RDP: not the remembered vector
    capped = np.asarray(rdp.without_replacement_gaussian_rdp(q, z, o, max_exact_order=64.0))
    assert rdp._wor_rdp_remembered.cache_info().misses == 3  # its own key
    assert _same_bits(capped, np.asarray(rdp._wor_rdp_computed(q, z, o.tobytes(), 64.0)))
    many = np.linspace(1.5, 64.0, rdp._REMEMBERED_ORDERS + 1)  # computed anew, not kept
    rdp.without_replacement_gaussian_rdp(q, z, many)
    assert rdp._wor_rdp_remembered.cache_info().currsize == 3


def test_tiny_noise_keeps_the_general_loops_floats():
    """z so small that the table's magnitudes overflow to inf (not reachable from a
    calibration, which starts at noise multiplier 1): inf - inf is NaN, and the fast levels
    must hand over to the general loop there, not carry the NaN on."""
    with np.errstate(all="ignore"):  # z * z underflows to 0: the magnitudes are inf
        for z in (1e-300, 1e-200, 1e-160):
            assert _same_bits(rdp._log_forward_differences_float(z, 12), _general_loop(z, 12))


_TABLES = ((4.5, 40), (22.7, 257), (300.0, 9))
_CALIBRATIONS = ((0.05, 1e-2, 10000), (0.5, 1 / 32, 2620))
_DIGITS = """
import json, sys
import numpy as np
from dpbounds.privacy import rdp
from dpbounds.privacy.calibrate import noise_multiplier_for_epsilon as nm
tables, cals = json.loads(sys.argv[1])
t = [rdp._log_forward_differences(z, n) for z, n in tables]
c = [nm(e, d, q, s, sampling="without_replacement") for e, d, q, s in cals]
print(json.dumps([repr(x) for x in np.concatenate([np.ravel(v) for v in t] + [c])]))
"""


def test_the_tables_are_the_same_floats_without_gmpy2():
    """mpmath's pure-Python integers (``MPMATH_NOGMPY=1``, as without the ``fast`` extra)
    and gmpy2's (this process's, where installed) give the same exact tables and the same
    calibrated noise, bit for bit (the repr of every float). Skipped without gmpy2: both
    runs would then use the same integers and show nothing."""
    pytest.importorskip("gmpy2")
    import json
    import os
    import subprocess
    import sys

    args = json.dumps([_TABLES, [(e, 1e-5, q, t) for e, q, t in _CALIBRATIONS]])
    runs = []
    for env in (dict(os.environ, MPMATH_NOGMPY="1"),
                {k: v for k, v in os.environ.items() if k != "MPMATH_NOGMPY"}):
        runs.append(json.loads(subprocess.run(
            [sys.executable, "-c", _DIGITS, args], env=env, capture_output=True, text=True,
            check=True, timeout=300).stdout))
    assert runs[0] == runs[1]
