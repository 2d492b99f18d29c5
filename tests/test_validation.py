"""The shared input checks: each rejects with a ValueError naming the parameter and range."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds._validation import (
    MAX_COUNT,
    MAX_DIMENSION,
    check_choice,
    check_finite,
    check_int,
    check_open_interval,
    check_positive,
    check_probability,
    check_size,
)


@pytest.mark.parametrize(
    ("check", "value", "fragment"),
    [
        (lambda v: check_positive("epsilon", v), -1.0, "epsilon must be > 0"),
        (lambda v: check_positive("epsilon", v), math.nan, "epsilon must be finite"),
        (lambda v: check_probability("delta", v), 2.0, "delta must lie in (0.0, 1.0)"),
        (lambda v: check_open_interval("beta", v, 0, 1), np.array(1.5), "got 1.5"),
        (lambda v: check_int("steps", v), 2.5, "steps must be an integer"),
        (lambda v: check_int("steps", v), 0, "steps must be an integer in [1, inf]"),
        (lambda v: check_int("steps", v), True, "steps must be an integer"),
        (lambda v: check_choice("sampling", v, ("poisson",)), "x", "sampling must be one of"),
        # an integer beyond the float range used to raise OverflowError (issue 8, item 9)
        (lambda v: check_positive("scale", v), 10**400, "scale must be finite"),
        (lambda v: check_int("count", v, maximum=MAX_COUNT), 1e30,
         "count must be an integer in [1, 1000000000000000]"),
        (lambda v: check_int("count", v, maximum=MAX_COUNT), 10**400, "got 1.00e+400"),
        # issue 19, item 6: flags, empty arrays and huge counts
        (lambda v: check_positive("epsilon", v), True, "epsilon must be a real number, got True"),
        (lambda v: check_finite("x", v), np.array([True, False]), "x must be a real number"),
        (lambda v: check_probability("delta", v), [], "delta must be a real number or a "
                                                       "non-empty array, got []"),
        (lambda v: check_int("d", v, maximum=MAX_DIMENSION), 10**300,
         "d must be an integer in [1, 100000000], got 1.00e+300"),
        (lambda v: check_int("n", v, maximum=10), np.int64(2**62), "got 4.61e+18"),
        (lambda v: check_size("d", v, MAX_DIMENSION, "8 d bytes per state"), 1e300,
         "in [1, 100000000], got 1e+300 (8 d bytes per state)"),
        (lambda v: check_positive("w", v), [1.0] * 20 + [-1.0], "(21 entries)"),
    ],
)
def test_bad_input_is_named(check, value, fragment) -> None:
    with pytest.raises(ValueError) as info:
        check(value)
    assert fragment in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_probability_accepts_exactly_the_open_unit_interval(x: float) -> None:
    inside = math.isfinite(x) and 0.0 < x < 1.0
    if inside:
        assert check_probability("delta", x) == x
    else:
        with pytest.raises(ValueError, match="delta"):
            check_probability("delta", x)


# --- issue 19, item 6: no message prints a long integer ---------------------------------------
@settings(max_examples=150, deadline=None)
@given(value=st.one_of(st.integers(-(10**400), 10**400), st.floats(allow_nan=True,
                                                                     allow_infinity=True),
                       st.booleans(), st.lists(st.floats(), max_size=30), st.text(max_size=5)),
       maximum=st.one_of(st.none(), st.integers(1, 10**300)))
def test_errors_are_short_and_name_the_parameter(value, maximum) -> None:
    for check in (lambda v: check_int("count", v, maximum=maximum),
                  lambda v: check_positive("scale", v),
                  lambda v: check_probability("delta", v)):
        try:
            out = check(value)
        except ValueError as exc:
            msg = str(exc)
            assert msg.split()[0] in ("count", "scale", "delta")
            digits = [tok.strip("[](),-") for tok in msg.split()]
            # at most 16 digits (MAX_COUNT = 10^15); beyond, scientific notation, not 301 digits
            assert not any(len(tok) > 16 and tok.isdigit() for tok in digits)
            assert len(msg) < 400
        else:  # accepted: a number of the right kind, in range
            assert not isinstance(value, bool) and np.size(out) > 0
            if maximum is not None and isinstance(out, int):
                assert 1 <= out <= maximum
