"""``Bound.optimize`` returns whole counts (E epochs, T steps) and the bound there.

Oracles: closed forms minimised by brute force over the integers (no scipy), and the bound
re-evaluated at the returned choice. Before the fix ``bound tran_cutkosky.alg1`` printed a
tuned ``E = 72.9934`` epochs, which no run can take.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.bounds.registry import get
from dpbounds.bounds.theorem import Lemma, sym
from dpbounds.provenance import Provenance, Source

T, eta, a, c = sym("T"), sym("eta"), sym("a"), sym("c")
SRC = (Source("toy", "eq. (1)", Provenance.DERIVED),)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 400.0))
def test_one_count_is_the_better_whole_neighbour(a_val):
    """f(T) = T + a / T: continuous optimum sqrt(a); the whole optimum by brute force."""
    lemma = Lemma(name="toy_count", quantity="q", expr=T + a / T, sources=SRC,
                  hyperparameters={"T": sp_sqrt(a)})
    got = lemma.optimize(["T"], a=a_val)
    brute = min(range(1, 200), key=lambda n: n + a_val / n)
    assert got.hyperparameters["T"] == float(got.hyperparameters["T"]).__floor__()
    assert got.value == pytest.approx(brute + a_val / brute, rel=1e-9)
    assert got.value >= 2 * math.sqrt(a_val) * (1 - 1e-12)  # never below the continuum


@settings(max_examples=25, deadline=None)
@given(st.floats(0.3, 60.0))
def test_a_count_with_a_continuous_partner(c_val):
    """f(eta, T) = eta T + 1/eta + c/T: at fixed T the best eta gives 2 sqrt(T); the whole
    T minimising 2 sqrt(T) + c/T by brute force; eta re-tuned at that T (1/sqrt(T))."""
    lemma = Lemma(name="toy_pair", quantity="q", expr=eta * T + 1 / eta + c / T, sources=SRC,
                  hyperparameters={"T": (c / 1) ** sp_rational(2, 3), "eta": 1 / T})
    got = lemma.optimize(["eta", "T"], c=c_val)
    brute = min(range(1, 400), key=lambda n: 2 * math.sqrt(n) + c_val / n)
    assert got.hyperparameters["T"] == brute
    assert got.value == pytest.approx(2 * math.sqrt(brute) + c_val / brute, rel=1e-6)
    assert got.hyperparameters["eta"] == pytest.approx(1 / math.sqrt(brute), rel=1e-3)


def test_a_count_is_kept_inside_its_box():
    """The continuous optimum (T = 10) lies above the box (T <= 3.5): T = 3, not 4."""
    lemma = Lemma(name="toy_box", quantity="q", expr=T + 100 / T, sources=SRC,
                  hyperparameters={"T": sym("T0")})
    got = lemma.optimize(["T"], bounds={"T": (1.0, 3.5)}, T0=2.0)
    assert got.hyperparameters["T"] == 3.0
    assert got.value == pytest.approx(3 + 100 / 3)


@pytest.mark.parametrize("name", ["tran_cutkosky.alg1", "tran_cutkosky.alg2"])
def test_the_epoch_bounds_tune_to_whole_epochs(name):
    """The registered epoch bounds: E whole, the value the bound's own evaluation there, and
    no better than either neighbour with the rest re-tuned (each >= within 1e-9)."""
    entry = get(name)
    problem = {"d": 100, "N": 1e5, "eps": 1.0, "delta": 1e-5, "G": 1.0, "L": 1.0, "R": 1.0}
    tuned = entry.optimize(problem)
    e = tuned.hyperparameters["E"]
    assert e == math.floor(e) and e >= 1
    p = entry.params(problem)
    at = entry.theorem.evaluate(**{**p, **tuned.hyperparameters})
    assert tuned.value == pytest.approx(float(at), rel=1e-12)
    others = [k for k in tuned.hyperparameters if k != "E"]
    for n in (e - 1, e + 1):
        fixed = {**p, "E": n}
        lemma_value = entry.theorem.optimize(others, **fixed).value
        assert tuned.value <= lemma_value * (1 + 1e-9)


def sp_sqrt(x):
    import sympy as sp

    return sp.sqrt(x)


def sp_rational(p, q):
    import sympy as sp

    return sp.Rational(p, q)


def test_box_ends_that_are_whole_are_reached_despite_log_rounding():
    """exp(log 5) < 5 and exp(log 3) > 3 in floats: a box [1, 5] with the optimum above it
    gives T = 5, a box [3, 9] with the optimum below it T = 3 (review of stop 79: mutants
    without the 1e-12 tolerances gave 4 and 4)."""
    high = Lemma(name="toy_high", quantity="q", expr=T + 400 / T, sources=SRC,
                 hyperparameters={"T": sym("T0")})
    assert high.optimize(["T"], bounds={"T": (1.0, 5.0)}, T0=2.0).hyperparameters["T"] == 5.0
    low = Lemma(name="toy_low", quantity="q", expr=T + 1 / T, sources=SRC,
                hyperparameters={"T": sym("T0")})
    assert low.optimize(["T"], bounds={"T": (3.0, 9.0)}, T0=5.0).hyperparameters["T"] == 3.0


def test_a_box_without_a_whole_number_is_refused():
    lemma = Lemma(name="toy_none", quantity="q", expr=T + 1 / T, sources=SRC,
                  hyperparameters={"T": sym("T0")})
    with pytest.raises(ValueError, match="holds no whole number"):
        lemma.optimize(["T"], bounds={"T": (1.2, 1.8)}, T0=1.5)


def test_the_partner_re_tuned_at_a_whole_count_stays_in_its_box():
    """f(eta, T) = (eta - 2)^2 + (T - 2.5)^2 with eta boxed in (0.1, 1): the re-tune at
    T = 2 and 3 must keep eta at the box's end 1, not its free optimum 2."""
    lemma = Lemma(name="toy_boxed", quantity="q", expr=(eta - 2) ** 2 + (T - 2.5) ** 2,
                  sources=SRC, hyperparameters={"T": sym("T0"), "eta": sym("E0")})
    got = lemma.optimize(["eta", "T"], bounds={"eta": (0.1, 1.0), "T": (1.0, 10.0)},
                         T0=2.5, E0=0.5)
    assert got.hyperparameters["T"] in (2.0, 3.0)
    assert got.hyperparameters["eta"] == pytest.approx(1.0, rel=1e-6)
    assert got.value == pytest.approx(1.0 + 0.25, rel=1e-6)
