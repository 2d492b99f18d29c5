"""The subsampled Gaussian transcript's exact likelihood ratio (``mixture-lr``) and its
threshold test on every run (``model_bound``), used where an audit setting declares its
sampled mechanism (the batched DP-SGD / DP-NSGD pairs).

Oracles: the mixture densities written out with ``scipy.stats.norm`` (a second method, not
the log-sum-exp of the code under test); the Clopper-Pearson guarantee for a test fixed
before the runs (null rate at most 5 %); the mechanism's declared parameters, recomputed by
hand from the pair. Negative controls: a model with the components swapped, the one-Gaussian
reading of a step. The audit verdicts (``wrong_sampling_rate`` refuted at ``--quick`` on the
batched replace-one pair, the correct algorithm passing there) are in ``test_zoo.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbounds.audit.statistics import (
    SampledGaussianModel,
    mixture_lr,
    model_bound,
    model_test,
    sample_model,
    simulated_scores,
)

U = np.array([1.0, -1.0, 1.0, -1.0]) / 2.0  # the batched pairs' canary direction, unit norm


def _model(s: float = 0.1, q: float = 0.5) -> SampledGaussianModel:
    b = U / 39
    return SampledGaussianModel(q, s, 3, (b, (U + 19 * b) / 20), (b, (-U + 19 * b) / 20))


def _by_hand(f: np.ndarray, m: SampledGaussianModel) -> np.ndarray:
    """prod_t [(1-q) phi(f_t; m_out') + q phi(f_t; m_in')] / [same on D], by scipy pdfs."""
    f3 = f.reshape(f.shape[0], m.steps, m.dim)

    def density(means: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        out = np.prod(stats.norm.pdf(f3, means[0], m.s), axis=-1)
        inn = np.prod(stats.norm.pdf(f3, means[1], m.s), axis=-1)
        return np.prod((1 - m.q) * out + m.q * inn, axis=1)

    return np.log(density(m.means_dprime) / density(m.means_d))


def test_mixture_lr_is_the_ratio_of_the_mixture_densities() -> None:
    m = _model()
    f_d, f_p = sample_model(m, 200, seed=1)
    f = np.vstack([f_d, f_p])
    np.testing.assert_allclose(mixture_lr(m)(f), _by_hand(f, m), rtol=1e-9, atol=1e-9)
    # q = 1: every step holds the record, the plain Gaussian shift's ratio (closed form)
    one = SampledGaussianModel(1.0, m.s, m.steps, m.means_d, m.means_dprime)
    shift = (m.means_dprime[1] - m.means_d[1]) / m.s**2
    mid = (m.means_dprime[1] + m.means_d[1]) / 2
    closed = np.sum((f.reshape(-1, m.steps, m.dim) - mid) @ shift, axis=1)
    np.testing.assert_allclose(mixture_lr(one)(f), closed, rtol=1e-9, atol=1e-9)
    # negative control: D and D' swapped negate it; the one-Gaussian reading of a step differs
    swapped = SampledGaussianModel(m.q, m.s, m.steps, m.means_dprime, m.means_d)
    np.testing.assert_allclose(mixture_lr(swapped)(f), -mixture_lr(m)(f), atol=1e-9)
    assert np.max(np.abs(mixture_lr(one)(f) - mixture_lr(m)(f))) > 1.0
    # far in the tails the log stays finite (log-sum-exp; the pdfs underflow to 0 / 0)
    assert np.all(np.isfinite(mixture_lr(m)(np.full((1, m.steps * m.dim), 50.0))))


def test_model_checks_its_parameters() -> None:
    m = _model()
    with pytest.raises(ValueError, match=r"q must lie in \(0, 1\]"):
        SampledGaussianModel(0.0, 1.0, 3, m.means_d, m.means_dprime)
    with pytest.raises(ValueError, match="s must"):
        SampledGaussianModel(0.5, 0.0, 3, m.means_d, m.means_dprime)
    with pytest.raises(ValueError, match="means_d must be"):
        SampledGaussianModel(0.5, 1.0, 3, (U, U[:2]), m.means_dprime)
    with pytest.raises(ValueError, match="features must be"):
        mixture_lr(m)(np.zeros((2, 5)))


def test_model_bound_is_null_calibrated_and_has_power() -> None:
    """A statistic and threshold fixed by the model before the runs: under D = D' the
    Clopper-Pearson bound is above 0 in at most 5 % of audits (here 0 of 200 expected
    ~ 0-2: the union of two one-sided 2.5 % bounds is conservative); with D' it is not 0."""
    m = _model(s=0.05)
    test = model_test(simulated_scores(m, 20_000), 400, 0.05, 0.95)
    f_d, _ = sample_model(m, 400 * 400, seed=1)  # 400 audits of 400 runs each, per set
    f_n, f_p = sample_model(m, 400 * 400, seed=2)
    null = [model_bound(f_d[k::400], f_n[k::400], m, 0.05, 0.95, test=test).bound.lower
            for k in range(400)]
    assert sum(v > 0 for v in null) <= 30  # at most 5 %: P(Bin(400, 0.05) > 30) = 0.03
    power = [model_bound(f_d[k::400], f_p[k::400], m, 0.05, 0.95, test=test).bound.lower
             for k in range(5)]
    assert min(power) > 1.0


def test_the_batched_model_is_the_pair_by_hand() -> None:
    """Oracle: the replace-one batched pair by hand (clip to C, B - 1 offsets b beside the
    canary, noise sigma / B on the mean); the ledger's sigma and the setting's q = B / n."""
    from dpbounds.audit.registry import AUDITS
    from dpbounds.audit.runner import _probe
    from dpbounds.audit.settings.sgd import BATCHED_B, BATCHED_N, CLIP, RECORD_NORM
    from dpbounds.privacy import Neighbouring

    spec = AUDITS["dp_sgd_batched"]
    setting = spec.build(Neighbouring.REPLACE_ONE, 3.0, 0.05)
    res = _probe(spec, setting, None)[4]
    m = setting.model(setting, res)
    c, b = CLIP * U, CLIP * U / (BATCHED_N - 1)  # c / r clipped to C; b never clipped
    B = BATCHED_B
    assert m.q == BATCHED_B / BATCHED_N and RECORD_NORM > CLIP
    np.testing.assert_allclose(m.means_d[1], (c + (B - 1) * b) / B, rtol=1e-12)
    np.testing.assert_allclose(m.means_dprime[1], (-c + (B - 1) * b) / B, rtol=1e-12)
    np.testing.assert_allclose(m.means_d[0], b, rtol=1e-12)
    assert m.s == pytest.approx(res.params["noise_std_sum"] / B, rel=1e-12)
    # the grid option's discrete Gaussian is not modelled
    grid = setting.__class__(**{**setting.__dict__, "kwargs": {**setting.kwargs,
                                                              "noise": "grid"}})
    assert grid.model(grid, res) is None
