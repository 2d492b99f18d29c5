"""The ``drawn_spread`` verdict: trials that share their noise are caught, independent ones pass,
whatever the law of a trial's energy.

Oracles: simulated studies (independent per-trial energies, sums of squares of ``m`` Gaussian
or Laplace draws, drawn here with NumPy) and their failure rate at a raised level against the
nominal one (Monte Carlo with a binomial bound); the plain chi-square law the check used before
stop 67 as the negative control (it fails correct heavy-tailed studies); the shared-noise
mutant of the adversary run (``bench/adversary_results.md``) and scaled near copies, which must
fail; and the study the independent review found failing on correct code
(``strongly_convex.nag --vary N --quick --seed 3 --dimension 1``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpbounds.verify import study as study_mod
from dpbounds.verify.study import _spread_verdict

#: (Var z^2, fourth cumulant of z^2) of one draw of variance 1: Gaussian (2, 48), Laplace (5,
#: 2118) -- recomputed here from the moments E Y^2k = (2k)! of Y = |z| / b ~ Exp(1)
_GAUSS = (2.0, 48.0)
_LAP_MOMENTS = [math.factorial(2 * k) for k in range(5)]  # E (Y^2)^k, k = 0..4
_LAP_VAR = _LAP_MOMENTS[2] - _LAP_MOMENTS[1] ** 2  # 20 for Y^2
_LAP_MU4 = (_LAP_MOMENTS[4] - 4 * _LAP_MOMENTS[1] * _LAP_MOMENTS[3]
            + 6 * _LAP_MOMENTS[1] ** 2 * _LAP_MOMENTS[2] - 3 * _LAP_MOMENTS[1] ** 4)
_LAPLACE = (_LAP_VAR / 4.0, (_LAP_MU4 - 3 * _LAP_VAR**2) / 16.0)  # z^2 = Y^2 / 2


def test_the_laplace_cumulants_are_those_the_studies_declare():
    assert _LAPLACE == (5.0, 2118.0)


def _records(values_per_point: list[np.ndarray], sd: float, k4: float | None) -> list[dict]:
    meta = {"kind": "drawn", "sd": sd} | ({} if k4 is None else {"k4": k4})
    return [{"c:drawn": v, "checks": {"drawn": meta}} for v in values_per_point]


def _energies(rng: np.random.Generator, shape: tuple[int, ...], m: int, laplace: bool,
              scale: float = 1.0) -> np.ndarray:
    """Per-trial energies: sums of ``m`` squares of draws of variance ``scale^2``."""
    size = (*shape, m)
    z = (rng.laplace(scale=1 / math.sqrt(2), size=size) if laplace
         else rng.standard_normal(size))
    return scale**2 * (z * z).sum(axis=-1)


def _law(m: int, laplace: bool, scale: float = 1.0) -> tuple[float, float]:
    var1, k41 = _LAPLACE if laplace else _GAUSS
    return math.sqrt(m * var1) * scale**2, m * k41 * scale**8


def test_independent_gaussian_trials_pass_and_their_spread_reads_one():
    rng = np.random.default_rng(0)
    m, sigma, trials = 400, 0.7, 16
    sd, k4 = _law(m, False, sigma)
    ratios = []
    for _ in range(2000):
        recs = _records(list(_energies(rng, (4, trials), m, False, sigma)), sd, k4)
        v = _spread_verdict("s", "drawn", "d", recs)
        assert v is not None and v.holds and v.powered
        ratios.append(v.measured)
    # the pooled ratio s^2 / sd^2 has mean 1 (two-sided, 5 standard errors of the mean)
    se = math.sqrt(2.0 / (4 * (trials - 1))) / math.sqrt(len(ratios))
    assert abs(np.mean(ratios) - 1.0) < 5 * se


@pytest.mark.parametrize(("m", "laplace", "trials"), [
    (1, True, 50), (4, True, 50), (1, False, 50), (16, False, 50), (1, True, 400),
    (64, True, 16)])
def test_a_correct_study_fails_at_most_at_the_nominal_rate(monkeypatch, m, laplace, trials):
    """At a level raised to 1e-2 (so that a few thousand simulated studies of 3 points
    resolve it), the failure rate of independent trials is at most the level plus 3 binomial
    standard errors, for energies of 1-64 Gaussian or Laplace squares."""
    monkeypatch.setattr(study_mod, "SPREAD_LEVEL", 1e-2)
    rng = np.random.default_rng(100 * m + trials + laplace)
    sd, k4 = _law(m, laplace)
    sims = 3000
    e = _energies(rng, (sims, 3, trials), m, laplace)
    fails = sum(not _spread_verdict("s", "drawn", "N", _records(list(e[k]), sd, k4)).holds
                for k in range(sims))
    assert fails / sims <= 1e-2 + 3 * math.sqrt(1e-2 * 0.99 / sims), fails


def _plain_chi_square_fails(values: list[np.ndarray], sd: float) -> bool:
    """The check before stop 67: chi-square with sum (n - 1) degrees of freedom."""
    stat = sum(v.var(ddof=1) * (v.size - 1) / sd**2 for v in values)
    df = sum(v.size - 1 for v in values)
    return bool(stat < stats.chi2.ppf(1e-6, df))


def test_heavy_tailed_energies_pass_where_the_plain_chi_square_law_failed_them():
    """One Laplace square per trial (the strongly convex studies at d = 1, T = 1), 3 points of
    1500 trials: the plain law fails a large share of correct studies (the negative control:
    the case the review found), the moment-matched one none."""
    rng = np.random.default_rng(7)
    sd, k4 = _law(1, True)
    plain, new = 0, 0
    for _ in range(200):
        vals = list(_energies(rng, (3, 1500), 1, True))
        plain += _plain_chi_square_fails(vals, sd)
        v = _spread_verdict("s", "drawn", "N", _records(vals, sd, k4))
        assert v.powered
        new += not v.holds
    assert plain >= 20 and new == 0, (plain, new)


def test_shared_and_copied_noise_fail():
    rng = np.random.default_rng(1)
    for m, laplace, trials in ((400, False, 16), (1, True, 1500), (8, True, 1500)):
        sd, k4 = _law(m, laplace)
        one = _energies(rng, (1,), m, laplace)
        shared = _records([np.repeat(one, trials) for _ in range(4)], sd, k4)
        v = _spread_verdict("s", "drawn", "d", shared)
        assert v.powered and not v.holds
        # near copies: every trial's noise is trial 0's times (1 + 1e-3 u)
        near = _records([one * (1 + 1e-3 * rng.uniform(size=trials)) for _ in range(4)], sd, k4)
        assert not _spread_verdict("s", "drawn", "d", near).holds


def test_too_few_trials_for_a_heavy_tailed_energy_are_not_powered_and_say_how_many_are():
    rng = np.random.default_rng(3)
    sd, k4 = _law(1, True)
    v = _spread_verdict("s", "drawn", "N", _records(list(_energies(rng, (3, 50), 1, True)),
                                                       sd, k4))
    assert v.holds and not v.powered
    need = int(v.needs.rsplit("--trials ", 1)[1].split()[0])
    assert 50 < need < 10**6
    # at that count the check is powered, and shared noise fails it
    ok = _spread_verdict("s", "drawn", "N",
                         _records(list(_energies(rng, (3, need), 1, True)), sd, k4))
    assert ok.powered and ok.holds
    one = _energies(rng, (1,), 1, True)
    shared = _spread_verdict("s", "drawn", "N", _records([np.repeat(one, need)] * 3, sd, k4))
    assert shared.powered and not shared.holds
    # 1 % below it, not powered (the count is the smallest, to the search's 1 %)
    below = int(need * 0.97)
    low = _spread_verdict("s", "drawn", "N",
                          _records(list(_energies(rng, (3, below), 1, True)), sd, k4))
    assert not low.powered


def test_no_verdict_without_trials_or_a_declared_fourth_cumulant():
    assert _spread_verdict("s", "drawn", "d", _records([np.array([1.0, 2.0])], 1.0, 1.0)) is None
    three = np.array([1.0, 2.0, 4.0])
    assert _spread_verdict("s", "drawn", "d", _records([three], 1.0, None)) is None


def test_the_study_the_review_found_failing_on_correct_code_passes_its_spread_check():
    """`dpbounds verify strongly_convex.nag --vary N --quick --seed 3 --dimension 1` exited 1
    on correct code: its drawn_spread read 0.877 against the plain law's floor 0.903."""
    from dpbounds.verify import scaling_study

    res = scaling_study("strongly_convex.nag", vary={"N": None}, quick=True, seed=3,
                        fixed={"d": 1}, progress=False)
    spread = [v for v in res.verdicts if "_spread" in v.case]
    assert spread, [v.case for v in res.verdicts]
    assert all(v.holds for v in spread), [(v.case, v.measured) for v in spread]
    assert min(v.measured for v in spread) < 0.903  # the value that failed the plain law


