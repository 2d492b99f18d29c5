"""CuPy backend: statistically identical to NumPy for the same seeds (skips without a GPU).

No GPU was available when this was written; these tests are the check a GPU session runs.
Oracles: the laws of the noise (moments with 5-sigma bands, a two-sample KS test against
NumPy's draws) and the NumPy run of the same algorithm (means within a 5-sigma band).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.backend import TrialRandom, cupy_available, to_numpy

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cupy_available(), reason="needs CuPy and a CUDA device"),
]


def test_cupy_noise_has_the_calibrated_law_and_matches_numpy_statistically() -> None:
    from scipy import stats

    n, b = 200_000, 0.7
    gpu = to_numpy(TrialRandom(seed=3, trials=2, xp="cupy").laplace((n,), scale=b)).ravel()
    cpu = to_numpy(TrialRandom(seed=3, trials=2, xp="numpy").laplace((n,), scale=b)).ravel()
    var, se = gpu.var(), gpu.var() * math.sqrt(5.0 / gpu.size)  # Laplace kurtosis 6
    assert abs(var - 2 * b * b) < 5 * se
    assert abs(gpu.mean()) < 5 * math.sqrt(2) * b / math.sqrt(gpu.size)
    assert stats.ks_2samp(gpu, cpu).pvalue > 1e-6


def test_cupy_is_reproducible_from_a_seed() -> None:
    a = to_numpy(TrialRandom(seed=11, trials=4, xp="cupy").normal((1000,)))
    b = to_numpy(TrialRandom(seed=11, trials=4, xp="cupy").normal((1000,)))
    np.testing.assert_array_equal(a, b)


def test_dp_heavy_ball_on_cupy_matches_numpy_in_distribution() -> None:
    from dpbounds.algorithms import dp_heavy_ball
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective.random(50, 0.1, 1.0, n=1000, offset_scale=0.1, seed=0, rotate=False)
    kw = dict(epsilon=1.0, steps=100, batch_size=100, trials=256, seed=5)
    cpu = dp_heavy_ball(f, **kw).final
    gpu = dp_heavy_ball(f.to_backend("cupy"), **kw).final
    se = math.sqrt(cpu.var(ddof=1) / cpu.size + gpu.var(ddof=1) / gpu.size)
    assert abs(cpu.mean() - gpu.mean()) < 5 * se
