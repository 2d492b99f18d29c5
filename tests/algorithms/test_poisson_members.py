"""Poisson membership by partition equals the stable full sort (issue 36: the full sort of
n per step was 60% of a Poisson step's CPU at n = 1e4). Oracle: ``np.argsort(kind="stable")``
of the same uniforms; a tie across the partition's boundary takes the full sort."""

from __future__ import annotations

from types import SimpleNamespace

import array_api_compat.numpy as xp
import numpy as np
import pytest

from dpbounds.algorithms.dp_sgd import poisson_members


class _Fixed:
    def __init__(self, u: np.ndarray) -> None:
        self.u = u

    def uniform(self, shape: tuple[int, ...]) -> np.ndarray:
        assert shape == (self.u.shape[1],)
        return self.u


@pytest.mark.parametrize("trials,n,q", [(1, 10_000, 0.01), (4, 1000, 0.05), (3, 200, 0.2),
                                        (2, 50, 0.1), (2, 40, 0.5), (1, 7, 0.0)])
def test_members_equal_the_stable_sort(trials: int, n: int, q: float) -> None:
    rng = np.random.default_rng(n)
    for _ in range(20):
        u = rng.random((trials, n))
        obj = SimpleNamespace(xp=xp, n=n)
        idx, counts = poisson_members(obj, _Fixed(u), q)
        width = int((u < q).sum(axis=1).max())
        assert np.array_equal(np.asarray(idx), np.argsort(u, axis=1, kind="stable")[:, :width])
        assert np.array_equal(np.asarray(counts), (u < q).sum(axis=1))


def test_a_tie_at_the_boundary_takes_the_full_sort() -> None:
    """Row 0 has 15 members (width 15), row 1 has 5: row 1's selection runs past its members,
    and its ranks 14 and 15 (0-based) are made equal, so a partition may pick either (the
    check sees 16 values <= the selected maximum and takes the full sort)."""
    rng = np.random.default_rng(0)
    u = rng.random((2, 1000))
    q = 0.5
    u[0] = np.where(np.arange(1000) < 15, rng.random(1000) * 0.4, 0.6 + 0.4 * rng.random(1000))
    u[1] = np.where(np.arange(1000) < 5, rng.random(1000) * 0.4, 0.6 + 0.4 * rng.random(1000))
    order = np.argsort(u[1], kind="stable")
    u[1, order[14]] = u[1, order[15]]
    obj = SimpleNamespace(xp=xp, n=1000)
    idx, counts = poisson_members(obj, _Fixed(u), q)
    assert list(np.asarray(counts)) == [15, 5]
    assert np.array_equal(np.asarray(idx), np.argsort(u, axis=1, kind="stable")[:, :15])
