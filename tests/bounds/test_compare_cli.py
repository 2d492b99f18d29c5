"""Comparison API and the ``dpbounds bound`` / ``dpbounds compare`` commands."""

from __future__ import annotations

import json
import math

import pytest
import sympy as sp

from dpbounds.bounds import registry
from dpbounds.bounds.compare import compare, compare_table
from dpbounds.bounds.nonconvex import normalized_sgd
from dpbounds.cli import main


def test_compare_names_the_smallest_bound(problem):
    c = compare(problem, tune=True, crossovers=False)
    assert {r.name for r in c.rows} == set(registry.names("non-convex"))
    assert c.best == min(c.rows, key=lambda r: r.value).name
    for r in c.rows:
        if r.tuned_value is not None:
            assert r.tuned_value <= r.value * (1 + 1e-9)
    text = c.to_text()
    assert "best (closed-form choices)" in text and "DERIVED" in text


def test_compare_table_is_plain_data(problem):
    data = compare_table(problem, tune=False)
    json.dumps(data)
    assert data["best"] in {r["name"] for r in data["rows"]}
    # with the DERIVED constants Alg. 2 overtakes Alg. 1 only where both are vacuous (~6 G)
    assert any(c["better"] == "nonconvex.sensitivity_reduced_nsgd"
               and c["worse"] == "nonconvex.tree_momentum_nsgd"
               for c in data["vacuous_crossovers"])
    assert all(c["vacuous"] == "" for c in data["crossovers"])


def test_registry_rejects_unknown_names():
    with pytest.raises(ValueError, match="valid names"):
        registry.get("nope")


def test_cli_bound(capsys):
    assert main(["bound", "tran_cutkosky.alg1", "--d", "100", "--N", "1e5", "--eps", "1",
                 "--delta", "1e-5", "--no-tune"]) == 0
    out = capsys.readouterr().out
    assert "d^(1/4) N^(-1/2) eps^(-1/2)" in out and "closed form" in out
    assert main(["bound", "--list"]) == 0
    assert "tran_cutkosky.alg2" in capsys.readouterr().out


def test_cli_bad_input_is_one_clear_line(capsys):
    assert main(["bound", "tran_cutkosky.alg1", "--d", "-3"]) == 2
    assert "d must be > 0" in capsys.readouterr().err
    assert main(["bound", "nope"]) == 2


def test_cli_compare_defaults(capsys):
    assert main(["compare", "--no-tune", "--c2", "6.5"]) == 0
    out = capsys.readouterr().out
    assert "best" in out and "crossover: nonconvex.sensitivity_reduced_nsgd beats" in out
    # the crossings among vacuous values are counted, not reported as crossovers
    assert "nonconvex.normalized_sgd beats nonconvex.clipped_sgd" not in out
    assert "crossing(s) where both bounds are vacuous" in out


def test_vacuous_bounds_are_flagged_against_the_trivial_bound_G():
    # ||grad F|| <= G holds for every G-Lipschitz loss: a bound above G certifies nothing.
    small = compare(dict(d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1))
    for row in small.rows:
        best = min(v for v in (row.value, row.tuned_value) if v is not None)
        assert (row.name in small.vacuous) == (best >= 1.0)
    # with 10^4 times more data every bound drops below G (all rates decay in N)
    large = compare(dict(d=100, N=1e9, eps=1.0, delta=1e-5, G=1, L=1, R=1))
    assert large.vacuous == []
    assert "vacuous" in small.to_text() and "vacuous" in small.to_dict()


def _slope(entry, var, lo, hi, **fixed):
    """Numerical log-log slope of the closed-form bound in ``var`` (independent of sympy)."""
    p = dict(d=100.0, N=1e30, eps=1.0, delta=1e-5, G=1.0, L=1.0, R=1.0, c2=5.0, **fixed)
    v = [float(entry.value({**p, var: x})) for x in (lo, hi)]
    return math.log(v[1] / v[0]) / math.log(hi / lo)


