"""The re-accounting's shared forward differences (``reaccount._shared_forward_diffs``) leave
dp_accounting's RDP of sampling without replacement unchanged, bit for bit.

Oracle: dp_accounting itself, untouched (its ``RdpAccountant`` on the same event, default
orders), against the same accountant run inside the context manager: the whole RDP curve
and epsilon equal exactly, and dp_accounting's own function is back afterwards. Negative
control: differences shared across two noise multipliers (the memo's key dropped) change the
curve, which the comparison sees.
"""

from __future__ import annotations

import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import NeighboringRelation, dp_event  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod  # noqa: E402

from dpbounds.verify.reaccount import _event_epsilon, _shared_forward_diffs  # noqa: E402


def _event(n: int, batch: int, z: float, steps: int) -> dp_event.DpEvent:
    return dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(n, batch, dp_event.GaussianDpEvent(z)), steps)


def _curve(event: dp_event.DpEvent) -> tuple[np.ndarray, float]:
    acc = rdp_mod.RdpAccountant(None, NeighboringRelation.REPLACE_ONE).compose(event)
    return np.array(acc._rdp, dtype=float), float(acc.get_epsilon(1e-5))


@pytest.mark.parametrize("n,batch,z,steps", [(100, 1, 1.8011, 1000), (50, 5, 0.7, 20)])
def test_curve_and_epsilon_are_dp_accountings(n: int, batch: int, z: float,
                                              steps: int) -> None:
    original = rdp_mod._get_forward_diffs
    ref_rdp, ref_eps = _curve(_event(n, batch, z, steps))
    with _shared_forward_diffs(rdp_mod):
        assert rdp_mod._get_forward_diffs is not original
        rdp, eps = _curve(_event(n, batch, z, steps))
    assert rdp_mod._get_forward_diffs is original
    assert np.array_equal(rdp, ref_rdp) and eps == ref_eps
    got = _event_epsilon.__wrapped__("without_replacement", n, batch, batch / n, steps, z,
                                      1e-5, "rdp")
    assert got == ref_eps


def test_negative_control_differences_of_another_sigma_differ() -> None:
    ref_rdp, _ = _curve(_event(100, 1, 0.7, 10))
    original = rdp_mod._get_forward_diffs
    memo: dict = {}

    def keyless(fun, n):  # the memo without the noise multiplier in its key
        if "d" not in memo:
            memo["d"] = original(fun, 256)
        d, s = memo["d"]
        return d[:n + 2].copy(), s[:n + 2].copy()

    rdp_mod._get_forward_diffs = keyless
    try:
        _curve(_event(100, 1, 3.0, 10))  # fills the memo at sigma 3
        wrong, _ = _curve(_event(100, 1, 0.7, 10))  # reads sigma 3's differences
    finally:
        rdp_mod._get_forward_diffs = original
    assert not np.array_equal(wrong, ref_rdp)


#: noise multipliers of the comparison below: 0.01 (differences of huge exponents) to 1e6
_SIGMAS = [*np.geomspace(0.01, 1e6, 160), 0.3, 0.5, 1.0, 1.8011, 2.0]


def _cgf(sigma: float):
    def cgf(x):  # dp_accounting's, named as it names it (the swap matches the name)
        return x * 1.0 * (x + 1) / (2.0 * sigma**2)
    return cgf


def _mismatches(ns=(64,)) -> int:
    from dpbounds.verify.reaccount import _forward_diffs

    bad = 0
    for sigma in _SIGMAS:
        for n in ns:
            d0, s0 = rdp_mod._get_forward_diffs(_cgf(sigma), n)
            d1, s1 = _forward_diffs(_cgf(sigma), n)
            bad += not (np.array_equal(d0, d1) and np.array_equal(s0, s1))
    return bad


def test_array_differences_are_dp_accountings_bit_for_bit() -> None:
    # the re-accounting's differences, each pass on whole arrays (~10x faster), against
    # dp_accounting's element-by-element loop
    assert _mismatches((7, 64)) == 0
    from dpbounds.verify.reaccount import _forward_diffs

    for sigma in (0.05, 0.7, 40.0):  # the length the re-accounting asks
        d0, s0 = rdp_mod._get_forward_diffs(_cgf(sigma), 256)
        d1, s1 = _forward_diffs(_cgf(sigma), 256)
        assert np.array_equal(d0, d1) and np.array_equal(s0, s1)


def test_infinities_and_nans_as_dp_accounting_takes_them() -> None:
    # review: NumPy's minimum / maximum carry a NaN where Python's min / max (dp_accounting's
    # _log_add) return their first argument; every length-4 sequence of these values
    import itertools
    import warnings

    from dpbounds.verify.reaccount import _forward_diffs

    vals = [-np.inf, 0.0, 1.0, np.inf, np.nan]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dp_accounting's own overflow / invalid warnings
        for seq in itertools.product(vals, repeat=4):
            def fun(x, seq=seq):
                return seq[int(x)]
            d0, s0 = rdp_mod._get_forward_diffs(fun, 2)
            d1, s1 = _forward_diffs(fun, 2)
            assert np.array_equal(d0, d1, equal_nan=True) and np.array_equal(s0, s1), seq


def test_negative_control_a_last_bit_change_is_seen(monkeypatch) -> None:
    # log(1 + x) for log1p(x): the same value to ~1e-16 absolute, other last bits (NumPy's
    # own exp, which can differ from math.exp by one bit, is libm's on CPUs without
    # AVX-512, so it would not be a control everywhere)
    import math

    from dpbounds.verify import reaccount

    monkeypatch.setattr(reaccount, "_MATH_LOG1P",
                        np.frompyfunc(lambda x: math.log(1.0 + x), 1, 1))
    assert _mismatches() > 0
