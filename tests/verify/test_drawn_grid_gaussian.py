"""The integer noise of a grid Gaussian run (``noise="grid"``: DP-SGD, DP-NSGD, the Gaussian
DP-GD and the tree methods draw the discrete Gaussian), recorded in its transcript and tested
against the discrete Gaussian's exact law (issue 34: the grid Gaussian's draws were not
recorded).

Oracles, sharing nothing with :mod:`dpbounds.privacy.discrete` or
:mod:`dpbounds.algorithms._grid`: a discrete Gaussian sampler written here (Canonne, Kamath &
Steinke 2020, Algorithm 3: a discrete Laplace proposal of scale ``t = floor(s) + 1``, made as
the difference of two NumPy geometric variables, accepted with probability
``exp(-(|Y| - s^2/t)^2 / (2 s^2))`` by a float coin), whose Monte Carlo moments and cdf the
exact law must match within 5 standard errors; at large ``s`` the direct pmf sums' moments
against the continuous limit (``s^2``, ``2 s^4``) to 1e-12; the Poisson-summation moments and
the Euler-Maclaurin cdf against the direct sums; the tests' size and the scale row's stated
power by Monte Carlo; the integers a one-step full-batch grid DP-GD added, solved from its
update. Negative controls: rounded continuous Gaussian draws do not match the exact moments;
the plain erf (no Euler-Maclaurin term) misses the direct cdf; discrete Laplace draws of the
right variance fail the law row; the runs' sampler patched to draw at 0.85 x s, or replaced
by a continuous Gaussian of 1.15 x s rounded to the grid (the recorded scale, and so epsilon,
unchanged), fail the scale row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import special

import dpbounds.privacy.discrete as discrete_module
from dpbounds.algorithms import dp_gd, dp_sgd, tree_momentum_nsgd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.drawn_noise import dgauss_abs_cdf, dgauss_moments, drawn_noise_verdicts
from dpbounds.verify.reaccount import reaccount


def _dgauss_sample(rng: np.random.Generator, s2: float, size: int) -> np.ndarray:
    """``size`` discrete Gaussian draws of variance parameter ``s2``, made here (CKS20
    Algorithm 3 with float arithmetic: exact up to the float coin)."""
    t = math.floor(math.sqrt(s2)) + 1
    p = -math.expm1(-1.0 / t)
    out: list[np.ndarray] = []
    have = 0
    while have < size:
        n = 2 * (size - have) + 64
        y = rng.geometric(p, n) - rng.geometric(p, n)
        keep = rng.random(n) < np.exp(-(np.abs(y) - s2 / t) ** 2 / (2.0 * s2))
        out.append(y[keep])
        have += int(keep.sum())
    return np.concatenate(out)[:size].astype(float)


def _draws(rng: np.random.Generator, s2: np.ndarray, trials: int, d: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per (trial, release): ``sum_j Z_j^2`` over ``d`` draws and ``|Z_1|``."""
    z = np.stack([_dgauss_sample(rng, float(v), trials * d).reshape(trials, d) for v in s2],
                 axis=1)                                               # (trials, R, d)
    return (z**2).sum(-1), np.abs(z[:, :, 0])


def _transcript(s2: np.ndarray, q: np.ndarray, first: np.ndarray | None, d: int,
                bits: int = 10) -> dict[str, Any]:
    tr: dict[str, Any] = dict(noise="gaussian", release_std=np.ldexp(np.sqrt(s2), -bits),
                              noise_drawn=q, noise_dim=d, grid_bits=bits)
    if first is not None:
        tr["noise_drawn_first"] = first
    return tr


def test_exact_law_against_an_independent_sampler() -> None:
    """s^2 in {0.3, 2, 7.5} (where the discrete law is far from the continuous one): the
    exact E Z^2, E Z^4 and P[|Z| <= 0, 1, 2] within 5 s.e. of 2e5 draws of the sampler
    written here. Negative control: NumPy's normal rounded to the integers (not the discrete
    Gaussian) misses E Z^2 at s^2 = 0.3 by far more than 5 s.e."""
    rng = np.random.default_rng(11)
    n = 200_000
    for s2 in (0.3, 2.0, 7.5):
        z = _dgauss_sample(rng, s2, n)
        m2, v2 = dgauss_moments(s2)
        z2 = z * z
        assert abs(z2.mean() - m2) <= 5.0 * z2.std() / math.sqrt(n), (s2, z2.mean(), m2)
        m4 = v2 + m2**2
        assert abs((z2 * z2).mean() - m4) <= 5.0 * (z2 * z2).std() / math.sqrt(n), s2
        for c in (0, 1, 2):
            p = float(dgauss_abs_cdf(c, s2))
            assert abs(np.mean(np.abs(z) <= c) - p) <= 5.0 * math.sqrt(p * (1 - p) / n), (s2, c)
    rounded = np.rint(rng.normal(0.0, math.sqrt(0.3), n)) ** 2
    assert abs(rounded.mean() - float(dgauss_moments(0.3)[0])) > 5.0 * rounded.std() / math.sqrt(n)


