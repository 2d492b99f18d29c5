"""The audit objective, its neighbouring pairs, and the transcript features.

Oracles: finite differences and closed forms for the objective; the algorithms' declared
sensitivities against the change of their noise-free query computed here on the explicit
pair; and, for the transcript inversion, the noise itself, regenerated from the
algorithms' documented random streams (``make_streams`` / ``TrialRandom.split``): the
recovered noisy gradients must equal data gradient + that noise to round-off.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.algorithms import (
    dp_gd,
    dp_heavy_ball,
    dp_masg,
    dp_nag,
    dp_nag_opt,
    dp_sgd,
    tree_momentum_nsgd,
)
from dpbounds.algorithms._common import make_streams
from dpbounds.audit.neighbours import LinearObjective, add_remove_pair, replace_one_pair
from dpbounds.audit.registry import _momentum_features
from dpbounds.audit.transcript import direction_statistics, noisy_gradients
from dpbounds.backend import TrialRandom, get_namespace


def test_linear_objective_gradients_and_optimum():
    c = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.0]])
    f = LinearObjective(c, l2=0.7, smoothness=2.0)
    x = np.array([[0.3, -0.4], [1.0, 2.0]])
    g = np.asarray(f.grad(x))
    h = 1e-6
    fd = np.stack([(np.asarray(f.loss(x + h * e)) - np.asarray(f.loss(x - h * e))) / (2 * h)
                   for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(g, c.mean(axis=0) + 0.7 * x, rtol=1e-14)
    opt = f.optimum
    np.testing.assert_allclose(np.asarray(f.grad(opt.x[None, :]))[0], 0.0, atol=1e-14)
    assert f.smoothness == 2.0 and f.strong_convexity == 0.7
    assert f.gradient_bound == pytest.approx(np.sqrt(9.25))
    with pytest.raises(ValueError, match="smoothness"):
        LinearObjective(c, l2=3.0, smoothness=1.0)
    with pytest.raises(ValueError, match="gradients"):
        LinearObjective(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="no minimum"):
        _ = LinearObjective(c).optimum


@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_pair_attains_the_declared_gaussian_gd_sensitivity(relation):
    d, dp = (replace_one_pair if relation == "replace-one" else add_remove_pair)(
        dim=3, radius=2.0)
    x = np.zeros((1, 3))
    # the noise-free query of Gaussian DP-GD: the clipped sum over a public normaliser
    # (D's size; under replace-one it is both data sets' size), clipping active: 2 > 1
    public_n = d.n
    q = [np.asarray(o.clipped_mean_grad(x, None, 1.0))[0] * o.n / public_n for o in (d, dp)]
    change = np.linalg.norm(q[0] - q[1])
    extra = {"public_n": public_n} if relation == "add/remove" else {}
    declared = dp_gd(d, epsilon=1.0, delta=1e-5, steps=1, step_size=1.0, mechanism="gaussian",
                     clip_threshold=1.0, neighbouring=relation, trace=None,
                     **extra).params["sensitivity"]
    assert change == pytest.approx(declared, rel=1e-14)  # the pair is worst case on D's n
    # the L1 (Laplace) sensitivity of the replace-one pair: |+r - (-r)| = S_1
    if relation == "replace-one":
        assert np.sum(np.abs(d.gradients - dp.gradients)) == pytest.approx(d.l1_sensitivity)


def test_tap_records_one_point_per_step():
    d, _ = replace_one_pair(dim=2, radius=2.0)
    for run in (
        lambda o: dp_gd(o, epsilon=1.0, delta=1e-5, steps=4, step_size=1.0,
                        mechanism="gaussian", clip_threshold=1.0, trace=None),
        lambda o: dp_sgd(o, epsilon=1.0, delta=1e-5, steps=4, step_size=1.0, batch_size=1,
                         clip_threshold=1.0, trace=None),
        lambda o: tree_momentum_nsgd(o, epsilon=1.0, delta=1e-5, epochs=4, step_size=1.0,
                                     clip_threshold=1.0, trace=None),
    ):
        o = d.tapped()
        res = run(o)
        assert len(o.queries) == 4
        np.testing.assert_array_equal(o.queries[0], np.zeros((1, 2)))  # x_0
        assert not d.queries  # the original is untouched
        assert res.x.shape == (1, 2)


LAPLACE_RUNS = {
    "dp_gd": (lambda o, **k: dp_gd(o, mechanism="laplace", step_size=1.0, **k), "hb"),
    "dp_heavy_ball": (dp_heavy_ball, "hb"),
    "dp_nag": (dp_nag, "nag"),
    "dp_nag_opt": (dp_nag_opt, "nag"),
    "dp_masg": (dp_masg, "nag"),
}


@pytest.mark.parametrize("name", sorted(LAPLACE_RUNS))
def test_momentum_inversion_recovers_the_laplace_noise(name):
    fn, kind = LAPLACE_RUNS[name]
    c = np.array([[0.8, -0.3]])
    o = LinearObjective(c, l2=0.5, smoothness=1.0).tapped()
    trials, seed = 7, 11
    res = fn(o, epsilon=2.0, steps=6, trials=trials, seed=seed, trace=None)
    feats = _momentum_features(kind, 0.5)(res, o.queries)
    T = len(res.params["step_sizes"])
    _, noise = make_streams(seed, trials, get_namespace("numpy"))
    eta = np.stack([np.asarray(noise.laplace((2,), b)) for b in res.params["laplace_scales"]],
                   axis=1)  # (trials, T, d), the documented stream: one draw per step
    np.testing.assert_allclose(feats.reshape(trials, T, 2), c[0] + eta, rtol=0, atol=1e-10)
    if name == "dp_heavy_ball":
        assert res.params["momenta"][0] > 0  # the momentum was really inverted


def test_masg_inversion_with_stage_restarts():
    c = np.array([[0.8]])
    o = LinearObjective(c, l2=0.05, smoothness=1.0).tapped()
    res = dp_masg(o, epsilon=2.0, steps=40, trials=3, seed=2, trace=None)
    stages = np.asarray(res.params["stages"])
    assert np.any(stages[1:] != stages[:-1]) and res.params["restart"]
    feats = _momentum_features("nag", 0.05)(res, o.queries)
    _, noise = make_streams(2, 3, get_namespace("numpy"))
    eta = np.stack([np.asarray(noise.laplace((1,), b)) for b in res.params["laplace_scales"]],
                   axis=1)[..., 0]
    np.testing.assert_allclose(feats, 0.8 + eta, rtol=0, atol=1e-9)


def test_gd_inversion_recovers_the_gaussian_noise():
    o = replace_one_pair(dim=1, radius=2.0)[0].tapped()
    res = dp_gd(o, epsilon=2.0, delta=1e-3, steps=5, step_size=0.5, mechanism="gaussian",
                clip_threshold=1.0, trials=6, seed=4, trace=None)
    feats = noisy_gradients(o.queries, res.x_numpy(), step_sizes=np.full(5, 0.5))
    _, noise = make_streams(4, 6, get_namespace("numpy"))
    eta = np.concatenate([np.asarray(noise.normal((1,), res.params["sigma"]))
                          for _ in range(5)], axis=1)
    np.testing.assert_allclose(feats, 1.0 + eta, rtol=0, atol=1e-10)  # clipped +2 -> +1


def test_direction_statistic_is_the_noisy_momentum_ratio():
    # tree-momentum NSGD, one record, one step, alpha = 1: m_hat_1 = clip(g) + zeta
    d = 16
    o = replace_one_pair(dim=d, radius=2.0)[0].tapped()
    res = tree_momentum_nsgd(o, epsilon=2.0, delta=1e-3, epochs=1, step_size=1.0,
                             clip_threshold=1.0, trials=5, seed=9, trace=None)
    feats = direction_statistics(o.queries, res.x_numpy(), steps=1)
    sampler, noise, _ = TrialRandom(9, 5, get_namespace("numpy")).split(3)
    sampler.permutation(1)
    m_hat = np.asarray(noise.normal((d,), res.params["sigma"]))
    m_hat[:, 0] += 1.0
    expected = m_hat[:, 0] / np.sqrt(np.mean(m_hat[:, 1:] ** 2, axis=1))
    np.testing.assert_allclose(feats[:, 0], expected, rtol=1e-10)
    with pytest.raises(ValueError, match="d >= 2"):
        direction_statistics([np.zeros((2, 1))], np.zeros((2, 1)), steps=1)


def test_transcript_length_is_checked():
    with pytest.raises(ValueError, match="query points"):
        noisy_gradients([np.zeros((1, 1))], np.zeros((1, 1)), step_sizes=[1.0, 1.0])
