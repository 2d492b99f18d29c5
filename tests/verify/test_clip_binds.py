"""Issue 34 item 4: every clipped or normalised algorithm is checked where its clip binds.

Oracle: the clipped (normalised) mean gradient from the Huber well's definition in NumPy
(``huber_sample_grads``), a hand-computed value for Algorithm 1's probe; negative control: the
``skip_clipping`` mutant (no clip, no normalisation) fails each probe and the study (exit 1)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.verify import scaling_study
from dpbounds.verify.problems import problem
from dpbounds.verify.studies._common import huber_sample_grads
from dpbounds.verify.studies.normalized_and_clipped_sgd import CLIP_BINDING_MIN
from dpbounds.verify.studies.tree_momentum import tree_clip_probe


def _z(check: dict) -> float:
    v = check["values"]
    se = float(v.std(ddof=1) / np.sqrt(v.size))
    return abs(float(v.mean()) - check["exact"]) / max(se, 1e-300)


def test_huber_sample_grads_match_the_objective() -> None:
    """Second method: the objective's own per-sample gradients (not used by the probes)."""
    inst = problem().build(50, 3, seed=1)
    f = inst.objective
    x = np.array([0.4, -0.2, 1.7])  # some samples in the linear zone, some in the quadratic
    mine = huber_sample_grads(f.offsets_np, inst.G, inst.L, x)
    theirs = np.asarray(f.sample_grads(f.initial_state(1, x)))[0]
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


def test_alg1_probe_oracle_by_hand() -> None:
    """The probe's design: gradients +0.75 G e1 on 30% and -0.25 G e1 on 70%; the clip at
    0.3 G binds on exactly 30% and flips the mean from +0.05 G to -0.085 G (by hand)."""
    offsets = np.zeros((200, 2))
    offsets[:60, 0], offsets[60:, 0] = -0.7, 0.3
    g = huber_sample_grads(offsets, 1.0, 1.0, np.array([0.05, 0.0]))
    gn = np.linalg.norm(g, axis=1)
    assert np.mean(gn > 0.3) == pytest.approx(0.3)
    assert g.mean(axis=0)[0] == pytest.approx(0.05)
    clipped = (g * np.minimum(1.0, 0.3 / gn)[:, None]).mean(axis=0)
    assert clipped[0] == pytest.approx(0.3 * 0.3 - 0.7 * 0.25)


@pytest.mark.parametrize("algorithm,d,eps", [
    ("tree_momentum_nsgd", 1, 8.0), ("tree_momentum_nsgd", 4, 0.5),
    ("sensitivity_reduced_nsgd", 1, 8.0), ("sensitivity_reduced_nsgd", 4, 0.5)])
def test_tree_probes_pass_correct_code_and_catch_no_clipping(algorithm: str, d: int,
                                                             eps: float) -> None:
    """Algorithms 1 and 2 (its one probe step lies in the first epoch, noise sigma_1): the
    mean direction of the step matches the Monte Carlo oracle of the clipped mean within 3
    s.e. on an unseen seed; without clipping it takes the raw mean's opposite sign."""
    inst = problem().build(100, d, seed=0)
    point = {"eps": eps, "delta": 1e-5, "d": d, "N": 100}
    ok, params = tree_clip_probe(point, inst, 0.05, 7, None, algorithm)
    assert params["clip_binding_fraction"] >= CLIP_BINDING_MIN
    assert _z(ok) <= 3.0 or abs(ok["values"].mean() - ok["exact"]) <= 1e-9
    bad, _ = tree_clip_probe(point, inst, 0.05, 7, "skip_clipping", algorithm)
    # the unclipped step follows the raw mean: the opposite sign (measured z ~ 1e2 .. 1e17)
    assert bad["values"].mean() > 0 > ok["exact"] and _z(bad) > 20


@pytest.mark.parametrize("theorem,key", [("yang.sgd", "clip"), ("yang.nsgd", "normalise")])
def test_yang_probes_bind_and_catch_no_clipping(theorem: str, key: str) -> None:
    """At the study's own r (DP-NSGD) and C_p = median / 2 (DP-SGD), eps = 0.5: the probe
    holds on correct code and fails without the clip / normalisation (measured, seed 0, eps
    0.5 and 2: correct code within 1.0 s.e.; the mutant's gap is 21 / 38 s.e. (clip) and
    11 / 23 s.e. (normalise); binding fraction 1.0)."""
    kw = dict(vary={"eps": [0.5, 2.0]}, fixed={"T": 300}, trials=3, replicates=50)
    ok = scaling_study(theorem, **kw)
    bad = scaling_study(theorem, mutation="skip_clipping", **kw)

    def probe(res):  # type: ignore[no-untyped-def]
        (v,) = [v for v in res.verdicts if v.case.startswith(f"{key}_exact")]
        return v

    assert probe(ok).holds and not probe(bad).holds and bad.status == "FAIL"
    assert all(p[f"{key}_binding_fraction"] >= CLIP_BINDING_MIN for p in ok.params)