def test_yang_nsgd_scaling_names_both_parts_and_both_are_computed(capsys):
    """The decaying part at fixed r has the paper's headline exponents; the whole bound with r
    tuned decays more slowly. Both are printed, both come from exponents(), and the whole-bound
    exponents agree with numerical log-log slopes of the bound itself."""
    e = registry.get("yang.nsgd")
    part = e.scaling()
    whole = e.whole_scaling()
    R = sp.Rational
    assert dict(part.powers) == {"d": R(1, 4), "N": R(-1, 2), "eps": R(-1, 2)}  # the headline
    assert str(part) == str(normalized_sgd.nsgd_decaying.exponents(("d", "N", "eps")))
    assert str(whole) == str(e.tuned.exponents(e.scaling_variables))
    for var, lo, hi in (("d", 1e2, 1e4), ("N", 1e30, 1e32), ("eps", 1.0, 10.0)):
        assert _slope(e, var, lo, hi) == pytest.approx(float(whole[var]), abs=1e-6)
    assert main(["bound", "yang.nsgd", "--no-tune"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "scaling:" in x)
    assert f"decaying part at fixed r: {part}" in line
    assert f"whole bound with r tuned to the problem: {whole}" in line
    row = next(r for r in compare(tune=False, crossovers=False).rows
               if r.name == "nonconvex.normalized_sgd")
    assert str(part) in row.scaling and str(whole) in row.scaling
    # a bound whose headline is the whole bound shows one scaling only
    assert registry.get("yang.sgd").scaling_text() == str(registry.get("yang.sgd").scaling())


def test_bound_without_hyperparameters_prints_no_empty_line(capsys):
    assert main(["bound", "kamath.bst14"]) == 0
    out = capsys.readouterr().out
    assert "no free hyper-parameters" in out
    for line in out.splitlines():
        assert line.strip() and not line.rstrip().endswith(":") or line.strip() == "sources:"


def test_gradient_counts_broadcast_like_values():
    # the vectorised path must agree with point-by-point scalar evaluation
    import numpy as np

    for name in ("tran_cutkosky.alg1", "tran_cutkosky.alg2"):
        entry = registry.get(name)
        grid = np.array([1e5, 1e6, 1e7])
        vec = entry.gradients(N=grid)
        assert vec.shape == grid.shape
        np.testing.assert_allclose(vec, [entry.gradients(N=float(n)) for n in grid], rtol=1e-12)


# ----------------------------------------------------------------------------- issue 8, item 11/12
def _strict_json(text):
    def no_nan(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=no_nan)


def test_compare_shows_the_bounds_that_apply_when_one_does_not(capsys):
    """With N = 1000 the closed-form epoch count of Tran & Cutkosky is below one: those rows are
    'not applicable' with the assumption in words; the Yang et al. rows are still compared."""
    c = compare(dict(d=100, N=1000, eps=1, delta=1e-5, G=1, L=1, R=1, c2=6.5), tune=False,
                crossovers=False)
    na = c.not_applicable
    assert set(na) == {"nonconvex.tree_momentum_nsgd", "nonconvex.sensitivity_reduced_nsgd"}
    assert "E >= 1 (at least one epoch)" in na["nonconvex.tree_momentum_nsgd"]
    # both Yang et al. rows are vacuous at d = 100, N = 1000: none is crowned (stop 78)
    assert set(c.vacuous) == {"nonconvex.normalized_sgd", "nonconvex.clipped_sgd"}
    assert c.best is None
    assert all(math.isfinite(r.value) for r in c.rows if r.applicable)
    # the same through the CLI: exit 0, the reason in words, no internal expression
    assert main(["compare", "--N", "1000", "--no-tune", "--c2", "6.5"]) == 0
    out = capsys.readouterr().out
    assert ("not applicable here: nonconvex.tree_momentum_nsgd: assumption 'E >= 1 (at least "
            "one epoch)'") in out
    reasons = [x for x in out.splitlines() if x.startswith("not applicable here")]
    assert len(reasons) == 2 and not any("sqrt(" in x for x in reasons)
    assert "best (closed-form choices): none (every bound that applies is vacuous here)" in out
    assert main(["compare", "--N", "1000", "--no-tune", "--c2", "6.5", "--json"]) == 0
    data = _strict_json(capsys.readouterr().out)  # no NaN in the JSON
    assert data["not_applicable"].keys() == na.keys()
    # negative control: at N = 1e5 every bound applies
    assert compare(dict(N=1e5, c2=6.5), tune=False, crossovers=False).not_applicable == {}


def test_bound_that_does_not_apply_is_one_line_in_words(capsys):
    assert main(["bound", "tran_cutkosky.alg1", "--N", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpbounds: error: nonconvex.tree_momentum_nsgd does not apply to this "
                          "problem: assumption 'E >= 1 (at least one epoch)' fails at ")
    assert "N=1000" in err and "sqrt(" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv", [["bound", "tran_cutkosky.alg1"], ["bound", "tran_cutkosky.alg2"],
                                  ["compare"]])
