"""Regime queries: from which N (up to which d, from which eps) is a bound <= a target."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.bounds import registry
from dpbounds.bounds.compare import regime
from dpbounds.cli import main

#: the verification problem of issue 18 (huber_well: G = L = 1, R = L 0.6^2/2)
ISSUE = dict(d=4.0, eps=8.0, delta=1e-5, G=1.0, L=1.0, R=0.18)
OP = dict(d=50.0, eps=0.5, delta=1e-5, G=1.0, L=2.0, mu=0.5, N=1e4)


def _op_constant(p):
    """Output perturbation 4 G^2 L d log(5/(4 delta)) / (eps^2 mu^2 N^2): the constant K in
    bound = K d / (eps^2 N^2), written out here (Kamath, Lecture 13)."""
    return 4 * p["G"] ** 2 * p["L"] * math.log(5 / (4 * p["delta"])) / p["mu"] ** 2


@pytest.mark.parametrize("target", [1e-2, 1e-3, 1e-4])
def test_closed_forms_of_output_perturbation(target):
    """bound = K d/(eps^2 N^2) solved by hand: N* = sqrt(K d/(eps^2 t)), d* = t eps^2 N^2/K,
    eps* = sqrt(K d/(N^2 t))."""
    K = _op_constant(OP)
    name = "convex.output_perturbation"
    rest = {k: v for k, v in OP.items() if k != "N"}
    got = regime(name, "N", target, rest, rtol=1e-13).value
    assert got == pytest.approx(math.sqrt(K * OP["d"] / (OP["eps"] ** 2 * target)), rel=1e-9)
    rest = {k: v for k, v in OP.items() if k != "d"}
    got = regime(name, "d", target, rest, rtol=1e-13).value
    assert got == pytest.approx(target * OP["eps"] ** 2 * OP["N"] ** 2 / K, rel=1e-9)
    rest = {k: v for k, v in OP.items() if k != "eps"}
    want = math.sqrt(K * OP["d"] / (OP["N"] ** 2 * target))
    if want < 1:  # eps < 1 is an assumption of the bound: search below it
        got = regime(name, "eps", target, rest, high=0.999, rtol=1e-13).value
        assert got == pytest.approx(want, rel=1e-9)


def test_closed_form_of_clipped_sgd_a_over_sqrt_n_plus_b_over_n():
    """Yang et al.'s clipped SGD bound (L1 = 0, c2 fixed) is A/sqrt(N) + B/N: A and B from two
    evaluations, then the root of B x^2 + A x = t in x = 1/sqrt(N) by the quadratic formula."""
    e = registry.get("yang.sgd")
    p = dict(d=30.0, eps=1.0, delta=1e-5, G=1.0, L=1.0, R=1.0, c2=6.5)
    f1, f4 = (float(e.value(dict(p, N=n))) for n in (1.0, 4.0))
    B = 2 * (f1 - 2 * f4)  # f(1) = A + B, f(4) = A/2 + B/4
    A = f1 - B
    for t in (0.5, 0.05, 0.005):
        x = (-A + math.sqrt(A * A + 4 * B * t)) / (2 * B)
        assert regime("yang.sgd", "N", t, p, rtol=1e-13).value == pytest.approx(x**-2,
                                                                                  rel=1e-9)


def test_brute_force_grid_and_vectorised_targets():
    """A dense grid (20001 points) brackets every answer; an array of targets gives the
    scalar answers."""
    e = registry.get("tran_cutkosky.alg2")
    grid = np.geomspace(1e3, 1e9, 20001)
    vals = np.asarray(e.value(dict(ISSUE, N=grid), invalid="nan"), dtype=float)
    targets = np.array([1.0, 0.6, 0.1, 0.02])
    res = regime("tran_cutkosky.alg2", "N", targets, ISSUE, low=1e3, high=1e9)
    assert res.value.shape == targets.shape
    for t, v in zip(targets, res.value):
        i = int(np.argmax(np.isfinite(vals) & (vals <= t)))
        assert grid[i - 1] < v <= grid[i] * (1 + 1e-9)
        assert v == pytest.approx(regime("tran_cutkosky.alg2", "N", t, ISSUE, low=1e3,
                                         high=1e9).value, rel=1e-12)


def test_the_issue_numbers_and_an_independent_bisection():
    """Issue 18: at d = 4, eps = 8 (R = 0.18) Theorem 6 drops below G from N* = 5.8e4 and
    below the start's gradient 0.6 from 1.7e5 (unchanged); Theorem 9 did from 5.9e3 / 1.24e4
    before its Lemma 7 was redone for the algorithm as implemented, and now does later. Every
    answer equals dpbounds.verify.first_nonvacuous_n (a separate bisection) to 1e-8."""
    from dpbounds.verify import first_nonvacuous_n

    n1 = regime("tran_cutkosky.alg1", "N", 1.0, ISSUE).value
    assert n1 == pytest.approx(5.8e4, rel=0.01)
    assert regime("tran_cutkosky.alg1", "N", 0.6, ISSUE).value == pytest.approx(1.74e5,
                                                                                 rel=0.01)
    n2 = regime("tran_cutkosky.alg2", "N", 1.0, ISSUE).value
    assert 1.24e4 < n2 < 5.8e4  # later than the old 5.9e3, still before Algorithm 1
    for name, t in (("tran_cutkosky.alg1", 1.0), ("tran_cutkosky.alg2", 1.0),
                    ("tran_cutkosky.alg2", 0.6)):
        want = first_nonvacuous_n(name, ISSUE, trivial=t)
        assert regime(name, "N", t, ISSUE).value == pytest.approx(want, rel=1e-8)


def test_default_target_is_what_the_bound_must_beat():
    # R = 0.18: sqrt(2 L R) = 0.6 < G = 1, the start's gradient is the target
    assert regime("tran_cutkosky.alg1", "N", None, ISSUE).target == pytest.approx(0.6)


def test_errors_are_clear_and_the_declared_direction_is_checked():
    with pytest.raises(ValueError, match="no N in"):
        regime("tran_cutkosky.alg2", "N", 1e-12, ISSUE)
    out = regime("tran_cutkosky.alg2", "N", [1.0, 1e-12], ISSUE, missing="nan").value
    assert np.isfinite(out[0]) and np.isnan(out[1])
    # negative control: the bound rises in d, so "from which d" must be refused, not answered
    with pytest.raises(ValueError, match="not non-increasing in d"):
        regime("tran_cutkosky.alg2", "d", 0.5, ISSUE, side="smallest")
    with pytest.raises(ValueError, match="side must be"):
        regime("tran_cutkosky.alg2", "N", 1.0, ISSUE, side="up")
    with pytest.raises(ValueError, match="target must be > 0"):
        regime("tran_cutkosky.alg2", "N", -1.0, ISSUE)
    # the target met at the range's low end: the answer is that end, flagged
    r = regime("tran_cutkosky.alg2", "N", 1.0, ISSUE, low=1e6, high=1e8)
    assert r.value == 1e6 and r.at_edge


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["tran_cutkosky.alg1", "tran_cutkosky.alg2", "yang.sgd"]),
       log_t=st.floats(-3.0, 0.5), d=st.floats(1.0, 1e3), eps=st.floats(0.1, 8.0))
def test_answer_is_the_edge_of_the_regime(name, log_t, d, eps):
    """Two-sided: the bound meets the target at the answer and misses it just before."""
    p = dict(ISSUE, d=d, eps=eps, c2=6.5)
    t = 10.0**log_t
    r = regime(name, "N", t, p, missing="nan", rtol=1e-12)
    if not np.isfinite(r.value) or r.at_edge:
        return
    e = registry.get(name)
    assert float(e.value(dict(p, N=r.value), invalid="nan")) <= t
    before = float(e.value(dict(p, N=r.value * (1 - 1e-9)), invalid="nan"))
    assert not before <= t


def test_cli_regime_query(capsys):
    argv = ["bound", "tran_cutkosky.alg1", "--d", "4", "--eps", "8", "--R", "0.18",
            "--smallest", "N", "--target", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "bound <= 1 from N = 582" in out and "checked: non-increasing in N" in out
    assert main(["bound", "tran_cutkosky.alg2", "--d", "4", "--smallest", "N", "--target",
                 "1e-12"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpbounds: error: no N in") and len(err.strip().splitlines()) == 1
    assert main(["bound", "tran_cutkosky.alg2", "--smallest", "d", "--target", "0.5"]) == 2
    assert "not non-increasing in d" in capsys.readouterr().err


def test_numeric_bound_gives_a_whole_dataset_size():
    """A numeric bound (DP-NAG at its best horizon) is evaluated point by point; the answer is
    the first whole N that meets the target: N meets it, N - 1 does not."""
    e = registry.get("strongly_convex.nag")
    p = dict(mu=0.5, S1=1.0)
    r = regime("strongly_convex.nag", "N", 1e-3, p, points=24)
    assert r.value == int(r.value)
    assert float(e.value(dict(p, N=r.value))) <= 1e-3 < float(e.value(dict(p, N=r.value - 1)))
    with pytest.raises(ValueError, match="numeric bound: give a scalar problem"):
        regime("strongly_convex.nag", "N", 1e-3, dict(p, d=np.array([2.0, 3.0])))