def test_skip_clipping_fails_the_alg1_study_correct_code_passes() -> None:
    kw = dict(vary={"d": [1, 4]}, fixed={"N": 200}, trials=4, replicates=50)
    ok = scaling_study("tran_cutkosky.alg1", **kw)
    bad = scaling_study("tran_cutkosky.alg1", mutation="skip_clipping", **kw)
    probe = [v for v in ok.verdicts if v.case.startswith("clip_exact")]
    assert probe and all(v.holds for v in probe)
    assert not [v for v in bad.verdicts if v.case.startswith("clip_exact")][0].holds
    assert any(v.failed for v in bad.verdicts)


def test_tree_probe_memory_in_the_plan_grows_linearly_in_d() -> None:
    """The plan counts the probe run's states and its per-sample gradients (the closed-form
    oracle holds nothing): linear in d, exactly."""
    import dpbounds.verify.studies.tree_momentum as tm

    assert tm.clip_probe_bytes(1) < tm.clip_probe_bytes(32) < tm.clip_probe_bytes(10**4)
    grow = tm.clip_probe_bytes(2 * 10**6) - tm.clip_probe_bytes(10**6)
    assert grow == pytest.approx(8.0 * 10**6 * (16 * tm._CLIP_TRIALS + 3 * tm._CLIP_N))


