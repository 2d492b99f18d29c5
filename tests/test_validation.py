"""The shared input checks: each rejects with a ValueError naming the parameter and range."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds._validation import (
    MAX_COUNT,
    check_choice,
    check_int,
    check_open_interval,
    check_positive,
    check_probability,
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
