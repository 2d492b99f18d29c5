"""Mechanism objects: validation, immutability and the sensitivity conversion rules
(checked against the per-example-sum model by direct computation on small datasets)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from dpbounds.privacy import mechanisms as M


def test_frozen_and_coerced():
    g = M.GaussianMechanism(2.0, 1.0, "replace_one")
    assert g.neighbouring is M.Neighbouring.REPLACE_ONE
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.sigma = 3.0
    s = M.SubsampledGaussianMechanism(1.0, 0.1, sampling="without_replacement")
    assert s.neighbouring is M.Neighbouring.REPLACE_ONE  # natural relation of the scheme
    assert M.SubsampledGaussianMechanism(1.0, 0.1).neighbouring is M.Neighbouring.ADD_REMOVE
    assert g == M.GaussianMechanism(2.0, 1.0, M.Neighbouring.REPLACE_ONE)


def test_sensitivity_conversion_matches_per_example_sums():
    # f(D) = sum of clipped vectors; brute-force the two sensitivities over a small universe
    rng = np.random.default_rng(0)
    universe = rng.normal(size=(6, 3))
    universe /= np.maximum(1.0, np.linalg.norm(universe, axis=1, keepdims=True))  # clip C = 1
    ar = max(np.linalg.norm(u) for u in universe)
    ro = max(np.linalg.norm(u - v) for u, v in itertools.product(universe, universe))
    assert ro <= M.convert_sensitivity(ar, "add_remove", "replace_one") + 1e-12
    # with the worst-case pair (u, -u) available the factor 2 is attained
    universe = np.vstack([universe, -universe[:1] / np.linalg.norm(universe[0])])
    universe[0] /= np.linalg.norm(universe[0])
    ro = max(np.linalg.norm(u - v) for u, v in itertools.product(universe, universe))
    assert M.convert_sensitivity(1.0, "add_remove", "replace_one") == pytest.approx(ro)
    assert M.convert_sensitivity(ro, "replace_one", "add_remove",
                                 per_example_sum=True) == pytest.approx(1.0)


def test_halving_needs_per_example_sum():
    # the halving replace-one -> add/remove is a property of per-example sums only. Counter-
    # example: the mean over a fixed n of values in [0, 1] has replace-one sensitivity 1/n, but
    # adding a record to n identical records changes it by ~1/n too, not 1/(2n).
    n = 10
    values = np.zeros(n)
    mean_ro = 1.0 / n
    mean_ar = abs(np.mean(np.append(values, 1.0)) - np.mean(values))
    assert mean_ar > mean_ro / 2  # halving would understate the add/remove sensitivity
    with pytest.raises(ValueError, match="per_example_sum"):
        M.convert_sensitivity(1.0, "replace_one", "add_remove")
    sensitive = [
        M.GaussianMechanism(1.0, 1.0, "replace_one"),
        M.LaplaceMechanism(1.0, 1.0, "replace_one"),
        M.SubsampledGaussianMechanism(1.0, 0.1, neighbouring="replace_one"),
        M.SubsampledLaplaceMechanism(1.0, 1.0, 10, 100),
        M.TreeAggregationMechanism(1.0, 1.0, 3),
    ]
    for mech in sensitive:
        assert mech.per_example_sum is False
        with pytest.raises(ValueError, match="per_example_sum"):
            mech.sensitivity_under("add_remove")
        assert mech.sensitivity_under("replace_one") == mech.sensitivity
        summed = dataclasses.replace(mech, per_example_sum=True)
        assert summed.sensitivity_under("add_remove") == mech.sensitivity / 2
        # add/remove -> replace-one doubles whatever the query (triangle inequality)
        ar = dataclasses.replace(mech, neighbouring="add_remove")
        assert ar.sensitivity_under("replace_one") == 2 * mech.sensitivity
    with pytest.raises(ValueError, match="per_example_sum"):
        M.GaussianMechanism(1.0, per_example_sum="yes")


def test_guarantee_conversion_by_group_privacy():
    p = M.PureDpMechanism(0.3)
    assert p.epsilon_under("replace_one") == pytest.approx(0.6)
    z = M.ZcdpMechanism(0.1)
    assert z.rho_under("replace_one") == pytest.approx(0.4)
    with pytest.raises(ValueError, match="neighbouring"):
        M.PureDpMechanism(0.3, "replace_one").epsilon_under("add_remove")


def test_kuru_constructor():
    m = M.SubsampledLaplaceMechanism.kuru(sensitivity_function=2.0, scale=0.1, n=100, m=10)
    assert m.sensitivity == pytest.approx(0.2) and m.sample_size == 10


@pytest.mark.parametrize("call,name", [
    (lambda: M.GaussianMechanism(0.0), "sigma"),
    (lambda: M.GaussianMechanism(1.0, -1.0), "sensitivity"),
    (lambda: M.GaussianMechanism(1.0, 1.0, "neighbours"), "neighbouring"),
    (lambda: M.LaplaceMechanism(-1.0), "scale"),
    (lambda: M.SubsampledGaussianMechanism(1.0, 0.0), "sampling_rate"),
    (lambda: M.SubsampledGaussianMechanism(1.0, 1.5), "sampling_rate"),
    (lambda: M.SubsampledGaussianMechanism(1.0, 0.5, sampling="shuffle"), "sampling"),
    (lambda: M.SubsampledLaplaceMechanism(1.0, 1.0, 11, 10), "sample_size"),
    (lambda: M.TreeAggregationMechanism(1.0, 1.0, 0), "node_count"),
    (lambda: M.PureDpMechanism(float("nan")), "epsilon"),
    (lambda: M.ZcdpMechanism(-0.1), "rho"),
])
def test_invalid(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_sensitivity_doubling_beyond_float_range_is_refused():
    # found by the issue-8 sweep: 2 * 1.7e308 = inf leaked out of convert_sensitivity
    with pytest.raises(ValueError, match="sensitivity"):
        M.convert_sensitivity(1.7e308, "add_remove", "replace_one")
    assert M.convert_sensitivity(8e307, "add_remove", "replace_one") == 1.6e308