def _monte_carlo(sigma: float, mean: np.ndarray, draws: int = 400_000, seed: int = 11
                 ) -> tuple[float, float]:
    """Mean and s.e. of (m + zeta)_1 / |m + zeta| over ``draws`` normal draws: the probe's
    oracle as it was computed until stop 66 (in 100,000-row blocks), with its s.e."""
    rng = np.random.default_rng(seed)
    total = total_sq = 0.0
    for _ in range(draws // 100_000):
        v = mean[None, :] + sigma * rng.standard_normal((100_000, mean.size))
        x = v[:, 0] / np.linalg.norm(v, axis=1)
        total += float(x.sum())
        total_sq += float((x * x).sum())
    mu = total / draws
    return mu, float(np.sqrt(max(total_sq / draws - mu * mu, 0.0) / draws))


_MC_CASES = [(0.7, np.array([0.3, 0.0, 0.0])), (0.7, np.array([-0.085, 0.0])),
             (0.05, np.array([0.05, 0.02, -0.01, 0.0, 0.03])),
             (1.0, np.array([0.4] + [0.0] * 63)), (0.2, np.array([-0.3] + [0.1] * 15)),
             (2.0, np.array([1.5]))]


@pytest.mark.parametrize("sigma,mean", _MC_CASES)
def test_mean_direction_matches_monte_carlo(sigma: float, mean: np.ndarray) -> None:
    """Second method: the closed-form oracle against a 400,000-draw Monte Carlo (the probe's
    oracle until stop 66) within 4 s.e., at means along and off the first axis, d = 1..64."""
    from dpbounds.verify.studies.tree_momentum import mean_direction

    mc, se = _monte_carlo(sigma, mean)
    assert abs(mean_direction(sigma, mean) - mc) <= 4.0 * se + 1e-12, (mc, se)


def test_a_wrong_closed_form_fails_the_monte_carlo_comparison() -> None:
    """Negative control: the same comparison rejects a formula off by one in d (the Gamma
    ratio and the Kummer parameter at d + 1), so it can tell such a mistake."""
    from scipy.special import gammaln, hyp1f1

    sigma, mean = 1.0, np.array([0.4] + [0.0] * 3)
    lam, d = 0.4, 5  # the wrong d
    wrong = (lam / np.sqrt(2.0) * np.exp(gammaln((d + 1) / 2) - gammaln(d / 2 + 1))
             * hyp1f1(0.5, d / 2 + 1, -lam * lam / 2))
    mc, se = _monte_carlo(sigma, mean)
    assert abs(wrong - mc) > 10.0 * se


def test_mean_direction_closed_forms_and_edges() -> None:
    """Oracles: d = 1, where the direction is the sign, erf(lambda / sqrt 2); large
    lambda, 1 - (d - 1) / (2 lambda^2) + O(lambda^-4); no noise, the mean's own direction;
    a zero mean, 0; the sign and the off-axis share m_1 / |m|."""
    from math import erf, sqrt

    from dpbounds.verify.studies.tree_momentum import mean_direction

    for lam in (1e-6, 0.1, 1.0, 2.5, 8.0):
        assert mean_direction(1.0, np.array([lam])) == pytest.approx(erf(lam / sqrt(2)),
                                                                     rel=1e-10, abs=1e-15)
        assert mean_direction(2.0, np.array([-2 * lam])) == pytest.approx(
            -erf(lam / sqrt(2)), rel=1e-10, abs=1e-15)
    for d in (2, 64, 4096):
        lam = 1e3
        m = np.zeros(d)
        m[0] = lam
        assert mean_direction(1.0, m) == pytest.approx(1 - (d - 1) / (2 * lam**2),
                                                       abs=(d / lam**2) ** 2)
    assert mean_direction(0.0, np.array([0.3, 0.4])) == pytest.approx(0.6)
    assert mean_direction(0.5, np.zeros(3)) == 0.0
    m = np.array([0.3, 0.4])
    assert mean_direction(0.7, m) == pytest.approx(0.6 * mean_direction(0.7, np.array([0.5, 0])))


def test_mean_direction_matches_mpmath_over_a_wide_range() -> None:
    """Third method: the Kummer function in mpmath's arbitrary precision (an independent
    implementation of 1F1), d from 1 to 10^6 and lambda from 1e-8 to 3e4."""
    import mpmath

    from dpbounds.verify.studies.tree_momentum import mean_direction

    mpmath.mp.dps = 40
    for d in (1, 2, 7, 64, 1000, 10**6):
        for lam in (1e-8, 1e-3, 0.5, 3.0, 30.0, 3e3, 3e4):
            b = mpmath.mpf(d) / 2 + 1
            ref = float(mpmath.mpf(lam) / mpmath.sqrt(2) * mpmath.exp(
                mpmath.loggamma((mpmath.mpf(d) + 1) / 2) - mpmath.loggamma(b))
                * mpmath.hyp1f1(0.5, b, -mpmath.mpf(lam) ** 2 / 2))
            m = np.zeros(d)
            m[0] = lam
            assert mean_direction(1.0, m) == pytest.approx(ref, rel=1e-8), (d, lam)


@pytest.mark.parametrize("algorithm,eps", [("tree_momentum_nsgd", 0.9),
                                           ("sensitivity_reduced_nsgd", 1.0)])
def test_d1_probe_passes_correct_code_where_every_trial_shares_a_sign(algorithm: str,
                                                                      eps: float) -> None:
    """An independent review's case: at d = 1 all 400 directions may be +1, the sample's
    s.e. 0, and exact = erf(lambda / sqrt 2) short of 1 by up to 1e-6: correct code failed.
    The check now carries the exact per-trial sd of a +-1 variable, sqrt(1 - mean^2)
    (written here from that law), and holds at 3 s.e.; skip_clipping still fails."""
    inst = problem().build(100, 1, seed=0)
    point = {"eps": eps, "delta": 1e-5, "d": 1, "N": 100}
    ok, _ = tree_clip_probe(point, inst, 0.05, 7, None, algorithm)
    sd = np.sqrt(1.0 - ok["exact"] ** 2)
    assert ok["sd"] == pytest.approx(sd, rel=1e-12)
    n = ok["values"].size
    assert abs(ok["values"].mean() - ok["exact"]) <= 3 * sd / np.sqrt(n) + 1e-9
    bad, _ = tree_clip_probe(point, inst, 0.05, 7, "skip_clipping", algorithm)
    assert abs(bad["values"].mean() - bad["exact"]) > 3 * bad["sd"] / np.sqrt(n)


def test_mean_direction_far_out_and_bad_input() -> None:
    """Far out (lambda up to 1e200, where SciPy's 1F1 returned 0 or NaN) the expansion
    1 - (d - 1) / (2 lambda^2); huge entries do not overflow; bad input is a ValueError."""
    from dpbounds.verify.studies.tree_momentum import mean_direction

    for d, lam in ((3, 1e65), (1, 1e160), (5, 1e46), (64, 1e5)):
        m = np.zeros(d)
        m[0] = lam
        assert mean_direction(1.0, m) == pytest.approx(1 - (d - 1) / (2 * lam * lam),
                                                       rel=1e-15)
    assert mean_direction(1.0, np.array([1e300, 1e300])) == pytest.approx(2 ** -0.5)
    for sigma in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="sigma"):
            mean_direction(sigma, np.array([1.0]))
    for bad in (np.array([]), np.array([np.nan, 1.0])):
        with pytest.raises(ValueError, match="mean"):
            mean_direction(1.0, bad)