def test_moments_and_cdf_two_ways() -> None:
    """The direct pmf sums at s = 6, 100, 3000 give E Z^2 = s^2 and Var Z^2 = 2 s^4 to 1e-12
    (the continuous limit, reached in double precision); the Poisson-summation moments equal
    the direct ones at s = 0.5 .. 50 to 1e-12; the Euler-Maclaurin cdf of |Z| equals the
    direct partial sums at s = 300 .. 4000 to 1e-12. Negative controls: at s = 0.5 the limit
    is off by > 10 %; the erf alone (no Euler-Maclaurin term) misses by > 1e-8."""
    for s in (6.0, 100.0, 3000.0):
        m2, v2 = dgauss_moments(s * s, method="direct")
        assert abs(m2 / s**2 - 1.0) < 1e-12 and abs(v2 / (2 * s**4) - 1.0) < 1e-12, s
    assert abs(dgauss_moments(0.25, method="direct")[0] / 0.25 - 1.0) > 0.1
    for s in (0.5, 0.8, 1.0, 1.5, 3.0, 50.0):
        direct = np.array(dgauss_moments(s * s, method="direct"))
        poisson = np.array(dgauss_moments(s * s, method="poisson"))
        np.testing.assert_allclose(poisson, direct, rtol=1e-12, atol=0)
    for s in (300.0, 1234.5, 4000.0):
        c = np.floor(np.linspace(0.0, 6.0 * s, 41))
        direct = dgauss_abs_cdf(c, s * s, method="direct")
        np.testing.assert_allclose(dgauss_abs_cdf(c, s * s, method="euler"), direct,
                                   rtol=0, atol=1e-12)
        plain = special.erf((c + 0.5) / (s * math.sqrt(2.0)))
        assert np.max(np.abs(plain - direct)) > 1e-8 / (s / 300.0) ** 2


