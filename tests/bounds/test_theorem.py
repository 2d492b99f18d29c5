"""The theorem object: validation, vectorisation, symbolic vs numeric, exponents, composition."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.bounds.convex import noisy_projected_sgd, objective_perturbation, output_perturbation
from dpbounds.bounds.nonconvex import (
    clipped_sgd,
    normalized_sgd,
    sensitivity_reduced,
    tree_momentum,
)
from dpbounds.bounds.theorem import Assumption, Lemma, sym
from dpbounds.provenance import Provenance, Source

d, N, eps, eta = sym("d"), sym("N"), sym("eps"), sym("eta")
SRC = (Source("toy", "eq. (1)", Provenance.DERIVED),)


def toy() -> Lemma:
    return Lemma(name="toy", quantity="q", expr=1 / (eta * N) + eta * sp.sqrt(d) / eps,
                 sources=SRC, assumptions=(Assumption("eps <= 10", eps <= 10),),
                 hyperparameters={"eta": (eps / (N * sp.sqrt(d))) ** sp.Rational(1, 2)})


def test_needs_a_source():
    with pytest.raises(ValueError, match="Source"):
        Lemma(name="x", quantity="q", expr=d, sources=())


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"d": 1.0, "N": 2.0, "eps": 1.0}, "missing parameter.*eta"),
        ({"d": 1.0, "N": 2.0, "eps": 1.0, "eta": 1.0, "zzz": 1.0}, "unknown parameter.*zzz"),
        ({"d": -1.0, "N": 2.0, "eps": 1.0, "eta": 1.0}, "d must be > 0"),
        ({"d": 1.0, "N": np.nan, "eps": 1.0, "eta": 1.0}, "N must be finite"),
        ({"d": 1.0, "N": 2.0, "eps": 11.0, "eta": 1.0}, "assumption violated: eps <= 10"),
    ],
)
def test_bad_input_names_the_parameter(params, match):
    with pytest.raises(ValueError, match=match):
        toy().evaluate(**params)


def _outcome(fn):
    try:
        return ("value", np.float64(fn()).view(np.uint64).item())
    except ValueError as err:
        return ("error", str(err).replace("np.float64(", "").replace(")", ""))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                 st.integers(-10**400, 10**400), st.sampled_from([0, -0.0, 1])),
                       min_size=4, max_size=4))
def test_python_numbers_are_checked_as_numpy_scalars_are(values):
    """A Python ``float`` or ``int`` parameter takes a scalar path in the parameter checks:
    the same value, bit for bit, or the same error as the same number given as a NumPy
    scalar (the array path); an int beyond float's range is the error of an infinite value
    (it was NumPy's OverflowError)."""
    params = dict(zip(("d", "N", "eps", "eta"), values))
    fast = _outcome(lambda: toy().evaluate(**params))
    def beyond(v: float) -> bool:  # an int that float() cannot hold
        try:
            float(v)
        except OverflowError:
            return True
        return False

    big = any(beyond(v) for v in values)
    # beyond float, the array path is given +-inf (what the number is to a float)
    slow = _outcome(lambda: toy().evaluate(**{
        k: np.float64((np.inf if v > 0 else -np.inf) if beyond(v) else v)
        for k, v in params.items()}))
    assert fast[0] == slow[0] and (not big or fast[0] == "error")
    if fast[0] == "value":
        assert fast == slow
    else:  # the same parameter and range named (the number as given: 0 for an int 0)
        assert fast[1].split(", got")[0] == slow[1].split(", got")[0]


def test_an_int_beyond_float_is_an_infinite_value_shown_short():
    with pytest.raises(ValueError, match=r"^N must be finite, got 1\.00e\+400$"):
        toy().evaluate(d=1.0, N=10**400, eps=1.0, eta=1.0)


def test_invalid_nan_mode_marks_points_outside_the_assumptions():
    out = toy().evaluate(d=1.0, N=2.0, eps=np.array([1.0, 11.0]), eta=1.0, invalid="nan")
    assert np.isfinite(out[0]) and np.isnan(out[1])


def test_evaluate_broadcasts_like_numpy():
    b = toy()
    out = b.evaluate(d=np.array([1.0, 4.0])[:, None], N=np.array([10.0, 100.0, 1000.0]),
                     eps=1.0, eta=0.5)
    assert out.shape == (2, 3)
    direct = 1 / (0.5 * np.array([10.0, 100.0, 1000.0])) + 0.5 * np.sqrt([[1.0], [4.0]])
    np.testing.assert_allclose(out, direct, rtol=1e-15)


def test_tuned_exponents_and_optimizer_agree_with_the_closed_form():
    b = toy()
    s = b.tuned().exponents(("d", "N", "eps"))
    assert dict(s.powers) == {"d": sp.Rational(1, 4), "N": sp.Rational(-1, 2),
                              "eps": sp.Rational(-1, 2)}
    best = b.optimize(d=100.0, N=1e4, eps=1.0)
    # the closed form is the exact minimiser of a/eta + b eta
    assert best.value == pytest.approx(best.closed_form_value, rel=1e-8)
    assert best.hyperparameters["eta"] == pytest.approx(
        best.closed_form_hyperparameters["eta"], rel=1e-4)


def test_structural_and_limit_exponents_agree():
    # sympy's limit is the independent oracle; it is too slow (minutes) on the composed
    # Tran-Cutkosky expressions, so it checks the smaller closed forms
    # (the limit oracle holds the other symbols at generic values; r = 2 tau0 keeps the
    # DP-NSGD expression inside its domain r > tau0)
    decaying = normalized_sgd.nsgd_decaying
    nsgd = decaying.replace(expr=decaying.expr.xreplace({sym("tau0"): sym("r") / 2}),
                            assumptions=())
    for thm in (toy().tuned(), clipped_sgd.sgd_corollary, nsgd,
                noisy_projected_sgd.bst14_excess_risk_average):
        vars_ = ("d", "n", "eps") if "n" in thm.parameters else ("d", "N", "eps")
        a = thm.exponents(vars_)
        b = thm.exponents(vars_, method="limit")
        assert dict(a.powers) == dict(b.powers), thm.name


def test_tied_leading_terms_with_different_powers_are_reported():
    b = Lemma(name="tie", quantity="q", expr=d / N + eps, sources=SRC)
    with pytest.raises(ValueError, match="not unique"):
        b.exponents(("d", "N", "eps"))


def test_log_factors_are_separated():
    b = Lemma(name="logs", quantity="q", expr=sp.sqrt(d) * sp.log(N) / N, sources=SRC)
    s = b.exponents(("d", "N"))
    assert dict(s.powers) == {"d": sp.Rational(1, 2), "N": -1}
    assert s.log_factors == (sp.log(N),)
    assert s.monomial == sp.sqrt(d) / N


def test_composition_keeps_the_chain_and_sources():
    thm = tree_momentum.theorem6
    audit = thm.audit()
    for name in ("lemma5", "lemma11", "lemma12", "theorem4"):
        assert f"tran_cutkosky.{name}" in audit
    results = {s.result for s in thm.sources}
    assert {"Lemma 5", "Lemma 11", "Lemma 12"} <= results
    assert thm.provenance is Provenance.DERIVED
    with pytest.raises(ValueError, match="not symbols"):
        tree_momentum.lemma5.compose("x", {"nope": 1})


def test_rendering():
    thm = sensitivity_reduced.theorem9_tuned
    assert r"\varepsilon" in thm.latex()
    assert thm._repr_latex_().startswith("$")
    assert "Theorem 9" in str(thm)


# -------------------------------------------------- symbolic (evalf) vs numeric (lambdify)
_SAMPLERS = {
    "d": lambda g: 10 ** g.uniform(0, 5), "N": lambda g: 10 ** g.uniform(3, 9),
    "n": lambda g: 10 ** g.uniform(2, 8), "eps": lambda g: 10 ** g.uniform(-1, 0.5),
    "delta": lambda g: 10 ** g.uniform(-10, -3), "G": lambda g: 10 ** g.uniform(-1, 1),
    "L": lambda g: 10 ** g.uniform(-1, 1), "R": lambda g: 10 ** g.uniform(-1, 1),
    "eta": lambda g: 10 ** g.uniform(-8, -4), "E": lambda g: 10 ** g.uniform(0.5, 3),
    "alpha": lambda g: 10 ** g.uniform(-6, -1), "gamma": lambda g: 10 ** g.uniform(-4, -1),
    "L0": lambda g: 10 ** g.uniform(-1, 1), "L1": lambda g: 10 ** g.uniform(-3, -1),
    "D_f": lambda g: 10 ** g.uniform(-1, 1), "tau0": lambda g: 10 ** g.uniform(-2, -1),
    "r": lambda g: 10 ** g.uniform(0, 1), "C": lambda g: 10 ** g.uniform(0, 1),
    "c2": lambda g: g.uniform(1, 10), "B": lambda g: 10 ** g.uniform(1, 3),
    "T": lambda g: 10 ** g.uniform(12, 14), "sigma": lambda g: 10 ** g.uniform(0, 2),
    "diam": lambda g: 10 ** g.uniform(-1, 1), "lam": lambda g: 10 ** g.uniform(-2, 1),
    "zeta": lambda g: 10 ** g.uniform(-1, 1),
}

_THEOREMS = [
    tree_momentum.theorem4, tree_momentum.theorem4_exact, tree_momentum.theorem6,
    tree_momentum.theorem6_tuned, sensitivity_reduced.theorem9,
    sensitivity_reduced.theorem9_tuned, sensitivity_reduced.gradient_count,
    normalized_sgd.nsgd_theorem, clipped_sgd.sgd_theorem, normalized_sgd.nsgd_corollary,
    clipped_sgd.sgd_corollary, noisy_projected_sgd.bst14_excess_risk,
    noisy_projected_sgd.bst14_excess_risk_average, output_perturbation.output_perturbation_sigma,
    objective_perturbation.objective_perturbation_sigma,
]


@pytest.mark.parametrize("thm", _THEOREMS, ids=lambda t: t.name)
def test_symbolic_and_numeric_evaluation_agree_to_1e_12(thm):
    g = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        p = {k: float(_SAMPLERS[k](g)) for k in thm.parameters}
        if "eps" in p and "delta" in p:
            p["eps"] = min(p["eps"], 0.9)
        num = thm.evaluate(invalid="nan", **p)
        if not np.isfinite(num):
            continue
        exact = float(thm.evaluate_symbolic(precision=40, **p))
        assert abs(num - exact) <= 1e-12 * abs(exact), (thm.name, p, num, exact)
        checked += 1
        if checked == 4:
            break
    assert checked >= 2, thm.name


# -------------------------------------------------- the package keeps the public API
def test_public_api_and_methods_are_unchanged_by_the_split():
    from dpbounds.bounds.theorem import (  # noqa: F401  (the import is the test)
        NONNEGATIVE_SYMBOLS,
        SYMBOL_LATEX,
        Assumption,
        Bound,
        Lemma,
        Scaling,
        Theorem,
        Tuned,
        sym,
    )

    for method in ("parameters", "assumption_parameters", "provenance", "resolved_hyperparameters",
                   "replace", "tuned", "compose", "evaluate", "evaluate_symbolic",
                   "evaluate_hyperparameters", "optimize", "terms", "exponents", "latex",
                   "_repr_latex_", "audit", "_apply"):
        assert hasattr(Bound, method), method
    assert issubclass(Lemma, Bound) and issubclass(Theorem, Bound)
    assert repr(toy()).startswith("<Lemma 'toy' [DERIVED]")


@pytest.mark.parametrize("name", ["", ".symbols", ".structure", ".monotonicity", ".evaluation",
                                  ".scaling", ".optimization", ".rendering"])
def test_docstring_examples_run(name):
    module = importlib.import_module(f"dpbounds.bounds.theorem{name}")
    failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failed == 0


def test_hyperparameters_are_compiled_once_and_follow_a_replaced_choice(monkeypatch):
    """``evaluate_hyperparameters`` keeps one compiled bound per choice with the bound (it
    compiled every choice anew per call: ~5 ms, most of a Yang et al. plan); the values are
    the closed form's, a second call compiles nothing, and a copy with another choice
    (``replace``, whose cache starts empty) evaluates the new one."""
    x, a = sym("x"), sym("a")
    b = Lemma(name="toy", quantity="f", expr=a * x**2 + 1 / x, sources=SRC,
              hyperparameters={"x": (1 / (2 * a)) ** sp.Rational(1, 3)})
    compiled: list[int] = []
    real = sp.lambdify
    monkeypatch.setattr(sp, "lambdify", lambda *p, **k: compiled.append(1) or real(*p, **k))
    for av in (0.5, 2.0, 7.0):
        got = b.evaluate_hyperparameters(a=av)["x"]
        assert got == pytest.approx((1 / (2 * av)) ** (1 / 3), rel=1e-14)
    assert len(compiled) == 1
    c = b.replace(hyperparameters={"x": 1 / a})
    assert c.evaluate_hyperparameters(a=4.0)["x"] == pytest.approx(0.25, rel=1e-15)
    assert b.evaluate_hyperparameters(a=4.0)["x"] == pytest.approx(0.5, rel=1e-14)  # its own


def test_the_hyperparameter_cache_follows_the_choices_and_pickles():
    """Choices that refer to other choices are resolved; ``ignore_extra=False`` still refuses
    an unknown keyword; a copy made by ``dataclasses.replace`` (which shares the cache dict)
    and an edited choice evaluate their own choices; a bound pickles after evaluation (the
    cache of compiled functions is not pickled) and evaluates the same after."""
    import dataclasses
    import pickle

    a, x, y = sym("a"), sym("x"), sym("y")
    b = Lemma(name="toy2", quantity="f", expr=a * x + y, sources=SRC,
              hyperparameters={"x": 2 * a, "y": sym("x") + 1})  # y refers to x
    assert b.evaluate_hyperparameters(a=3.0) == {"x": 6.0, "y": 7.0}
    with pytest.raises(ValueError, match="toy2:x"):
        b.evaluate_hyperparameters(a=3.0, junk=1.0, ignore_extra=False)
    c = dataclasses.replace(b, hyperparameters={"x": 5 * a, "y": sym("x")})
    assert c._cache is b._cache  # the hazard: one cache dict for both
    assert c.evaluate_hyperparameters(a=3.0) == {"x": 15.0, "y": 15.0}
    assert b.evaluate_hyperparameters(a=3.0) == {"x": 6.0, "y": 7.0}
    b.hyperparameters["x"] = a / 3  # type: ignore[index]  # edited in place
    assert b.evaluate_hyperparameters(a=3.0)["x"] == pytest.approx(1.0, rel=1e-15)
    b.evaluate(a=3.0, x=1.0, y=2.0)
    back = pickle.loads(pickle.dumps(b))
    assert back.evaluate_hyperparameters(a=3.0)["x"] == pytest.approx(1.0, rel=1e-15)
    assert back.evaluate(a=3.0, x=1.0, y=2.0) == b.evaluate(a=3.0, x=1.0, y=2.0) == 5.0


def test_a_copy_with_another_expression_evaluates_its_own():
    """The compiled bound, its parameter names and the assumptions' names are kept in the
    bound's cache, which a ``dataclasses.replace`` copy shares: a copy with another expression
    or other assumptions reads its own (the oracle: the expression evaluated by hand), and
    the names are computed once per expression."""
    import dataclasses

    a, x, t = sym("a"), sym("x"), sym("tau0")
    b = Lemma(name="toy3", quantity="f", expr=a * x, sources=SRC,
              assumptions=(Assumption("x >= tau0", relation=sp.Ge(x, t)),))
    assert b.evaluate(a=2.0, x=3.0, tau0=1.0) == 6.0
    assert b.parameters == ("a", "x") and b.assumption_parameters == ("tau0",)
    c = dataclasses.replace(b, expr=a + x + sym("y"))
    assert c._cache is b._cache  # the hazard: one cache dict for both
    assert c.parameters == ("a", "x", "y")
    assert c.evaluate(a=2.0, x=3.0, y=4.0, tau0=1.0) == 9.0  # was 6.0: b's compiled product
    assert b.evaluate(a=2.0, x=3.0, tau0=1.0) == 6.0
    d = dataclasses.replace(b, assumptions=(Assumption("x >= 2 tau0", relation=sp.Ge(x, 2 * t)),))
    with pytest.raises(ValueError, match="assumption violated"):
        d.evaluate(a=2.0, x=3.0, tau0=2.0)  # 3 < 4: d's own relation
    assert b.evaluate(a=2.0, x=3.0, tau0=2.0) == 6.0  # 3 >= 2: b's
    assert b.parameters is b.parameters  # kept, not recomputed


def test_a_copy_with_the_same_symbols_or_other_assumptions_reads_its_own():
    """The identity checks themselves (a copy whose names are the same would pass a check of
    the names alone), and the registry's cached scaling of a copy."""
    import dataclasses

    from dpbounds.bounds.registry import Entry

    a, x, s = sym("a"), sym("x"), sym("s")
    b = Lemma(name="toy4", quantity="f", expr=a * x, sources=SRC,
              assumptions=(Assumption("x >= tau0", relation=sp.Ge(x, sym("tau0"))),))
    assert b.evaluate(a=2.0, x=3.0, tau0=1.0) == 6.0
    c = dataclasses.replace(b, expr=a + x)  # the same symbols
    assert c.evaluate(a=2.0, x=3.0, tau0=1.0) == 5.0
    assert b.assumption_parameters == ("tau0",)  # b's entry in the shared cache again
    d = dataclasses.replace(b, assumptions=(Assumption("x >= s", relation=sp.Ge(x, s)),))
    assert d._cache is b._cache and d.expr is b.expr
    assert d.assumption_parameters == ("s",)
    with pytest.raises(ValueError, match="assumption violated"):
        d.evaluate(a=2.0, x=3.0, s=5.0)
    N, dd = sym("N"), sym("d")
    e = Lemma(name="toy5", quantity="f", expr=dd / N, sources=SRC)
    f = dataclasses.replace(e, expr=dd**2 / N**2)
    assert Entry._exponents(e, ("N", "d")).powers == {"N": -1, "d": 1}
    assert Entry._exponents(f, ("N", "d")).powers == {"N": -2, "d": 2}
    g = Lemma(name="toy7", quantity="f", expr=dd**2 + N, sources=SRC, regime={"d": 1, "N": 1})
    h = dataclasses.replace(g, regime={"d": 1, "N": 3})  # the same expression, another regime
    assert Entry._exponents(g, ("N", "d")).powers == g.exponents(("N", "d")).powers
    assert Entry._exponents(h, ("N", "d")).powers == h.exponents(("N", "d")).powers
    assert h.exponents(("N", "d")).powers != g.exponents(("N", "d")).powers


def test_a_numeric_copy_with_another_evaluator_names_its_own_hyperparameters():
    """``NumericBound.hyperparameters`` (the names its evaluator chose, kept after a call) of
    a ``dataclasses.replace`` copy, which shares the cache dict, are the copy's own."""
    import dataclasses

    from dpbounds.bounds.numeric import NumericBound

    b = NumericBound(name="toy6", quantity="q", parameters=("x",), method="toy",
                     evaluator=lambda p: (p["x"], {"eta": 1.0}), sources=SRC)
    assert b.hyperparameters == ()  # none chosen yet
    b.evaluate(x=1.0)
    assert b.hyperparameters == ("eta",)
    c = dataclasses.replace(b, evaluator=lambda p: (p["x"], {"T": 2.0}))
    assert c._cache is b._cache and c.hyperparameters == ()
    c.evaluate(x=1.0)
    assert c.hyperparameters == ("T",)
    assert b.hyperparameters == ("eta",)  # each keeps its own