# --- the declared law and the floor's exact value (mutants an independent review found
# surviving: a wrong c4, v^2 for v^4, nu halved, a normal floor, the level, the largest n)

@pytest.mark.parametrize("laplace", [False, True])
def test_the_declared_law_matches_simulated_energies(laplace):
    """noise_energy_law's (mean, sd, k4) against the k-statistics of 400,000 simulated
    energies with unequal per-step variances (v = 0.5, 3, 7: a v^2 for v^4 or a wrong c4
    moves k4 by 40% or more); k4's tolerance is 6 standard errors of the mean of kstat(4)
    over 8 batches, plus 2%."""
    from dpbounds.verify.studies._common import noise_energy_law

    rng = np.random.default_rng(11 + laplace)
    v = np.array([0.5, 3.0, 7.0])
    d = 2
    mean, sd, k4 = noise_energy_law(d, v, laplace)
    batches = []
    for _ in range(8):
        scale = np.sqrt(v)[None, :, None]
        z = (rng.laplace(scale=1 / math.sqrt(2), size=(50_000, 3, d)) if laplace
             else rng.standard_normal((50_000, 3, d))) * scale
        batches.append((z * z).sum(axis=(1, 2)))
    e = np.concatenate(batches)
    assert e.mean() == pytest.approx(mean, rel=0.01)
    assert e.std() == pytest.approx(sd, rel=0.02)
    k4s = np.array([stats.kstat(b, 4) for b in batches])
    se = k4s.std(ddof=1) / math.sqrt(len(k4s))
    assert abs(k4s.mean() - k4) < 6 * se + 0.02 * k4, (k4s.mean(), k4, se)
    # a scalar variance stands for `steps` equal ones
    assert noise_energy_law(d, 3.0, laplace, steps=4) == pytest.approx(
        noise_energy_law(d, np.full(4, 3.0), laplace))