def test_size_and_stated_power_by_monte_carlo() -> None:
    """Under the declared law (draws of the sampler written here; s from 5e3 to 1e6 grid
    units, four values over 20 releases) each row (scale, law, independence) rejects at
    its level alpha / 3 = 0.1: 200
    null transcripts, within 4 binomial s.e. The scale row's stated power against s^2 off by
    10 % is the Monte Carlo rejection rate at 0.9 s^2 and 1.1 s^2 (the smaller), within 4
    s.e."""
    rng = np.random.default_rng(5)
    s2 = np.repeat(np.array([5e3, 4e4, 2.5e5, 1e6]) ** 2, 5)
    trials, d, reps = 20, 3, 200
    rejected = np.zeros(3)
    for _ in range(reps):
        rows = drawn_noise_verdicts(_transcript(s2, *_draws(rng, s2, trials, d), d), alpha=0.3)
        rejected += [not v.holds for v in rows]
    tol = 4.0 * math.sqrt(0.1 * 0.9 / reps)
    assert np.all(np.abs(rejected / reps - 0.1) <= tol), rejected / reps
    power = drawn_noise_verdicts(_transcript(s2, *_draws(rng, s2, trials, d), d),
                                 alpha=0.3)[0].power
    assert power is not None and 0.2 < power < 0.9
    rates = []
    for factor in (0.9, 1.1):
        hits = 0
        for _ in range(reps // 2):
            q, first = _draws(rng, factor * s2, trials, d)
            hits += not drawn_noise_verdicts(_transcript(s2, q, first, d), alpha=0.3)[0].holds
        rates.append(hits / (reps // 2))
    assert abs(min(rates) - power) <= 4.0 * math.sqrt(power * (1 - power) / (reps // 2)), (
        rates, power)


def test_law_row_catches_laplace_draws_of_the_right_variance() -> None:
    """Discrete Laplace first-coordinate draws of the declared variance (b = s / sqrt 2; the
    sum of squares drawn correctly) pass the scale row and fail the law row (2000 draws in
    10 cells); the same transcript with correct first draws passes both. Without
    ``noise_drawn_first`` only the scale row is reported; a first record of the wrong shape
    is a ValueError naming it."""
    rng = np.random.default_rng(3)
    s2 = np.full(20, 3e4**2)
    q, first = _draws(rng, s2, 100, 2)
    assert all(v.holds for v in drawn_noise_verdicts(_transcript(s2, q, first, 2)))
    p = -np.expm1(-math.sqrt(2.0) / np.sqrt(s2))        # Laplace scale b = s / sqrt(2)
    lap = np.abs(rng.geometric(p, (100, 20)) - rng.geometric(p, (100, 20))).astype(float)
    scale_row, law_row, _independence = drawn_noise_verdicts(_transcript(s2, q, lap, 2))
    assert scale_row.holds and not law_row.holds
    assert len(drawn_noise_verdicts(_transcript(s2, q, None, 2))) == 1
    with pytest.raises(ValueError, match="noise_drawn_first"):
        drawn_noise_verdicts(_transcript(s2, q, first[:, :3], 2))


@pytest.fixture(scope="module")
def objective() -> LogisticRegression:
    """Kuru's synthetic logistic regression, n = 400, d = 5, in an L1 ball of radius 5."""
    A, y = kuru_synthetic(n=400, d=5, seed=0)
    return LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)


def _sgd(objective: LogisticRegression, seed: int) -> dict[str, Any]:
    tr = Transcript()
    dp_sgd(objective, epsilon=1.0, delta=1e-5, steps=60, batch_size=40, step_size=0.1,
           clip_threshold=1.0, trials=4, seed=seed, noise="grid", trace=None, transcript=tr)
    return tr.as_dict()


def _tree(objective: LogisticRegression, seed: int) -> dict[str, Any]:
    tr = Transcript()
    tree_momentum_nsgd(objective, epsilon=2.0, delta=1e-5, epochs=3, step_size=0.1,
                       batch_size=20, clip_threshold=1.0, trials=3, seed=seed, noise="grid",
                       trace=None, transcript=tr)
    return tr.as_dict()


def test_recorded_draws_are_the_noise_added(objective: LogisticRegression) -> None:
    """Oracle: a one-step full-batch grid Gaussian DP-GD releases 2^-j (round(2^j g) + Z) for
    the data gradient g (the regulariser's gradient r added after the release), so
    Z = 2^j ((x0 - x1) / alpha - r) - round(2^j g) (integers, solved here); the record is
    sum Z^2 and |Z_1| exactly, and the run is bit-identical with and without it."""
    x0, alpha = np.full(5, 0.2), 0.5
    kw = dict(epsilon=1.0, delta=1e-5, mechanism="gaussian", steps=1, step_size=alpha,
              trials=3, seed=4, x0=x0, noise="grid", trace=None)
    tr = Transcript()
    x1 = np.asarray(dp_gd(objective, transcript=tr, **kw).x)
    assert np.array_equal(x1, np.asarray(dp_gd(objective, **kw).x))
    d = tr.as_dict()
    j = d["grid_bits"]
    xs = np.tile(x0, (3, 1))
    g = np.asarray(objective._data_grad(xs, None))  # the objective's own data gradient
    r = np.asarray(objective.regularizer_grad(xs))
    z = np.ldexp((x0[None, :] - x1) / alpha - r, j) - np.rint(np.ldexp(g, j))
    assert np.max(np.abs(z - np.rint(z))) < 1e-3
    z = np.rint(z)
    assert d["noise_dim"] == 5 and d["noise_drawn"].shape == (3, 1)
    np.testing.assert_array_equal(d["noise_drawn"][:, 0], (z * z).sum(-1))
    np.testing.assert_array_equal(d["noise_drawn_first"][:, 0], np.abs(z[:, 0]))


def test_grid_runs_pass(objective: LogisticRegression) -> None:
    """Correct grid runs of DP-SGD and Tran & Cutkosky's Algorithm 1 (unseen seeds) hold
    both drawn-noise rows, on their own and inside the re-accounting."""
    for run, seed in ((_sgd, 7), (_tree, 8)):
        d = run(objective, seed)
        assert d["grid_bits"] > 0 and np.all(np.isfinite(d["noise_drawn"]))
        rows = drawn_noise_verdicts(d)
        trials, releases = np.shape(d["noise_drawn"])
        expected = 3 if trials * (releases - 1) >= 30 else 2  # with the independence row
        assert len(rows) == expected and all(v.holds for v in rows), rows
        ra = reaccount(d, epsilon=1.0 if run is _sgd else 2.0, delta=1e-5)
        assert len(ra.drawn) == expected and all(v.holds for v in ra.drawn)


def _patched(monkeypatch: pytest.MonkeyPatch, sampler: Any) -> None:
    monkeypatch.setattr(discrete_module, "discrete_gaussian_array", sampler)


def test_wrong_draws_fail(objective: LogisticRegression, monkeypatch: pytest.MonkeyPatch
                          ) -> None:
    """Negative controls (the recorded scale unchanged): the discrete Gaussian drawn at
    0.85 x s (its parameter m scaled by 0.85^2) fails the scale row of a DP-SGD run; draws
    replaced by a continuous Gaussian of 1.15 x s rounded to the integers fail it on DP-SGD
    and on the tree method."""
    good = _sgd(objective, 0)
    original = discrete_module.discrete_gaussian_array

    def small(t: int, m: int, size: int, pool: Any) -> np.ndarray:
        return original(t, max(1, round(m * 0.85**2)), size, pool)

    _patched(monkeypatch, small)
    bad = _sgd(objective, 0)
    np.testing.assert_array_equal(bad["release_std"], good["release_std"])
    assert not drawn_noise_verdicts(bad)[0].holds

    def rounded(t: int, m: int, size: int, pool: Any) -> np.ndarray:
        rng = np.random.default_rng(len(pool.gens) * size)
        return np.rint(rng.normal(0.0, 1.15 * math.sqrt(t * m),
                                  (len(pool.gens), size))).astype(np.int64)

    _patched(monkeypatch, rounded)
    for run in (_sgd, _tree):
        assert not drawn_noise_verdicts(run(objective, 1))[0].holds, run
