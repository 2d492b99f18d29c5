"""dpbounds.data: synthetic generators and the shipped UCI Adult.

Oracles: the published Adult class counts (UCI: 11,687 of 48,842 records earn >50K; 7,841
of the 32,561 training and 3,846 of the 16,281 test records), the published category counts
of the Adult attributes, the generating rule y = sign(Xw), exact zero-sum constructions.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.data import adult, finite_sum_offsets, kuru_synthetic, unit_ball_classification


def test_kuru_synthetic_follows_the_recipe():
    ds = kuru_synthetic(n=5000, d=20, seed=3)
    X, y = ds
    assert X.shape == (5000, 20) and y.shape == (5000,)
    assert X.min() >= 0 and X.max() <= 1
    np.testing.assert_array_equal(y, np.where(X @ ds.extra["w"] >= 0, 1.0, -1.0))
    assert ds.l1_radius == 20.0  # Kuru's S_1 = 2 * 20 = 40
    # same seed, same data; other seed, other data
    np.testing.assert_array_equal(kuru_synthetic(n=5000, d=20, seed=3).features, X)
    assert not np.array_equal(kuru_synthetic(n=50, seed=4).features,
                              kuru_synthetic(n=50, seed=3).features)


def test_kuru_clipping_fires_only_in_high_dimension():
    rng_free = kuru_synthetic(n=2000, d=20, seed=0)
    assert np.abs(rng_free.features).sum(1).max() <= 20.0  # vacuous at d = 20
    clipped = kuru_synthetic(n=2000, d=60, seed=0)
    l1 = np.abs(clipped.features).sum(1)
    assert l1.max() == pytest.approx(20.0) and clipped.l1_radius == 20.0
    # rescaling keeps the direction: reproduce it from the same draws
    raw = np.random.default_rng(0).uniform(size=(2000, 60))
    scale = np.minimum(1.0, 20.0 / raw.sum(1))
    np.testing.assert_allclose(clipped.features, raw * scale[:, None])


def test_finite_sum_offsets_sum_to_zero_and_are_bounded():
    for skew in (0.0, 0.3):
        a = finite_sum_offsets(400, 7, tau0=0.8, skew=skew, seed=1)
        assert a.shape == (400, 7)
        np.testing.assert_allclose(a.sum(0), 0.0, atol=1e-12)
        assert np.linalg.norm(a, axis=1).max() <= 0.8 + 1e-12
    with pytest.raises(ValueError, match="even"):
        finite_sum_offsets(5, 2)
    with pytest.raises(ValueError, match="skew"):
        finite_sum_offsets(6, 2, skew=1.0)


def test_unit_ball_classification():
    ds = unit_ball_classification(3000, 5, label_noise=0.0, seed=2)
    assert np.linalg.norm(ds.features, axis=1).max() <= 1.0
    np.testing.assert_array_equal(ds.labels, np.where(ds.features @ ds.extra["w"] >= 0, 1, -1))
    noisy = unit_ball_classification(3000, 5, label_noise=0.2, seed=2)
    flipped = np.mean(noisy.labels != ds.labels)
    assert abs(flipped - 0.2) < 5 * np.sqrt(0.2 * 0.8 / 3000)


def test_adult_matches_the_published_counts():
    full = adult()
    assert full.features.shape == (48842, 109)  # 6 numeric + 102 one-hot + bias
    assert int((full.labels > 0).sum()) == 11687
    train, test = adult(split="train"), adult(split="test")
    assert train.n == 32561 and int((train.labels > 0).sum()) == 7841
    assert test.n == 16281 and int((test.labels > 0).sum()) == 3846
    names = full.extra["feature_names"]
    # UCI adult.names: 16 education levels, 7 marital statuses, 6 relationships, 5 races
    assert sum(n.startswith("education=") for n in names) == 16
    assert sum(n.startswith("marital_status=") for n in names) == 7
    assert sum(n.startswith("relationship=") for n in names) == 6
    assert sum(n.startswith("race=") for n in names) == 5
    # declared domain holds for every row
    assert np.abs(full.features).sum(1).max() <= full.l1_radius
    assert np.linalg.norm(full.features, axis=1).max() <= full.l2_radius
    X = full.features
    assert X[:, :6].min() == 0.0 and X[:, :6].max() == 1.0
    np.testing.assert_array_equal(X[:, -1], 1.0)
    unit = adult(normalize_rows=True, bias=False)
    np.testing.assert_allclose(np.linalg.norm(unit.features, axis=1), 1.0)
    assert unit.d == 108


def test_adult_logistic_regression_is_sensible():
    from dpbounds.objectives import LogisticRegression

    tr, te = adult(split="train"), adult(split="test")
    f = LogisticRegression(*tr, l2=1e-3, **tr.domain())
    w = f.optimum.x
    acc = np.mean(np.sign(te.features @ w) == te.labels)
    assert 0.83 < acc < 0.87  # the usual ~85 % of linear models on Adult
