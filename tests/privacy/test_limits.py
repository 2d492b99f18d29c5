"""No privacy that is not privacy (issue 35, item 6): one policy in ``bound``, ``compare``,
``privacy``, ``privacy compose`` and the API (:mod:`dpbounds.privacy.limits`).

Oracles: the thresholds as stated (epsilon <= 100 refused above; delta > 1/n flagged, with
delta = 1/n and below as the controls that must not be flagged), checked on every surface;
the CLI's messages are one line.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

from dpbounds.bounds.compare import compare
from dpbounds.bounds.problem import check_problem
from dpbounds.cli import main
from dpbounds.privacy.composition import compose_events
from dpbounds.privacy.limits import (
    MAX_EPSILON,
    NoPrivacyWarning,
    check_epsilon_limit,
    privacy_flags,
)
from dpbounds.privacy.table import privacy_table


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings():
        warnings.simplefilter("error")  # a Python warning escaping to the user fails here
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_flags_follow_the_stated_thresholds():
    assert privacy_flags(1.0, 1e-5, n=1e5) == []          # exactly 1/n: not flagged
    assert privacy_flags(1.0, 1.0001e-5, n=1e5)           # above: flagged
    assert privacy_flags(1.0, 0.1) == [] and privacy_flags(1.0, 0.11)  # n unknown: 0.1
    assert privacy_flags(MAX_EPSILON, 1e-9) == [] and privacy_flags(100.5, 1e-9)
    assert check_epsilon_limit("eps", 100.0) == 100.0
    with pytest.raises(ValueError, match="eps must be at most 100"):
        check_epsilon_limit("eps", [1.0, 1e300])


def test_api_check_problem_and_compare():
    with pytest.warns(NoPrivacyWarning, match="delta=0.5 > 1/n"):
        check_problem({"eps": 0.5, "delta": 0.5, "N": 1e5})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_problem({"eps": 100.0, "delta": 1e-5, "N": 1e5})  # control: both at the edge
    for eps in (100.01, 1e300):
        with pytest.raises(ValueError, match="at most 100"):
            check_problem({"eps": eps})
        with pytest.raises(ValueError, match="at most 100"):  # every bound alike, up front
            compare(eps=eps)
    with pytest.warns(NoPrivacyWarning):
        privacy_table(delta=1e-3, steps=10, dataset_size=10_000)
    assert compose_events(["gaussian:z=5"], delta=0.2, accountants=("rdp",))["flags"]
    assert compose_events(["gaussian:z=5"], delta=1e-3, accountants=("rdp",),
                          dataset_size=100)["flags"] == []
    assert "epsilon=" in compose_events(["gaussian:z=0.01"], delta=1e-5,
                                        accountants=("rdp",))["flags"][0]


@pytest.mark.parametrize(("argv", "flagged"), [
    (["bound", "nonconvex.clipped_sgd", "--eps", "0.5", "--delta", "0.5"], True),
    (["bound", "nonconvex.clipped_sgd", "--eps", "0.5", "--delta", "1e-6"], False),
    (["compare", "--eps", "1", "--delta", "0.01", "--json"], True),
    (["compare"], False),  # the defaults sit at delta = 1/N exactly
    (["privacy", "--delta", "1e-3", "--steps", "10", "--json"], True),
    (["privacy", "--delta", "1e-5", "--steps", "10", "--json"], False),
    (["privacy", "compose", "--event", "gaussian:z=2", "--delta", "0.2"], True),
    (["privacy", "compose", "--event", "gaussian:z=2", "--delta", "1e-3",
      "--dataset-size", "1e5"], True),
    (["privacy", "compose", "--event", "gaussian:z=2", "--delta", "1e-6",
      "--dataset-size", "1e5"], False),
])
def test_cli_flags_delta_in_one_line_and_still_answers(argv, flagged):
    code, out, err = _run([*argv, "--quiet"])
    assert code == 0 and out.strip(), err
    warned = [ln for ln in err.splitlines() if ln.startswith("dpbounds: warning:")]
    assert len(warned) == (1 if flagged else 0), err
    assert all(ln.startswith("dpbounds: warning:") for ln in err.splitlines()), err


@pytest.mark.parametrize("argv", [
    ["bound", "nonconvex.clipped_sgd", "--eps", "1e300"],
    ["compare", "--eps", "1e300"],
    ["compare", "--eps", "101"],
    ["privacy", "--epsilon", "101"],
])
def test_cli_refuses_epsilon_above_100_in_one_line(argv):
    code, _, err = _run([*argv, "--quiet"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "100" in lines[0], err
