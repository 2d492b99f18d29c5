"""Mutant hunt 17's survivors M01 and M24 (the guards were right, untested): an exact verdict
whose value or claim is not finite fails, two-sided and one-sided. Oracle: the verdict on the
same rows with finite values (a 2x under-noised ledger ratio 0.5 against 1 fails; a NaN
sensitivity ratio is no measurement and must fail too, not hold)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.verify.study import _exact_verdicts


def _rows(kind, values, exact, rtol):
    return [{"checks": {"k": dict(kind=kind, sd=None, rtol=rtol, oracle="o", exact=exact)},
             "c:k": np.asarray(values, float), "params": {"N": 1.0}}]


def test_a_two_sided_verdict_with_an_infinite_claim_fails():
    (finite,) = _exact_verdicts("s", "N", _rows("ledger", [0.5], 1.0, 0.01))
    assert not finite.holds  # the control: 2x under-noised fails against a finite claim
    (v,) = _exact_verdicts("s", "N", _rows("ledger", [0.5], math.inf, 0.01))
    assert not v.holds
    (v,) = _exact_verdicts("s", "N", _rows("ledger", [math.inf], 1.0, 0.01))
    assert not v.holds
    (ok,) = _exact_verdicts("s", "N", _rows("ledger", [1.0], 1.0, 0.01))
    assert ok.holds


@pytest.mark.parametrize("kind", ["sensitivity", "transcript"])
def test_a_one_sided_verdict_on_nan_fails(kind):
    (v,) = _exact_verdicts("s", "N", _rows(kind, [math.nan], 1.0, 1e-9))
    assert not v.holds
    (ok,) = _exact_verdicts("s", "N", _rows(kind, [0.9], 1.0, 1e-9))
    (over,) = _exact_verdicts("s", "N", _rows(kind, [1.1], 1.0, 1e-9))
    assert ok.holds and not over.holds
