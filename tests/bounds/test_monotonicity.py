"""Composition is checked: the outer bound must be non-decreasing in each placeholder.

Oracles: closed-form derivatives of toy bounds, and mpmath finite differences of the outer bound
(independent of sympy's differentiation and sign analysis) at random points.
"""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpbounds.bounds.convex import noisy_projected_sgd, output_perturbation
from dpbounds.bounds.nonconvex import clipped_sgd, normalized_sgd, sensitivity_reduced
from dpbounds.bounds.nonconvex import tree_momentum as tran_cutkosky
from dpbounds.bounds.theorem import Assumption, Lemma, Monotonicity, Theorem, check_monotone, sym
from dpbounds.provenance import Provenance, Source

x, a, b, c, N, eps = (sym(k) for k in ("x", "a", "b", "c", "N", "eps"))
SRC = (Source("toy", "eq. (1)", Provenance.DERIVED),)
INNER = Lemma(name="inner", quantity="x", expr=1 / (N * eps), sources=SRC)


def outer(expr: sp.Expr, *assumptions: Assumption) -> Lemma:
    return Lemma(name="outer", quantity="q", expr=expr, sources=SRC, assumptions=assumptions)


def decrease_point(message: str) -> dict[str, float]:
    """The point named by a refusal: ``... at a=1, x=2; ...``."""
    at = message.split(" at ", 1)[1].split(";", 1)[0]
    return {k: float(v) for k, v in re.findall(r"(\w+)=([-+.\deE]+)", at)}


def mp_slope(expr: sp.Expr, point: dict[str, float], name: str = "x") -> mpmath.mpf | None:
    """Central finite difference of ``expr`` in ``name`` at 50 digits (None where not real)."""
    names = sorted(point)
    fn = sp.lambdify([sym(k) for k in names], expr, "mpmath")
    with mpmath.workdps(50):
        base = {k: mpmath.mpf(point[k]) for k in names}
        h = base[name] * mpmath.mpf("1e-20")

        def at(v: mpmath.mpf) -> mpmath.mpf | None:
            out = fn(*(v if k == name else base[k] for k in names))
            if isinstance(out, mpmath.mpc) and abs(out.imag) > 1e-40 * (1 + abs(out.real)):
                return None
            return mpmath.re(out)

        hi, lo = at(base[name] + h), at(base[name] - h)
        return None if hi is None or lo is None else (hi - lo) / (2 * h)


# ------------------------------------------------------------------ refusals
def test_composition_into_a_decreasing_bound_is_refused():
    with pytest.raises(ValueError, match=r"'outer' is not non-decreasing in 'x'") as err:
        outer(1 / x + 1 / N).compose("bad", {"x": INNER})
    point = decrease_point(str(err.value))
    assert set(point) == {"x", "N"}
    slope = mp_slope(1 / x + 1 / N, point)
    assert slope is not None and slope < 0  # the named point really decreases


def test_bound_increasing_on_part_of_the_domain_is_refused_then_restricted():
    expr = x * (x - c)  # increases only for x >= c/2
    with pytest.raises(ValueError, match="not non-decreasing in 'x'") as err:
        outer(expr).compose("bad", {"x": INNER})
    slope = mp_slope(expr, decrease_point(str(err.value)))
    assert slope is not None and slope < 0
    # restricted by an assumption on the placeholder: proven
    thm = outer(expr, Assumption("x >= c", x >= c)).compose("ok", {"x": INNER})
    assert thm.monotonicity[0].status == "proven"
    assert "x = c + p_x" in thm.monotonicity[0].how
    # or by a numeric domain
    thm = outer(x * (x - 5)).compose("ok", {"x": INNER}, domain={"x": (10, math.inf)})
    assert thm.monotonicity[0].status == "proven"
    with pytest.raises(ValueError, match="not non-decreasing"):
        outer(x * (x - 5)).compose("bad", {"x": INNER}, domain={"x": (1, math.inf)})


def test_exact_substitutions_need_no_monotonicity_and_say_so():
    thm = outer(1 / x).compose("identity", {"x": 1 / (N * eps)}, exact=("x",))
    (m,) = thm.monotonicity
    assert m.status == "exact" and "identity" in str(m)
    with pytest.raises(ValueError, match=r"exact=\['y'\]"):
        outer(1 / x).compose("typo", {"x": INNER}, exact=("y",))


@pytest.mark.parametrize("domain", [{"x": (5, 1)}, {"x": (-1, 2)}, {"x": "wide"}])
def test_bad_domain_names_the_parameter(domain):
    with pytest.raises(ValueError, match=r"domain\['x'\]"):
        outer(x).compose("bad", {"x": INNER}, domain=domain)


def test_no_admissible_grid_point_is_refused_not_passed():
    # the assumptions leave no point of the grid (x >= 1e7 is beyond its range, x <= 1e7 - 1):
    # nothing was checked, so nothing is claimed
    expr = sp.sin(x) + 2 * x  # derivative 2 + cos(x) > 0 but not provable by sign analysis
    with pytest.raises(ValueError, match="none of the .* grid points"):
        outer(expr, Assumption("x huge", x >= 10**7)).compose(
            "ok", {"x": INNER}, domain={"x": (1, 2)})


