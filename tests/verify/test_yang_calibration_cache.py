"""Yang et al.'s studies calibrate the claimed noise once per (eps, delta, q, T).

The dry plan of every point calibrated it anew, and a plan over ``d`` (the same sigma at every
``d``) spent 56 of a full ``clipped_sgd --vary d`` study's 128 CPU-s on 376 calibrations. The
memoised value must be the library's, bit for bit, and a change of any parameter must not be
served from another's entry."""

from __future__ import annotations

import importlib

import pytest

from dpbounds.verify import regimes
from dpbounds.verify.problems import problem
from dpbounds.verify.studies import normalized_and_clipped_sgd as yang
from dpbounds.verify.theorems import get_study

calibrate = importlib.import_module("dpbounds.privacy.calibrate")  # the module, not the function


def test_a_plan_over_d_calibrates_once_and_serves_the_librarys_value(monkeypatch):
    yang._MULTIPLIERS.clear()
    regimes._cached_plan.cache_clear()  # plans of earlier tests in this process
    calls: list[tuple] = []
    real = calibrate.noise_multiplier_for_epsilon

    def counting(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(calibrate, "noise_multiplier_for_epsilon", counting)
    st = get_study("nonconvex.clipped_sgd")
    spec = problem(st.problems[0]) if isinstance(st.problems[0], str) else st.problems[0]
    base = dict(st.fixed, **st.quick_fixed)
    regimes.dry_plan(st, spec, dict(base, d=2), 4)
    first = len(calls)
    assert first >= 1 and len(set(calls)) == first, calls
    for d in (4, 8, 16):  # the same calibrations: served from the cache
        regimes.dry_plan(st, spec, dict(base, d=d), 4)
    assert len(calls) == first, calls
    # the claimed noise's calibration: at the run's own T (the other, if any, is the
    # bound's, cached where it is made)
    eps, delta, q, T = next(c[:4] for c in calls if c[3] == base["T"])
    assert yang._claimed_multiplier(eps, delta, q, T) == real(
        eps, delta, q, T, sampling="without_replacement")
    # another T, eps, rate or delta is its own entry (the cache is keyed by all four)
    for args in ((eps, delta, q, T + 1), (eps * 2, delta, q, T), (eps, delta, q / 2, T),
                 (eps, delta / 10, q, T)):
        assert yang._claimed_multiplier(*args) == pytest.approx(
            real(*args, sampling="without_replacement"), rel=0, abs=0)
    assert len(calls) == first + 4