def test_the_floor_is_the_scaled_chi_square_quantile_worked_by_hand():
    from dpbounds.verify.study import SPREAD_LEVEL, _spread_floor

    # k4 = 0: the plain chi-square law with sum (n - 1) degrees of freedom
    floor, df = _spread_floor([(10, 2.0, 0.0), (31, 5.0, 0.0)])
    assert df == 39 and floor == pytest.approx(stats.chi2.ppf(SPREAD_LEVEL, 39), rel=1e-12)
    # one Laplace square (sd^2 = 5, k4 = 2118) at n = 100 and n = 400, by hand
    n1, n2, sd, k4 = 100, 400, math.sqrt(5.0), 2118.0
    var = sum((n - 1) ** 2 * (2 / (n - 1) + k4 / (sd**4 * n)) for n in (n1, n2))
    df = n1 + n2 - 2
    nu = 2 * df * df / var
    want = df * stats.chi2.ppf(SPREAD_LEVEL, nu) / nu
    floor, got_df = _spread_floor([(n1, sd, k4), (n2, sd, k4)])
    assert got_df == df and floor == pytest.approx(want, rel=1e-12)
    # far below the plain law's floor (0.80 df at 498 df): 0.05 df
    assert 0 < floor < 0.5 * stats.chi2.ppf(SPREAD_LEVEL, df)


def test_the_trials_asked_for_are_the_smallest_that_power_the_check():
    from dpbounds.verify.study import SPREAD_POWER, _spread_floor

    rng = np.random.default_rng(5)
    sd, k4 = _law(1, True)
    v = _spread_verdict("s", "drawn", "N", _records(list(_energies(rng, (3, 40), 1, True)),
                                                       sd, k4))
    need = int(v.needs.rsplit("--trials ", 1)[1].split()[0])
    powered = [f >= SPREAD_POWER * m for f, m in
               (_spread_floor([(n, sd, k4)] * 3) for n in (need, int(0.99 * need)))]
    assert powered == [True, False]
