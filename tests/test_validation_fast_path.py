"""The checks' scalar fast path (``_finite_scalar``) against the array path it skips.

Every check must return the same value (same type) and raise the same message with the fast
path on as with it off, for Python floats and ints, NumPy float64, bools, non-finite values and
integers beyond 2^53 (where the fast path must step aside).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpbounds._validation as v

CHECKS = [
    lambda x: v.check_finite("x", x),
    lambda x: v.check_positive("x", x),
    lambda x: v.check_positive("x", x, allow_inf=True),
    lambda x: v.check_nonnegative("x", x),
    lambda x: v.check_open_interval("x", x, 0.0, 1.0),
    lambda x: v.check_closed_interval("x", x, -2.0, 3),
    lambda x: v.check_probability("x", x),
]

values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.integers(min_value=-2**60, max_value=2**60),
    st.integers().map(lambda k: 10**k if k < 400 else -10**400),
    st.booleans(),
    st.sampled_from([0.0, -0.0, 1.0, 1, 0, 2**53, 2**53 + 1, -2**53, 5e-324, 1e308,
                     np.float32(0.5), np.int64(3), math.inf, -math.inf, math.nan]),
)


def _outcome(check, x):
    try:
        out = check(x)
    except ValueError as exc:
        return ("error", str(exc))
    return ("value", type(out), out if not isinstance(out, float) or out == out else "nan")


@given(values)
def test_fast_path_agrees_with_the_array_path(x):
    for check in CHECKS:
        fast = _outcome(check, x)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(v, "_finite_scalar", lambda value: None)
            slow = _outcome(check, x)
        assert fast == slow, (x, fast, slow)


def _disagreements(fast_path, xs) -> list:
    """The (value, check) pairs where ``fast_path`` in place of ``_finite_scalar`` changes a
    check's outcome against the array path (the comparison of the test above)."""
    out = []
    for x in xs:
        for k, check in enumerate(CHECKS):
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(v, "_finite_scalar", fast_path)
                fast = _outcome(check, x)
                mp.setattr(v, "_finite_scalar", lambda value: None)
                slow = _outcome(check, x)
            if fast != slow:
                out.append((x, k))
    return out


CONTROL_VALUES = [0.5, -1.0, math.inf, math.nan, True, 2**60 + 1, np.float64(2.0)]


def test_controls_broken_fast_paths_are_caught():
    # the real fast path agrees everywhere on these values
    assert _disagreements(v._finite_scalar, CONTROL_VALUES) == []
    # mutants of the fast path: one without its finiteness test (inf, nan pass as numbers),
    # one that takes bools as numbers (the array path refuses True); each must be caught
    def no_finite(value):
        return float(value) if type(value) in (float, np.float64) else None

    def bools(value):
        return float(value) if type(value) in (float, bool) else None

    assert any(x is math.inf or x != x for x, _ in _disagreements(no_finite, CONTROL_VALUES))
    assert any(x is True for x, _ in _disagreements(bools, CONTROL_VALUES))
