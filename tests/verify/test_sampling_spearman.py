"""The shuffle tests' Spearman rho (``dpbounds.verify.sampling._spearman_rho``) is SciPy's.

Oracle: ``scipy.stats.spearmanr`` itself, compared for exact (bit-for-bit) equality on
random permutations (the positions the shuffle tests feed it), on a pair with ties (where the
module hands over to SciPy) and on a monotone pair (rho = 1 up to rounding). Negative
control: ranks that are not SciPy's (one pair of ranks swapped) give another rho, which the
comparison sees.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbounds.verify.sampling import _spearman_rho


@pytest.mark.parametrize("m", [3, 4, 17, 100, 1000])
def test_rho_equals_scipy_bit_for_bit(m: int) -> None:
    rng = np.random.default_rng(m)
    for _ in range(25):
        a, b = rng.permutation(m), rng.permutation(m)
        assert _spearman_rho(a, b) == stats.spearmanr(a, b)[0]
        assert _spearman_rho(a, np.arange(m)) == stats.spearmanr(a, np.arange(m))[0]
    up = np.arange(m) * 3 + 1
    assert _spearman_rho(np.arange(m), up) == stats.spearmanr(np.arange(m), up)[0]
    assert _spearman_rho(np.arange(m), up) == pytest.approx(1.0, abs=1e-12)


def test_ties_are_scipys() -> None:
    a, b = np.array([0, 1, 1, 2, 5, 5, 5]), np.array([3, 1, 2, 0, 4, 6, 5])
    assert _spearman_rho(a, b) == stats.spearmanr(a, b)[0]
    assert _spearman_rho(b, a) == stats.spearmanr(b, a)[0]


def test_negative_control_wrong_ranks_differ() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.permutation(50), rng.permutation(50)
    wrong = a.copy()
    i, j = int(np.argmin(a)), int(np.argmax(a))
    wrong[i], wrong[j] = wrong[j], wrong[i]  # the smallest and largest ranks swapped
    assert _spearman_rho(wrong, b) != stats.spearmanr(a, b)[0]
