"""``calibration_bracket`` / ``noise_multiplier_bracket``: the calibration's own search, stopped
once a caller's decision is settled, returns an interval that holds the calibrated noise.

Oracles: the full calibration (``noise_multiplier_for_epsilon``, the same arguments) must lie
in every bracket returned; the accountant itself (``epsilon_for_noise_multiplier``) must put
the lower end above the target. Negative control: without the ``1 + rtol`` widening of the
upper end (the calibration's round-up), some brackets miss the calibrated noise."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.privacy.mechanisms import GaussianMechanism

cal = importlib.import_module("dpbounds.privacy.calibrate")

ARGS = st.tuples(st.sampled_from((0.25, 0.5, 1.0, 4.0)), st.sampled_from((1e-5, 1e-6)),
                 st.sampled_from((1e-4, 1e-3, 0.01, 0.1)),
                 st.sampled_from((10, 1000, 100_000, 10**6)),
                 st.sampled_from(("poisson", "without_replacement")))


@settings(max_examples=30, deadline=None)
@given(ARGS, st.floats(0.05, 0.95), st.integers(0, 30))
def test_the_bracket_holds_the_calibrated_multiplier(args, at, stop_after):
    """A settled predicate that stops after a random number of brackets, or where a random
    threshold inside the first bracket is decided: the calibrated multiplier lies within."""
    eps, delta, q, steps, sampling = args
    z = cal.noise_multiplier_for_epsilon(eps, delta, q, steps, sampling)
    seen: list[tuple[float, float]] = []

    def settled(lo: float, hi: float) -> bool:
        seen.append((lo, hi))
        threshold = seen[0][0] + at * (seen[0][1] - seen[0][0])
        return len(seen) > stop_after or hi < threshold or lo > threshold

    cal._BRACKET_MEMO.clear()
    lo, hi = cal.noise_multiplier_bracket(eps, delta, q, steps, sampling, settled=settled)
    assert lo <= z <= hi, (lo, z, hi)
    if lo < hi:
        assert (lo, hi) == seen[-1]
        # independent of the search: the accountant puts the lower end above the target
        assert cal.epsilon_for_noise_multiplier(lo, delta, q, steps, sampling) > eps
    else:
        assert lo == z  # the search ran to its end: the calibration's answer itself


@pytest.mark.parametrize("sampling", ("poisson", "without_replacement"))
def test_a_replayed_bracket_is_the_same_and_costs_no_new_evaluations(monkeypatch, sampling):
    """The memo of ε by noise: a second call with the same arguments returns the same
    bracket, and a deeper one than before evaluates only what the first did not."""
    calls = []
    real = cal.epsilon_of
    monkeypatch.setattr(cal, "epsilon_of", lambda *a, **k: calls.append(1) or real(*a, **k))
    cal._BRACKET_MEMO.clear()
    args = (1.0, 1e-5, 0.01, 1000, sampling)
    first = cal.noise_multiplier_bracket(*args, settled=lambda lo, hi: hi / lo < 2.0)
    n_first = len(calls)
    again = cal.noise_multiplier_bracket(*args, settled=lambda lo, hi: hi / lo < 2.0)
    assert again == first and len(calls) == n_first
    deeper = cal.noise_multiplier_bracket(*args, settled=lambda lo, hi: hi / lo < 1.01)
    cal._BRACKET_MEMO.clear()
    n_before = len(calls)
    fresh = cal.noise_multiplier_bracket(*args, settled=lambda lo, hi: hi / lo < 1.01)
    assert deeper == fresh
    assert len(calls) - n_before > 0  # control: a fresh memo evaluates again


def test_negative_control_the_upper_end_needs_the_round_up():
    """The calibration returns its last bracket's upper end times ``1 + rtol`` where the
    accountant verifies it: a bracket not widened by that factor misses the answer when the
    search settles on its last bracket."""
    fam = lambda s: GaussianMechanism(s, 1.0)  # noqa: E731
    missed = 0
    for eps in (0.3, 0.5, 1.0, 2.0, 3.0, 5.0):
        z = cal.calibrate(fam, eps, 1e-5, "rdp", 10, round_up=True)
        # settle only on brackets narrower than 3 rtol: the last ones of the search
        lo, hi = cal.calibration_bracket(fam, eps, 1e-5, "rdp", 10, round_up=True,
                                         settled=lambda lo, hi: hi / lo - 1.0 < 3e-6)
        assert lo <= z <= hi
        missed += z > hi / (1.0 + 1e-6)  # the bracket the search held, unwidened
    assert missed > 0


def test_settled_must_be_callable():
    with pytest.raises(ValueError, match="settled must be a callable"):
        cal.noise_multiplier_bracket(1.0, 1e-5, 0.01, 100, settled=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="settled must be a callable"):
        cal.calibration_bracket(lambda s: GaussianMechanism(s, 1.0), 1.0, 1e-5,
                                settled=3)  # type: ignore[arg-type]


BASE = (1.0, 1e-5, 0.01, 1000)
VARIANTS = [  # each differs from BASE's calibration in one argument of the search
    dict(args=(1.0, 1e-5, 0.01, 4000), kw={}),  # steps
    dict(args=(1.0, 1e-5, 0.04, 1000), kw={}),  # sampling rate
    dict(args=(2.0, 1e-5, 0.01, 1000), kw={}),  # epsilon
    dict(args=(1.0, 1e-7, 0.01, 1000), kw={}),  # delta
    dict(args=BASE, kw=dict(sampling="without_replacement")),
    dict(args=BASE, kw=dict(method="mironov")),
    dict(args=BASE, kw=dict(orders=(2.0, 4.0, 8.0, 16.0, 32.0, 64.0))),
    dict(args=(1.0, 1e-5, 0.01, 100), kw=dict(accountant="pld", rtol=1e-6)),  # RDP's rtol
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: str(v["kw"] or v["args"]))
def test_a_warm_memo_serves_only_its_own_arguments(variant):
    """The memo warmed by BASE's full search (for PLD: RDP's at the same arguments) must not
    answer a calibration that differs in an argument of the search (epsilon and rtol change
    only the target, not the ε kept, so they only limit sharing): its brackets still hold that
    calibration's answer, shallow and deep (a key without one of the others replays BASE's)."""
    cal._BRACKET_MEMO.clear()
    base = variant["args"] if variant["kw"].get("accountant") == "pld" else BASE
    cal.noise_multiplier_bracket(*base, settled=lambda lo, hi: False)  # warm, to the end
    want = cal.noise_multiplier_for_epsilon(*variant["args"], **variant["kw"])
    for width in (2.0, 1.01, 1.0001):
        lo, hi = cal.noise_multiplier_bracket(*variant["args"], **variant["kw"],
                                              settled=lambda lo, hi, w=width: hi / lo < w)
        assert lo <= want <= hi, (variant, width, lo, want, hi)


def test_bad_input_and_the_callers_errors():
    """A sampling rate as a 0-d array is a number (as for noise_multiplier_for_epsilon);
    an error raised by ``settled`` reaches the caller unchanged (not blamed on the inputs);
    a memo that is not a dict is a ValueError naming it."""
    import numpy as np

    lo, hi = cal.noise_multiplier_bracket(1.0, 1e-5, np.array(0.01), 1000,
                                          settled=lambda lo, hi: hi / lo < 2.0)
    assert lo <= cal.noise_multiplier_for_epsilon(1.0, 1e-5, 0.01, 1000) <= hi
    with pytest.raises(ZeroDivisionError):
        cal.noise_multiplier_bracket(1.0, 1e-5, 0.01, 1000, settled=lambda lo, hi: 1 / 0)
    with pytest.raises(ValueError, match="memo must be a dict"):
        cal.calibration_bracket(lambda s: GaussianMechanism(s, 1.0), 1.0, 1e-5,
                                settled=lambda lo, hi: True, memo=[])  # type: ignore[arg-type]


def test_the_callers_errors_and_warnings_are_its_own(monkeypatch):
    """Any exception of ``settled`` (an OverflowError too, which the floating-point guard
    would blame on the inputs) reaches the caller as raised, with its own cause; NumPy
    overflow inside ``settled`` warns as by default (it is not raised by the search's guard);
    an overflow of the search itself is the guard's ValueError, named after the function, as
    for noise_multiplier_for_epsilon."""
    import math

    import numpy as np

    def chained(lo, hi):
        try:
            math.exp(1000.0)
        except OverflowError as err:
            raise LookupError("the caller's") from err

    with pytest.raises(OverflowError):
        cal.noise_multiplier_bracket(1.0, 1e-5, 0.01, 1000,
                                     settled=lambda lo, hi: math.exp(1000.0) > 0)
    with pytest.raises(LookupError) as info:
        cal.noise_multiplier_bracket(1.0, 1e-5, 0.01, 1000, settled=chained)
    assert isinstance(info.value.__cause__, OverflowError)
    with pytest.warns(RuntimeWarning, match="overflow"):
        cal.noise_multiplier_bracket(1.0, 1e-5, 0.01, 1000,
                                     settled=lambda lo, hi: np.float64(1e308) * 10 > 0)
    cal._BRACKET_MEMO.clear()
    monkeypatch.setattr(cal, "epsilon_of", lambda *a, **k: np.float64(1e308) * 10)
    for fn, kw in ((cal.noise_multiplier_for_epsilon, {}),
                   (cal.noise_multiplier_bracket, dict(settled=lambda lo, hi: False))):
        with pytest.raises(ValueError, match=f"{fn.__name__}: inputs .* out of floating-point"):
            fn(1.0, 1e-5, 0.01, 1000, **kw)
    cal._BRACKET_MEMO.clear()