def test_huge_dataset_size_is_no_overflow_and_tuning_never_worse(argv, capsys):
    """N = 1e16 raised OverflowError inside the numeric tuner (exp(log E) with E unbounded) and
    the closed-form E = 3.9e16 epochs lay outside the tuner's box (tuned 1.7e-5 > 2.3e-7)."""
    # --c2 (Yang et al.'s constant) only where a bound reads it: Tran & Cutkosky's refuse it
    assert main([*argv, "--N", "1e16", *(["--c2", "6.5"] if argv == ["compare"] else [])]) == 0
    assert "Traceback" not in capsys.readouterr().err
    for name in ("tran_cutkosky.alg1", "tran_cutkosky.alg2"):
        e = registry.get(name)
        p = dict(d=100, N=1e16, eps=1, delta=1e-5, G=1, L=1, R=1)
        assert e.optimize(p).value <= e.value(p) * (1 + 1e-9)


def test_bad_problem_values_name_the_flag(capsys):
    assert main(["bound", "yang.nsgd", "--G", "-1", "--c2", "6.5"]) == 2
    assert capsys.readouterr().err.strip() == (
        "dpbounds: error: --G must be > 0 (valid range (0, inf)), got -1.0")
    assert main(["compare", "--delta", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "dpbounds: error: --delta must lie in (0.0, 1.0), got 2.0")


# ----------------------------------------------------------------------------- issue 18, item 6
def test_bound_cli_flags_the_issue_example_as_vacuous(capsys):
    """The issue's example printed 'bound: 7.22175' (G = 1) with no warning."""
    argv = ["bound", "nonconvex.sensitivity_reduced_nsgd", "--d", "1000", "--N", "5e4",
            "--eps", "2", "--delta", "1e-6", "--no-tune"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    value = registry.get("tran_cutkosky.alg2").value(dict(d=1000, N=5e4, eps=2, delta=1e-6))
    assert value > 1.0 and "VACUOUS (bound)" in out and ">= 1 (G:" in out
    assert main([*argv, "--json"]) == 0
    data = _strict_json(capsys.readouterr().out)
    assert data["vacuous"] is True and data["trivial_bounds"][0]["value"] == 1.0
    # negative control: where the bound is below G nothing is flagged
    assert main(["bound", "tran_cutkosky.alg2", "--d", "4", "--N", "1e6", "--eps", "8",
                 "--no-tune"]) == 0
    assert "VACUOUS" not in capsys.readouterr().out


@pytest.mark.parametrize(("name", "problem", "want"), [
    ("tran_cutkosky.alg1", dict(G=1.0, L=1.0, R=1.0), 1.0),         # G < sqrt(2) = sqrt(2LR)
    ("tran_cutkosky.alg1", dict(G=1.0, L=1.0, R=0.18), 0.6),        # start's gradient, verify's
    ("yang.nsgd", dict(G=1.0, L=1.0, R=0.02, L1=0.5), 1.0),         # (L0,L1): no sqrt(2LR)
    ("kamath.bst14", dict(G=2.0, R=3.0), 6.0),                      # G diam, diam = R
    ("kamath.bst14", dict(G=2.0, R=3.0, diam=0.5), 1.0),
    ("strongly_convex.nag", dict(R=0.7), 0.7),                      # E0 = F(x0) - F*
])
def test_trivial_bounds_by_class(name, problem, want):
    from dpbounds.bounds.compare import trivial_bounds, vacuous_reason

    low = trivial_bounds(name, problem)[0].value
    assert low == pytest.approx(want, rel=1e-12)
    assert vacuous_reason(name, problem, low) is not None          # at the threshold: vacuous
    assert vacuous_reason(name, problem, low * (1 - 1e-12)) is None
    assert vacuous_reason(name, problem, math.inf) is not None


def test_compare_reports_only_informative_crossovers():
    """Each crossing's value is re-evaluated here from both bounds (independently of compare):
    they agree, the reported ones are below G and the omitted ones at or above it."""
    c = compare(dict(d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1, c2=6.5), tune=False)
    assert c.crossovers and c.vacuous_crossovers
    for x in c.crossovers + c.vacuous_crossovers:
        q = dict(c.problem, N=x.value)
        a = float(registry.get(x.better).value(q))
        b = float(registry.get(x.worse).value(q))
        assert a == pytest.approx(b, rel=1e-6) and x.bound_value == pytest.approx(a, rel=1e-6)
        assert (x in c.crossovers) == (a < 1.0)