# ------------------------------------------------------------------ the three tiers
def test_monotone_but_not_provable_is_checked_on_a_grid_and_shown_by_audit():
    # d/dx [x log(1 + 1/x)] = log(1 + 1/x) - 1/(1 + x) > 0: true, beyond the sign analysis
    thm = outer(x * sp.log(1 + 1 / x)).compose("grid", {"x": INNER})
    (m,) = thm.monotonicity
    assert m.status == "grid"
    assert "points" in m.how and "x in [1e-06, 1e+06]" in m.how
    assert "checked on a grid" in thm.audit()
    # the grid's verdict agrees with the exact sign at random points
    g = np.random.default_rng(1)
    for v in 10 ** g.uniform(-6, 6, 20):
        assert mp_slope(x * sp.log(1 + 1 / x), {"x": v}) > 0


@pytest.mark.parametrize(
    ("build", "placeholders"),
    [
        (lambda: tran_cutkosky.lemma12.compose("n", {"sigma": tran_cutkosky.theorem4}),
         ["sigma"]),
        (lambda: tran_cutkosky.error_split.compose(
            "e", {"momentum_err": tran_cutkosky.lemma11_average,
                  "tree_err": tran_cutkosky.lemma12}), ["momentum_err", "tree_err"]),
        (lambda: tran_cutkosky.lemma5.compose("t6", {"noise_err": tran_cutkosky.lemma12}),
         ["noise_err"]),
        (lambda: sensitivity_reduced.lemma7.compose(
            "n", {"sigma1": sensitivity_reduced.theorem8_sigma1,
                  "sigma2": sensitivity_reduced.theorem8_sigma2}), ["sigma1", "sigma2"]),
        (lambda: normalized_sgd.nsgd_theorem, ["Q", "a"]),
        (lambda: clipped_sgd.sgd_theorem, ["Q"]),
        (lambda: noisy_projected_sgd.bst14_excess_risk.steps[0][1], ["G"]),
        (lambda: output_perturbation.excess_risk, ["sigma"]),
    ],
)
def test_every_composition_of_the_library_is_proven(build, placeholders):
    thm = build()
    assert [m.placeholder for m in thm.monotonicity] == placeholders
    # "exact": a declared identity (Yang's a, the output-perturbation change of variables)
    assert all(m.status in ("proven", "exact") for m in thm.monotonicity), [str(m) for m in
                                                                 thm.monotonicity]


@pytest.mark.parametrize("thm", [tran_cutkosky.theorem6, sensitivity_reduced.theorem9,
                                 normalized_sgd.nsgd_corollary, clipped_sgd.sgd_corollary,
                                 noisy_projected_sgd.bst14_excess_risk], ids=lambda t: t.name)
def test_audit_shows_how_each_step_is_monotone(thm):
    text = thm.audit()
    plugged = text.count("[plugged in for")
    shown = [line for line in text.splitlines() if "monotonicity:" in line]
    assert plugged == len(shown) > 0
    assert all("proven" in line for line in shown), shown


def test_monotonicity_record_is_kept_by_replace_and_dropped_by_tuned():
    thm = outer(2 * x).compose("c", {"x": INNER})
    assert thm.replace(name="renamed").monotonicity == thm.monotonicity
    assert isinstance(thm.monotonicity[0], Monotonicity)
    assert isinstance(thm, Theorem) and thm.tuned().monotonicity == ()


# ------------------------------------------------------------------ property: proven is right
_LEAVES = st.sampled_from([x, x, a, b, sp.Integer(1), sp.Integer(2), sp.Rational(1, 2)])


def _extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.tuples(children, children).map(lambda t: t[0] + t[1]),
        st.tuples(children, children).map(lambda t: t[0] * t[1]),
        st.tuples(children, children).map(lambda t: t[0] - t[1]),
        children.map(lambda e: 1 / e),
        children.map(sp.sqrt),
        children.map(lambda e: sp.log(1 + e)),
        children.map(lambda e: e**2),
    )


_EXPRS = st.recursive(_LEAVES, _extend, max_leaves=6).filter(lambda e: x in e.free_symbols)
_RELATIONS = st.sampled_from([None, x >= a, x <= a, a <= 1, b > a, x >= 1])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_EXPRS, relation=_RELATIONS, seed=st.integers(0, 2**32 - 1))
def test_proven_never_disagrees_with_finite_differences(expr, relation, seed):
    relations = () if relation is None else (relation,)
    try:
        m = check_monotone(expr, "x", outer_name="random", relations=relations)
    except ValueError as err:
        if "none of the" in str(err):
            return
        # a refusal names a point where the bound really decreases (or sits at the edge)
        point = decrease_point(str(err))
        slope = mp_slope(expr, {**{"a": 1.0, "b": 1.0}, **point})
        assert slope is None or slope < 1e-30 * (1 + abs(expr.subs(
            {sym(k): v for k, v in point.items()}).evalf())), (expr, point, slope)
        return
    if m.status != "proven":
        return
    g = np.random.default_rng(seed)
    checked = 0
    for _ in range(200):
        point = {k: float(10 ** g.uniform(-3, 3)) for k in ("x", "a", "b")}
        if relation is not None and not bool(relation.subs(
                {sym(k): v for k, v in point.items()})):
            continue
        slope = mp_slope(expr, point)
        if slope is None:
            continue
        assert slope >= -1e-25 * (1 + abs(slope)), (expr, relation, m.how, point, slope)
        checked += 1
        if checked == 8:
            break


def test_cli_audit_shows_each_step_monotonicity(capsys):
    from dpbounds.cli import main

    assert main(["bound", "tran_cutkosky.alg1", "--audit"]) == 0
    out = capsys.readouterr().out
    shown = [line for line in out.splitlines() if "monotonicity:" in line]
    assert len(shown) == out.count("[plugged in for") == 4
    assert all("proven" in line for line in shown)
