"""Output perturbation's excess risk (convex.output_perturbation, DERIVED) against the algorithm
that runs it: the noise it calibrates, and Monte Carlo of its excess risk inside the closed-form
sandwich mu d sigma^2 / 2 <= E[F(theta_hat)] - F* <= L d sigma^2 / 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import output_perturbation
from dpbounds.bounds.compare import compare
from dpbounds.bounds.convex.output_perturbation import excess_risk, excess_risk_of_noise
from dpbounds.bounds.registry import get
from dpbounds.cli import main
from dpbounds.data import unit_ball_classification
from dpbounds.objectives import LogisticRegression

EPS, DELTA, MU = 0.5, 1e-5, 0.5


def _objective(n=60, d=4, seed=0):
    data = unit_ball_classification(n, d, label_noise=0.1, seed=seed)
    return LogisticRegression(*data, l2=MU, **data.domain())


def _params(f):
    return dict(d=f.d, N=f.n, eps=EPS, delta=DELTA, G=f.gradient_bound, L=f.smoothness, mu=MU)


def test_the_bound_uses_the_noise_the_algorithm_calibrates():
    f = _objective()
    r = output_perturbation(f, epsilon=EPS, delta=DELTA, mechanism="classic", trials=1, seed=0,
                            trace=None)
    value = get("convex.output_perturbation").value(_params(f))
    assert value == pytest.approx(f.smoothness * f.d * r.params["sigma"] ** 2 / 2, rel=1e-12)
    assert float(excess_risk_of_noise.evaluate(L=f.smoothness, d=f.d,
                                               sigma=r.params["sigma"])) == pytest.approx(value)


def test_monte_carlo_excess_risk_lies_in_the_closed_form_sandwich():
    f = _objective()
    trials = 4000
    r = output_perturbation(f, epsilon=EPS, delta=DELTA, mechanism="classic", trials=trials,
                            seed=1)
    sigma = r.params["sigma"]
    risk = np.asarray(r.final)
    mean, half = float(risk.mean()), 1.96 * float(risk.std(ddof=1)) / math.sqrt(trials)
    upper = get("convex.output_perturbation").value(_params(f))
    lower = MU * f.d * sigma**2 / 2  # strong convexity: F(theta* + b) - F* >= mu ||b||^2 / 2
    assert lower <= mean + half and mean - half <= upper
    # negative control: a do-nothing (noise-free) run lies below the lower end of the sandwich,
    # so the check above would fail for it
    quiet = output_perturbation(f, epsilon=math.inf, delta=DELTA, trials=4, seed=1)
    assert float(np.max(quiet.final)) < lower


def test_the_bound_is_attained_by_an_isotropic_quadratic():
    # F = (L/2)||theta - theta*||^2: F(theta* + b) - F* = (L/2)||b||^2 exactly, so the bound is
    # the expectation (d sigma^2 L / 2); Monte Carlo with an independent generator
    rng = np.random.default_rng(3)
    d, L, sigma = 6, 2.0, 0.3
    b = rng.normal(0.0, sigma, size=(200_000, d))
    mc = float(np.mean(L / 2 * np.sum(b**2, axis=1)))
    assert mc == pytest.approx(float(excess_risk_of_noise.evaluate(L=L, d=d, sigma=sigma)),
                               rel=0.01)


def test_scaling_and_registry():
    s = excess_risk.exponents(("d", "n", "eps"))
    assert {k: float(v) for k, v in s.powers.items()} == {"d": 1.0, "n": -2.0, "eps": -2.0}
    e = get("convex.output_perturbation")
    assert str(e.tuned.provenance) == "DERIVED" and e.requires == ("mu",)
    c = compare(dict(d=4, N=1000, eps=EPS, G=1.0, L=0.75, R=1.0, mu=MU,
                     problem_class="convex"), tune=False, crossovers=False)
    assert {r.name for r in c.rows} == {"convex.noisy_projected_sgd",
                                        "convex.output_perturbation"}
    assert all(r.applicable for r in c.rows)
    # without the strong convexity it does not apply, and says what is missing
    c = compare(dict(problem_class="convex"), tune=False, crossovers=False)
    row = next(r for r in c.rows if r.name == "convex.output_perturbation")
    assert "strong convexity mu (--strong-convexity, --mu)" in row.not_applicable


def test_cli(capsys):
    assert main(["bound", "convex.output_perturbation", "--mu", "0.5", "--eps", "0.5",
                 "--N", "1000", "--d", "4"]) == 0
    out = capsys.readouterr().out
    assert "d n^(-2) eps^(-2)" in out and "DERIVED" in out
    assert main(["bound", "convex.output_perturbation", "--mu", "0.5", "--eps", "2"]) == 2
    assert "eps < 1" in capsys.readouterr().err
