"""The integer noise of a grid run (``noise="grid"``: the Laplace momentum methods' exact
discrete Laplace), recorded in its transcript and tested against the discrete Laplace's
exact law (issue 34: "no drawn-noise record for grid noise").

Oracles: the cdf of S = sum_j |Z_j| against the pmf P[|Z| = 0] = (1-q)/(1+q),
P[|Z| = k] = 2 q^k (1-q)/(1+q) convolved d times by brute force, and against the closed form
P[|Z| <= s] = 1 - 2 q^(s+1)/(1+q) at grid-sized scales; null transcripts drawn here with
NumPy's geometric generator (Z = G1 - G2, G iid geometric, is discrete Laplace), the tests'
size and the scale row's stated power by Monte Carlo with binomial tolerances; the noise a
one-step full-batch grid DP-GD added, solved from its update; the run's own ledger for the
re-accounted epsilon of the grid runs. Negative controls: the sampler patched to draw at
0.7 x the scale (the recorded scale, and so epsilon, right) fails the scale row; the
re-accounting without the rounding's extra unit per coordinate falls below the ledger."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpbounds.algorithms.momentum as momentum_module
from dpbounds.algorithms import dp_gd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.drawn_noise import dlap_l1_cdf, drawn_noise_verdicts
from dpbounds.verify.reaccount import laplace_epsilon, reaccount


def _dlap_draws(rng: np.random.Generator, b: np.ndarray, trials: int, d: int) -> np.ndarray:
    """``sum_j |Z_j|`` per (trial, release) of discrete Laplace draws of scale ``b`` (grid
    units), made here: the difference of two iid geometric variables of success 1 - q."""
    p = -np.expm1(-1.0 / b)[None, :, None]
    shape = (trials, b.size, d)
    z = rng.geometric(p, size=shape) - rng.geometric(p, size=shape)
    return np.abs(z).sum(-1).astype(float)


def _transcript(b: np.ndarray, drawn: np.ndarray, d: int, bits: int = 12) -> dict:
    return dict(noise="laplace", release_std=np.ldexp(b, -bits), noise_drawn=drawn,
                noise_dim=d, grid_bits=bits)


@pytest.mark.parametrize(("b", "d"), [(0.3, 2), (2.5, 1), (2.5, 3), (7.0, 5)])
def test_cdf_against_the_pmf_convolved(b: float, d: int) -> None:
    """Brute force: the pmf of |Z| convolved d times (truncated far in the tail), to 1e-12."""
    q = math.exp(-1.0 / b)
    k = np.arange(int(60 * b * d) + 400)
    pmf = np.where(k == 0, (1 - q) / (1 + q), 2 * q**k * (1 - q) / (1 + q))
    conv = np.array([1.0])
    for _ in range(d):
        conv = np.convolve(conv, pmf)[:k.size]
    s = np.arange(-2, 300)
    want = np.concatenate([[0.0, 0.0], np.cumsum(conv)[:300]])
    np.testing.assert_allclose(dlap_l1_cdf(s, b, d), want, rtol=0, atol=1e-12)


def test_cdf_at_grid_scales_against_the_closed_form() -> None:
    """d = 1 at the scales grid runs draw (10^5 - 10^8 grid units): 1 - 2 q^(s+1)/(1+q)."""
    for b in (1e5, 2.3e6, 1e8):
        s = np.floor(np.array([0.0, 0.01, 0.7, 1.0, 5.0, 30.0]) * b)
        q = math.exp(-1.0 / b)
        want = 1.0 - 2.0 * np.exp((s + 1) * -1.0 / b) / (1.0 + q)
        np.testing.assert_allclose(dlap_l1_cdf(s, b, 1), want, rtol=1e-9, atol=1e-13)


def test_size_and_stated_power_by_monte_carlo() -> None:
    """Under the declared law (NumPy's draws, scales 300-3000 grid units varying by release)
    each row (scale, law, independence) rejects at its level alpha/3 = 0.1: 200 null
    transcripts, within 4 binomial
    s.e. (0.085). The scale row's stated power against the scale off by 10% is the Monte
    Carlo rejection rate at 0.9 x and 1.1 x (the smaller of the two), within 4 s.e."""
    rng = np.random.default_rng(21)
    b = np.linspace(300.0, 3000.0, 20)
    reps = 200
    rejected = np.zeros(3)
    for _ in range(reps):
        rows = drawn_noise_verdicts(_transcript(b, _dlap_draws(rng, b, 3, 3), 3), alpha=0.3)
        rejected += [not v.holds for v in rows]
    tol = 4.0 * math.sqrt(0.1 * 0.9 / reps)
    assert np.all(np.abs(rejected / reps - 0.1) <= tol), rejected / reps
    stated = drawn_noise_verdicts(_transcript(b, _dlap_draws(rng, b, 3, 3), 3), alpha=0.3)
    power = stated[0].power
    assert power is not None and 0.2 < power < 0.9
    rates = []
    for factor in (0.9, 1.1):
        hits = sum(not drawn_noise_verdicts(_transcript(b, _dlap_draws(rng, factor * b, 3, 3),
                                                        3), alpha=0.3)[0].holds
                   for _ in range(reps // 2))
        rates.append(hits / (reps // 2))
    assert abs(min(rates) - power) <= 4.0 * math.sqrt(power * (1 - power) / (reps // 2)), (
        rates, power)


def test_grid_draws_recorded_are_the_noise_added() -> None:
    """Oracle: a one-step full-batch grid DP-GD releases 2^-j (round(2^j g) + Z) for the
    data gradient g (the regulariser's r added after the release), so
    Z = 2^j ((x0 - x1)/alpha - r) - round(2^j g) (integers, solved here); the recorded
    statistic is sum |Z| exactly, and the run is bit-identical with and without the
    recording."""
    A, y = kuru_synthetic(n=200, d=4, seed=1)
    f = LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)
    x0, alpha = np.full(4, 0.2), 0.5
    kw = dict(epsilon=1.0, steps=1, step_size=alpha, trials=3, seed=4, x0=x0, noise="grid")
    tr = Transcript()
    x1 = np.asarray(dp_gd(f, transcript=tr, **kw).x)
    assert np.array_equal(x1, np.asarray(dp_gd(f, **kw).x))
    d = tr.as_dict()
    j = d["grid_bits"]
    xs = np.tile(x0, (3, 1))
    g = np.asarray(f._data_grad(xs, None))  # the objective's own data gradient
    r = np.asarray(f.regularizer_grad(xs))
    z = np.ldexp((x0[None, :] - x1) / alpha - r, j) - np.rint(np.ldexp(g, j))
    assert np.max(np.abs(z - np.rint(z))) < 1e-3
    assert d["noise_dim"] == 4 and d["noise_drawn"].shape == (3, 1)
    np.testing.assert_array_equal(d["noise_drawn"][:, 0], np.abs(np.rint(z)).sum(-1))


def _wrong_scale(original):
    def sampler(scale, size, pool):
        return original(Fraction(scale) * Fraction(7, 10), size, pool)
    return sampler


def test_grid_runs_pass_and_a_wrong_scale_draw_fails(objective: LogisticRegression,
                                                     laplace_run, monkeypatch) -> None:
    """Correct grid runs (unseen seeds 7, 8) hold both drawn-noise rows, and their
    re-accounted epsilon equals the run's ledger (dpbounds.privacy, the grid mechanisms) to
    1e-9; without the rounding's extra unit per coordinate (grid_bits dropped) it is below
    the ledger (the term is counted). Negative control: the discrete Laplace sampler drawing
    at 0.7 x the scale keeps the recorded scale, so epsilon still meets the claim, and the
    drawn scale row fails (mean S/E[S] ~ 0.7)."""
    alg, kw = laplace_run
    for seed in (7, 8):
        tr = Transcript()
        r = alg(objective, epsilon=1.0, steps=40, trials=2, seed=seed, transcript=tr,
                noise="grid", **kw)
        d = tr.as_dict()
        assert d["noise_drawn"].shape == (2, 40) and d["grid_bits"] > 0
        ra = reaccount(d, epsilon=1.0, delta=1e-5)
        assert ra.holds and len(ra.drawn) == 3 and all(v.holds for v in ra.drawn)
        assert ra.epsilon == pytest.approx(r.ledger.epsilon, rel=1e-9)
        float_d = {k: v for k, v in d.items() if k != "grid_bits"}
        assert laplace_epsilon(float_d, "replace_one", d["bound"]) < r.ledger.epsilon * (1 - 1e-6)
    monkeypatch.setattr(momentum_module, "discrete_laplace_array",
                        _wrong_scale(momentum_module.discrete_laplace_array))
    tr = Transcript()
    alg(objective, epsilon=1.0, steps=40, trials=2, seed=0, transcript=tr, noise="grid", **kw)
    ra = reaccount(tr.as_dict(), epsilon=1.0, delta=1e-5)
    assert ra.epsilon <= 1.0 + 1e-9
    assert ra.failed and not ra.drawn[0].holds
    assert [v for v in ra.verdicts if v not in ra.drawn and not v.holds] == []


def test_grid_transcript_bad_input() -> None:
    """Bad input: a grid transcript declaring a noise that is neither discrete Laplace nor
    discrete Gaussian is a ValueError naming the noise (the grid Gaussian's draws are tested
    in ``test_drawn_grid_gaussian.py``)."""
    b = np.full(4, 500.0)
    tr = _transcript(b, _dlap_draws(np.random.default_rng(0), b, 2, 2), 2)
    tr["noise"] = "uniform"
    with pytest.raises(ValueError, match="noise"):
        drawn_noise_verdicts(tr)
