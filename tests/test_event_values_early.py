"""The command line's early check of event values (:func:`dpbounds._event_spec.check_event_values`,
stdlib, before the accountants' imports) against the library's own reading
(:func:`dpbounds.privacy.composition.parse_event`, the oracle): it must never refuse an event
the library accepts, and it must refuse the cases fuzz round 18 timed at 0.7-1.0 CPU-s."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds import _event_spec
from dpbounds._event_spec import EVENT_KINDS, check_event_values, split_event
from dpbounds.privacy.composition import parse_event

#: values around every boundary the checks draw (and past them)
VALUES = ["0", "-0", "1", "-1", "0.5", "1.5", "2", "1e-300", "1e-320", "5e-324", "100",
          "100.0000001", "1e15", "1e16", "1000000000000001", "nan", "inf", "-inf", "1e309",
          "x", "", "3", "5", "1e9", "0.999", "1.0"]
SAMPLING = ["poisson", "wor", "without_replacement", "shuffle", ""]


@st.composite
def specs(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(sorted(EVENT_KINDS)))
    keys = draw(st.lists(st.sampled_from(EVENT_KINDS[kind]), unique=True, max_size=4))
    items = [f"{k}={draw(st.sampled_from(SAMPLING if k == 'sampling' else VALUES))}"
             for k in keys]
    return f"{kind}:{','.join(items)}"


def _library_refuses(spec: str, neighbouring: str) -> bool:
    try:
        parse_event(spec, neighbouring)
    except ValueError:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(spec=specs(), neighbouring=st.sampled_from(["add_remove", "replace_one"]))
def test_the_early_check_refuses_only_what_the_library_refuses(spec: str,
                                                              neighbouring: str) -> None:
    try:
        kind, kv = split_event(spec)
    except ValueError:
        assert _library_refuses(spec, neighbouring)  # the syntax: the library's own split
        return
    try:
        check_event_values(spec, kind, kv)
    except ValueError:
        assert _library_refuses(spec, neighbouring), spec


@pytest.mark.parametrize("spec", ["tree:z=1,K=0", "gaussian:z=1,steps=0",
                                  "gaussian:z=1,steps=1.5", "gaussian:z=1,q=2", "gaussian:z=-1",
                                  "pure:eps=-1", "zcdp:rho=1e9", "laplace:b=1,m=5,n=3",
                                  "gaussian:z=1,sens=0", "laplace:b=0", "gaussian:sigma=nan"])
def test_the_fuzz_18_cases_are_refused_early_and_by_the_library(spec: str) -> None:
    with pytest.raises(ValueError, match=f"event {spec!r}"):
        check_event_values(spec, *split_event(spec))
    assert _library_refuses(spec, "add_remove") and _library_refuses(spec, "replace_one")


def test_valid_events_pass_the_early_check() -> None:
    # the negative control of the refusals: accepted events stay accepted
    for spec in ["gaussian:z=1", "gaussian:sigma=2,sens=0", "gaussian:z=1,q=1,steps=1e15",
                 "laplace:b=1,sens=0", "laplace:b=1,m=3,n=3", "tree:z=1,T=7", "zcdp:rho=100",
                 "pure:eps=0"]:
        check_event_values(spec, *split_event(spec))


def test_the_early_limits_are_the_library_s() -> None:
    from dpbounds._validation import MAX_COUNT
    from dpbounds.privacy.limits import MAX_EPSILON

    assert (_event_spec.MAX_COUNT, _event_spec.MAX_EPSILON) == (MAX_COUNT, MAX_EPSILON)
