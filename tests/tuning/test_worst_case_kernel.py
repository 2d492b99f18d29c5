"""The compiled pass of the tuner's objective against its NumPy pass: the same bits.

``heavy_ball_worst_by_horizon`` runs a numba loop (one point at a time) when the ``fast`` extra
is installed, else NumPy over all points at once. The oracle is the NumPy pass (the derivation's
reference implementation, itself checked against dense evaluation in ``test_worst_case*.py``):
the best horizon and the worst case must be equal bit for bit, on random points that include
unstable ones, both start terms, heavy ball and the look-ahead family, ``d = 1`` and ``d >= 2``,
and horizons past ``DENSE`` (the doubling strides). Negative control: the same comparison tells
apart step sizes 2^-40 apart (it can fail).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import dpbounds.tuning._worst_case_search as wcs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="needs numba (the fast extra)")


def _case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    K, mu, L = 60, 10 ** rng.uniform(-4, -1), 1.0
    alpha, beta = 10 ** rng.uniform(-2.5, 0.2, K) / L, rng.uniform(0, 0.9995, K)
    alpha[:5] = 2.01 * (1 + beta[:5]) / L  # unstable at L: inf
    c = 10 ** rng.uniform(-9, -3)
    return dict(alpha=alpha, beta=beta,
                lam=wcs.worst_case_lambda_grid(mu, L, int(rng.integers(2, 40))),
                d=int(rng.choice([1, 2, 37])), Tmax=int(rng.choice([7, 150, 2 * wcs.DENSE + 900])),
                laplace_var=lambda T: c * np.asarray(T, float) ** 2,
                sampling_var=float(rng.choice([0.0, 1e-4])),
                initial_gap=1.0 if seed % 2 else None, dist_sq=None if seed % 2 else 3.0,
                gamma=None if seed % 3 else rng.uniform(0, 1, K))


def _both(monkeypatch: pytest.MonkeyPatch, kw: dict):
    out = []
    for compiled in (False, True):
        monkeypatch.setattr(wcs, "_use_compiled", lambda c=compiled: c)
        out.append(wcs.heavy_ball_worst_by_horizon(**kw))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_compiled_pass_is_bit_identical_to_numpy(monkeypatch, seed):
    kw = _case(seed)
    (T_np, W_np), (T_nb, W_nb) = _both(monkeypatch, kw)
    assert np.array_equal(T_np, T_nb)
    assert np.array_equal(W_np, W_nb)
    assert np.isinf(W_np[:5]).all()  # the unstable points are in the mix (inf) ...
    assert np.isfinite(W_np).sum() > 10  # ... and most are not


def test_negative_control_a_tiny_change_is_told_apart(monkeypatch):
    kw = _case(3)
    (_, W), _ = _both(monkeypatch, kw)
    kw["alpha"] = kw["alpha"] * (1 + 2.0 ** -40)
    (_, W_moved), (_, W_moved_nb) = _both(monkeypatch, kw)
    assert not np.array_equal(W, W_moved) and not np.array_equal(W, W_moved_nb)
