"""``noise="grid"``: the noise each algorithm DRAWS is the noise its ledger RECORDS.

The ledger tests of ``test_grid_noise.py`` recompute the ledger from the recorded grid
parameters; they cannot see a sampler that draws something else (a review found mutants
drawing half the variance, swapping Algorithm 2's node groups, halving NoisyMax's discrete
Laplace scale, or measuring DP-AGD's gradient at another charge, all with the ledger
unchanged). Here the integer noise is read back from the releases and tested against the
recorded mechanism.

Oracles (computed here, sharing nothing with :mod:`dpbounds.algorithms._grid` or
:mod:`dpbounds.privacy.discrete`):

* the integer noise of a release ``x`` of a value ``g`` on the grid ``2^-j`` is
  ``2^j x - round(2^j g)`` (the definition of the grid release); ``g`` is known (output
  perturbation: the objective's optimum) or read from the call (a tap on
  ``GridStream.release`` records the value handed in and the value returned);
* the ledger's variance: a discrete Gaussian entry of zCDP cost ``rho`` on integer L2
  sensitivity ``u = 2^j Delta + sqrt(d)`` has ``sigma_u^2 = u^2 / (2 rho)`` (Canonne, Kamath &
  Steinke 2020, the cost ``u^2/(2 sigma^2)`` inverted), and the exact discrete Gaussian
  variance :math:`\\sum z^2 e^{-z^2/(2s)}/\\sum e^{-z^2/(2s)}` summed here (equal to ``s`` to
  double precision for the grid scales used, ``s >> 1``);
* the mean square of ``N`` draws, two-sided: ``N * mean(Z^2) / var`` inside the chi-square(N)
  interval of total level 1e-6 (the discrete Gaussian of ``s >> 1`` has the Gaussian's
  fourth moment);
* NoisyMax of two candidates ``k`` grid units apart with ties to the lower index selects the
  lower one with probability :math:`\\sum_z P(Z=z) P(Z \\ge k + z)`, discrete Laplace pmf
  :math:`\\frac{1-q}{1+q}q^{|z|}`, :math:`q = e^{-1/b}`, :math:`P(Z \\ge a) = q^a/(1+q)`
  (:math:`a \\ge 0`), at the scale ``b = u'/eps`` the ledger's ``eps`` implies; two-sided
  binomial interval (5 standard errors).

Negative controls: each test re-runs its check under the reviewer's mutant (applied here by
monkeypatch) and asserts that the check rejects it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpbounds.backend import to_numpy
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression

LEVEL = 1e-6  # total two-sided level of every variance check
#: the tree methods' runs: 25 trials x T nodes x d = 4 noise draws
TREE_KW = dict(epsilon=1.0, delta=1e-6, step_size=0.1, batch_size=10, clip_threshold=1.0,
               trials=25, trace=None, noise="grid")


def _dgauss_variance(s: float) -> float:
    """Exact variance of the discrete Gaussian of parameter ``s`` (summed over the integers;
    beyond ``s = 1e8`` it equals ``s`` to double precision: Poisson summation, the gap is of
    order ``s e^{-2 pi^2 s}``)."""
    if s > 1e8:
        return s
    half = math.ceil(40 * math.sqrt(s)) + 5
    z = np.arange(-half, half + 1, dtype=float)
    w = np.exp(-z**2 / (2 * s))
    return float((z**2 * w).sum() / w.sum())


def _variance_ok(z: np.ndarray, var: float) -> bool:
    """``N mean(z^2) / var`` inside the two-sided chi-square(N) interval of level LEVEL (the
    mean is known: 0)."""
    z = np.asarray(z, dtype=float).ravel()
    n = z.size
    stat = float(np.sum(z**2)) / var
    lo, hi = stats.chi2.ppf(LEVEL / 2, n), stats.chi2.isf(LEVEL / 2, n)
    return bool(lo <= stat <= hi)


def _ledger_variance(rho: float, sensitivity: float, j: int, d: int) -> float:
    """The discrete Gaussian variance (grid units^2) a zCDP entry of cost ``rho`` on L2
    sensitivity ``sensitivity`` records: ``u^2 / (2 rho)``, ``u = 2^j Delta + sqrt(d)``."""
    u = sensitivity * 2.0**j + math.sqrt(d)
    return u**2 / (2 * rho)


# ---------------------------------------------------------------------------------------
# mutants (the review's, re-written here)
# ---------------------------------------------------------------------------------------
def _half_variance_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """GridStream's sampler draws the discrete Gaussian (t, m // 2): half the variance."""
    from dpbounds.algorithms._grid import GridStream

    orig = GridStream.__init__

    def init(self, stream, bits, params, sampler, d, xp=np):
        def half(p, size, pool):
            return sampler((p[0], max(1, p[1] // 2)), size, pool)
        orig(self, stream, bits, params, half, d, xp)
    monkeypatch.setattr(GridStream, "__init__", init)


def _half_variance_pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    """DP-AGD's pooled discrete Gaussian draws (t, m // 2)."""
    import dpbounds.privacy.discrete as D

    orig = D._dgauss_pooled

    def pooled(t, m, *a, **k):
        return orig(t, max(1, m // 2), *a, **k)
    monkeypatch.setattr(D, "_dgauss_pooled", pooled)


class _Tap:
    """Records the integer noise of every ``GridStream.release``: ``(t, 2^j out -
    round(2^j value))``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from dpbounds.algorithms._grid import GridStream

        self.noise: list[tuple[int, np.ndarray]] = []
        orig = GridStream.release

        def release(stream, t, value):
            v = np.array(to_numpy(value), dtype=np.float64, copy=True)
            out = orig(stream, t, value)
            j = stream.grid_bits
            self.noise.append((t, np.ldexp(np.asarray(to_numpy(out), dtype=np.float64), j)
                               - np.rint(np.ldexp(v, j))))
            return out
        monkeypatch.setattr(GridStream, "release", release)


@pytest.fixture(scope="module")
def small():
    A, y = kuru_synthetic(n=200, d=4, seed=0)
    return LogisticRegression(A, y, l2=0.02, l1_radius=5.0)


def _both(check: Callable[[pytest.MonkeyPatch], bool],
          mutant: Callable[[pytest.MonkeyPatch], None]) -> None:
    """The check passes on the code and fails under the mutant."""
    with pytest.MonkeyPatch.context() as mp:
        assert check(mp), "the drawn noise does not match the ledger"
    with pytest.MonkeyPatch.context() as mp:
        mutant(mp)
        assert not check(mp), "negative control: the mutant was not caught"


# ---------------------------------------------------------------------------------------
# 1. drawn variance against the recorded mechanism
# ---------------------------------------------------------------------------------------
def test_output_perturbation_draws_the_recorded_variance(small) -> None:
    """Output perturbation releases the optimum: its integer noise, read from the releases
    alone, has the variance of the ledger's entry (u^2/(2 rho)) and of ``params["sigma"]``.
    Negative control: the half-variance sampler."""
    from dpbounds.algorithms import output_perturbation

    def check(mp: pytest.MonkeyPatch) -> bool:
        r = output_perturbation(small, epsilon=1.0, delta=1e-6, trials=2000, seed=3,
                                noise="grid", trace=None)
        j = r.params["grid_bits"]
        z = np.ldexp(r.x_numpy(), j) - np.rint(np.ldexp(np.asarray(small.optimum.x), j))
        (entry, count), = r.privacy.ledger.entries
        assert count == 1 and np.array_equal(z, np.round(z))
        var = _dgauss_variance(_ledger_variance(entry.rho, r.params["sensitivity"], j,
                                                small.d))
        rec = _dgauss_variance((r.params["sigma"] * 2.0**j) ** 2)
        return _variance_ok(z, var) and _variance_ok(z, rec)

    _both(check, _half_variance_stream)


def test_tree_momentum_draws_the_recorded_variance(small) -> None:
    """Algorithm 1: every node's integer noise (the tap) against the ledger's per-node entry
    (K entries of u^2/(2 sigma_u^2)) and ``params["sigma"]``. Negative control: the
    half-variance sampler."""
    from dpbounds.algorithms import tree_momentum_nsgd

    def check(mp: pytest.MonkeyPatch) -> bool:
        tap = _Tap(mp)
        r = tree_momentum_nsgd(small, epochs=2, seed=1, **TREE_KW)
        p, j = r.params, r.params["grid_bits"]
        z = np.stack([n for _, n in tap.noise])
        assert z.shape[0] == p["steps"]
        (entry, count), = r.privacy.ledger.entries
        assert count == p["node_count"]
        var = _dgauss_variance(_ledger_variance(entry.rho, p["node_sensitivity"], j, small.d))
        return (_variance_ok(z, var)
                and _variance_ok(z, _dgauss_variance((p["sigma"] * 2.0**j) ** 2)))

    _both(check, _half_variance_stream)


def test_dp_sgd_without_replacement_draws_the_recorded_variance(small) -> None:
    """DP-SGD (without-replacement subsampling): every step's integer noise against the
    ledger's subsampled entry's base cost rho (u = 2^j C_sum / B + sqrt(d)) and
    ``params["noise_std_mean"]``. Negative control: the half-variance sampler."""
    from dpbounds.algorithms import dp_sgd

    def check(mp: pytest.MonkeyPatch) -> bool:
        tap = _Tap(mp)
        r = dp_sgd(small, epsilon=1.0, delta=1e-6, steps=100, batch_size=10, step_size=0.05,
                   clip_threshold=1.0, trials=20, seed=2, trace=None, noise="grid")
        p, j = r.params, r.params["grid_bits"]
        z = np.stack([n for _, n in tap.noise])
        assert z.shape[0] == p["steps"]
        (entry, count), = r.privacy.ledger.entries
        assert count == p["steps"] and entry.sampling_rate == pytest.approx(10 / small.n)
        var = _dgauss_variance(_ledger_variance(entry.rho, p["sensitivity_sum"] / 10, j,
                                                small.d))
        rec = _dgauss_variance((p["noise_std_mean"] * 2.0**j) ** 2)
        return _variance_ok(z, var) and _variance_ok(z, rec)

    _both(check, _half_variance_stream)


def test_dp_gd_laplace_draws_the_recorded_scales() -> None:
    """Pure-DP DP-GD (discrete Laplace): step t's integer noise against the scale the ledger
    records (``params["laplace_scales"]``, value units, times 2^j); the discrete Laplace
    variance 2q/(1-q)^2, q = e^{-1/b}, and a 6-standard-error interval on the mean of
    z^2/var (the Laplace's Var(Z^2) = 5 var^2, its continuous limit: b >> 1 grid units here,
    asserted). Negative control: the sampler's scale halved."""
    from dpbounds.algorithms import dp_gd
    from dpbounds.algorithms._grid import GridStream

    A, y = kuru_synthetic(n=500, d=4, seed=0)
    f = LogisticRegression(A, y, l2=0.02, l1_radius=5.0)

    def check(mp: pytest.MonkeyPatch) -> bool:
        tap = _Tap(mp)
        r = dp_gd(f, epsilon=1.0, steps=40, trials=50, seed=5, noise="grid", trace=None)
        j = r.params["grid_bits"]
        assert len(tap.noise) == 40
        ratios = []
        for t, z in tap.noise:
            b = r.params["laplace_scales"][t] * 2.0**j
            assert b > 100
            q = math.exp(-1.0 / b)
            ratios.append(z**2 / (2 * q / (1 - q) ** 2))
        x = np.concatenate([np.ravel(v) for v in ratios])
        return abs(float(x.mean()) - 1) <= 6 * math.sqrt(5 / x.size)

    def half_scale(mp: pytest.MonkeyPatch) -> None:
        orig = GridStream.__init__

        def init(self, stream, bits, params, sampler, d, xp=np):
            orig(self, stream, bits, params,
                 lambda p, size, pool: sampler(Fraction(p.numerator // 2, p.denominator),
                                                  size, pool), d, xp)
        mp.setattr(GridStream, "__init__", init)

    _both(check, half_scale)


def _agd(trials: int, nmax_epsilon: float = 1.0, min_rho: float = 1e-3):
    from dpbounds.algorithms.dp_agd import _AgdGrid
    from dpbounds.backend import TrialRandom

    return _AgdGrid(TrialRandom(7, trials), 3.0, 3.0, 5, min_rho, nmax_epsilon, np, 50)


@pytest.mark.parametrize("mutant", ["half_variance", "rho_times_4"])
def test_dp_agd_measurement_draws_the_recorded_variance(mutant: str) -> None:
    """DP-AGD's gradient measurement (``_AgdGrid.measure`` of a zero gradient at two charges
    in one call): the integer noise of each charge against the std ``sigmas(rho)`` the run
    records and against the ledger's cost ``rho_of(sigma)`` read back as u^2/(2 rho),
    u = 2^j C_grad + sqrt(d). Negative controls: the half-variance pooled sampler, and a
    measurement drawn at 4 rho while sigmas(rho) is recorded."""
    from dpbounds.algorithms.dp_agd import _AgdGrid

    trials, d, reps = 400, 5, 6
    rho = np.where(np.arange(trials) % 2 == 0, 1e-3, 2.5e-2)

    def check(mp: pytest.MonkeyPatch) -> bool:
        g = _agd(trials)
        where = np.ones(trials, dtype=bool)
        zs = np.stack([np.ldexp(to_numpy(g.measure(np.zeros((trials, d)), rho, where)), g.bits)
                       for _ in range(reps)])  # (reps, trials, d)
        sig = g.sigmas(rho)
        ok = True
        for r0 in np.unique(rho):
            sel = rho == r0
            s = float(sig[sel][0])
            var = _dgauss_variance(_ledger_variance(g.rho_of(s), 3.0, g.bits, d))
            assert g.rho_of(s) <= r0  # never costs more than charged
            ok &= _variance_ok(zs[:, sel], var)
            ok &= _variance_ok(zs[:, sel], _dgauss_variance((s * 2.0**g.bits) ** 2))
        return bool(ok)

    def rho_times_4(mp: pytest.MonkeyPatch) -> None:
        orig = _AgdGrid.measure
        mp.setattr(_AgdGrid, "measure", lambda self, value, rho, where:
                   orig(self, value, np.asarray(rho, float) * 4, where))

    _both(check, _half_variance_pooled if mutant == "half_variance" else rho_times_4)


@pytest.mark.parametrize("mutant", ["draws_at_4_rho", "records_rho_over_4"])
def test_dp_agd_run_draws_the_sigmas_it_records(mutant: str) -> None:
    """A DP-AGD grid run: every measurement's integer noise (a tap on ``_AgdGrid.measure``:
    value in, release out, per trial in call order) against the std the run records for it
    (``params["gradient_sigmas"][k][i]``, the i-th measurement of trial k, whose ledger cost
    the ledger test checks); sum of z^2/(2^j sigma)^2 in the chi-square(N) interval.
    Negative controls at the call site: the measurement drawn at 4 rho, and the recorded
    sigma that of rho/4 (each: drawn and recorded differ by a factor 2 in std)."""
    from dpbounds.algorithms import dp_agd
    from dpbounds.algorithms.dp_agd import _AgdGrid

    A, y = kuru_synthetic(n=500, d=5, seed=0)
    f = LogisticRegression(A, y, l2=1e-3, l1_radius=5.0)
    trials = 20

    def check(mp: pytest.MonkeyPatch) -> bool:
        drawn: list[list[np.ndarray]] = [[] for _ in range(trials)]
        bits: list[int] = []
        orig = _AgdGrid.measure

        def measure(self, value, rho, where):
            v = np.array(to_numpy(value), dtype=np.float64, copy=True)
            out = orig(self, value, rho, where)
            z = np.ldexp(np.asarray(to_numpy(out), dtype=np.float64), self.bits) - np.rint(
                np.ldexp(v, self.bits))
            for k in np.flatnonzero(where):
                drawn[k].append(z[k])
            bits.append(self.bits)
            return out
        mp.setattr(_AgdGrid, "measure", measure)
        r = dp_agd(f, epsilon=1.0, delta=1e-8, splits=10, trials=trials, seed=0, trace=None,
                   noise="grid")
        x = []
        for k in range(trials):
            sig = r.params["gradient_sigmas"][k]
            assert len(sig) == len(drawn[k]) > 1
            x += [zi / (s * 2.0 ** bits[0]) for zi, s in zip(drawn[k], sig)]
        assert len(set(bits)) == 1
        return _variance_ok(np.concatenate(x), 1.0)

    def draws_at_4_rho(mp: pytest.MonkeyPatch) -> None:
        orig = _AgdGrid.measure
        mp.setattr(_AgdGrid, "measure", lambda self, value, rho, where:
                   orig(self, value, np.asarray(rho, float) * 4, where))

    def records_rho_over_4(mp: pytest.MonkeyPatch) -> None:
        orig = _AgdGrid.sigmas
        mp.setattr(_AgdGrid, "sigmas", lambda self, rho: orig(self, np.asarray(rho) / 4))

    _both(check, draws_at_4_rho if mutant == "draws_at_4_rho" else records_rho_over_4)


# ---------------------------------------------------------------------------------------
# 2. Algorithm 2: each node group draws its own recorded sigma
# ---------------------------------------------------------------------------------------
def _first_group(t: int, steps: int) -> bool:
    """The node formed at step t (1-based) covers [t - 2^nu2(t) + 1, t] (binary counter);
    it is a first-epoch node when that interval starts in the first epoch."""
    width = 1
    while t % (2 * width) == 0:
        width *= 2
    return t - width + 1 <= steps


@pytest.mark.parametrize("mutant", ["swapped", "half_variance"])
def test_sensitivity_reduced_groups_draw_their_recorded_sigmas(small, mutant: str) -> None:
    """Algorithm 2 at epochs=3 (sigma_1 != sigma_2): the integer noise of the first-epoch
    nodes and of the later nodes (membership computed here from the binary counter) against
    each group's ledger entry (u_i^2/(2 rho_i)) and ``params["sigma_i"]``. Negative control:
    the groups swapped in the call to the grid helper (sigma_1 drawn on the later nodes), and
    the half-variance sampler."""
    import dpbounds.algorithms.tree_momentum as tm
    from dpbounds.algorithms import sensitivity_reduced_nsgd

    def check(mp: pytest.MonkeyPatch) -> bool:
        tap = _Tap(mp)
        r = sensitivity_reduced_nsgd(small, epochs=3, seed=4, **TREE_KW)
        p, j = r.params, r.params["grid_bits"]
        assert len(tap.noise) == p["steps"]
        ok = True
        (e1, k1), (e2, k2) = r.privacy.ledger.entries
        assert (k1, k2) == (p["node_count_1"], p["node_count_2"])
        for i, entry, first in ((1, e1, True), (2, e2, False)):
            z = np.stack([n for t, n in tap.noise
                          if _first_group(t + 1, p["steps_per_epoch"]) == first])
            var = _dgauss_variance(_ledger_variance(entry.rho, p[f"node_sensitivity_{i}"], j,
                                                    small.d))
            ok &= _variance_ok(z, var)
            ok &= _variance_ok(z, _dgauss_variance((p[f"sigma_{i}"] * 2.0**j) ** 2))
        # the test has power only if the groups differ (measured: sigma_2/sigma_1 ~ 1.2)
        assert abs(p["sigma_2"] / p["sigma_1"] - 1) > 0.1
        return bool(ok)

    def swapped(mp: pytest.MonkeyPatch) -> None:
        orig = tm.gaussian_tree_grid
        mp.setattr(tm, "gaussian_tree_grid", lambda stream, groups, step_group, *a, **k:
                   orig(stream, groups, [1 - g for g in step_group], *a, **k))

    _both(check, swapped if mutant == "swapped" else _half_variance_stream)


# ---------------------------------------------------------------------------------------
# 3. DP-AGD NoisyMax: the selection law of the recorded scale
# ---------------------------------------------------------------------------------------
def _p_lower_wins(k: int, b: float) -> float:
    """P[Z0 >= k + Z1] (k >= 0) for i.i.d. discrete Laplace of scale b, pmf c q^|z|,
    c = (1-q)/(1+q), q = e^{-1/b}, survival P[Z >= a] = q^a/(1+q) (a >= 0), 1 - q^(1-a)/(1+q)
    (a < 0); the geometric series over z1 >= 0, -k <= z1 < 0 and z1 < -k summed in closed
    form (DERIVED here)."""
    q = math.exp(-1.0 / b)
    c = (1 - q) / (1 + q)
    above = c * q**k / ((1 + q) * (1 - q * q)) + c * k * q**k / (1 + q)
    below = c * (q ** (k + 1) / (1 - q) - q ** (k + 3) / ((1 + q) * (1 - q * q)))
    return above + below


def _p_lower_wins_by_sum(k: int, b: float) -> float:
    """The same probability summed term by term over |z1| <= 40 b + k (a second method)."""
    q = math.exp(-1.0 / b)
    z1 = np.arange(-(math.ceil(40 * b) + k + 5), math.ceil(40 * b) + k + 6, dtype=float)
    a = k + z1
    surv = np.where(a >= 0, q ** np.maximum(a, 0) / (1 + q),
                    1 - q ** (1 - np.minimum(a, 0)) / (1 + q))
    return float(np.sum((1 - q) / (1 + q) * q ** np.abs(z1) * surv))


@pytest.mark.parametrize("k,b", [(0, 1.0), (3, 2.5), (50, 40.0), (7, 0.7)])
def test_noisy_max_oracle_closed_form_is_the_sum(k: int, b: float) -> None:
    """The closed form agrees with the term-by-term sum (and at k = 0, b = 1 with the tie
    probability 1/2 + P[Z0 = Z1]/2 = 1/2 + c^2 (1+q^2)/(1-q^2) / 2)."""
    assert _p_lower_wins(k, b) == pytest.approx(_p_lower_wins_by_sum(k, b), rel=1e-12)
    if k == 0:
        q = math.exp(-1.0 / b)
        c = (1 - q) / (1 + q)
        assert _p_lower_wins(0, b) == pytest.approx(0.5 + c * c * (1 + q * q) / (1 - q * q) / 2,
                                                    rel=1e-12)


def test_dp_agd_noisy_max_selects_with_the_recorded_scale() -> None:
    """Two candidates k grid units apart (k ~ b): the lower-scored one wins (ties to it) with
    the probability of the discrete Laplace scale b = u'/eps_rec, eps_rec the NoisyMax cost
    the ledger records and u' = floor(2^j' C_obj) + 1 computed here; 5-standard-error
    two-sided interval. Negative control: the sampler's scale halved (true cost 2 eps_rec)."""
    from dpbounds.algorithms.dp_agd import _AgdGrid

    trials, reps, eps = 200, 80, 0.5

    def check(mp: pytest.MonkeyPatch) -> bool:
        g = _agd(trials, nmax_epsilon=eps)
        u = math.floor(3.0 * 2.0**g.nmax_bits) + 1
        b = u / g.nmax_epsilon
        assert g.nmax_epsilon <= eps
        k = round(b)
        scores = np.tile([0.0, math.ldexp(k, -g.nmax_bits)], (trials, 1))
        where = np.ones(trials, dtype=bool)
        wins = sum(int(np.sum(g.noisy_max(scores, where) == 0)) for _ in range(reps))
        n = trials * reps
        p = _p_lower_wins(k, b)
        return abs(wins / n - p) <= 5 * math.sqrt(p * (1 - p) / n)

    def half_scale(mp: pytest.MonkeyPatch) -> None:
        orig = _AgdGrid.noisy_max

        def nm(self, scores, where):
            s = self._scale
            self._scale = s / 2
            try:
                return orig(self, scores, where)
            finally:
                self._scale = s
        mp.setattr(_AgdGrid, "noisy_max", nm)

    _both(check, half_scale)


# ---------------------------------------------------------------------------------------
# 4. noisy projected SGD (Kamath Algorithm 3) and objective perturbation (issue 35 item 5)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,mutant", [(50, "half_variance"), (1, "half_variance"),
                                      (50, "half_sensitivity")])
def test_noisy_projected_sgd_draws_the_recorded_variance(n: int, mutant: str) -> None:
    """Every step's integer noise (the tap) against the ledger's per-step entry (base cost
    rho on the L2 sensitivity 2nL of the released ``n * grad``, ``u = 2^j 2nL + sqrt(d)``:
    ``sigma_u^2 = u^2/(2 rho)``) and ``params["sigma"]``; the entry is subsampled at q = 1/n
    (n = 50) or a plain zCDP entry (n = 1: the whole data set each step). Negative controls:
    the half-variance sampler, and the grid mechanism calibrated on the sensitivity nL (one
    example's gradient norm, not the replace-one difference 2nL)."""
    import dpbounds.algorithms.dp_erm as erm
    from dpbounds.algorithms import noisy_projected_sgd

    def half_sensitivity(mp: pytest.MonkeyPatch) -> None:
        orig = erm.gaussian_grid
        mp.setattr(erm, "gaussian_grid", lambda stream, sens, *a, **k:
                   orig(stream, sens / 2, *a, **k))

    A, y = kuru_synthetic(n=n, d=4, seed=0)
    f = LogisticRegression(A, y, l2=0.02, l1_radius=5.0)

    def check(mp: pytest.MonkeyPatch) -> bool:
        tap = _Tap(mp)
        r = noisy_projected_sgd(f, epsilon=1.0, delta=1e-5, radius=2.0, steps=60,
                                calibration="rdp", trials=20, seed=6, trace=None,
                                noise="grid")
        p, j = r.params, r.params["grid_bits"]
        z = np.stack([v for _, v in tap.noise])
        assert z.shape[0] == 60 and [t for t, _ in tap.noise] == list(range(60))
        (entry, count), = r.privacy.ledger.entries
        assert count == 60 and r.ledger.epsilon <= 1.0
        assert (getattr(entry, "sampling_rate", None) == pytest.approx(1 / n) if n > 1
                else type(entry).__name__ == "ZcdpMechanism")
        var = _dgauss_variance(_ledger_variance(entry.rho, 2 * n * p["lipschitz"], j, f.d))
        return (_variance_ok(z, var)
                and _variance_ok(z, _dgauss_variance((p["sigma"] * 2.0**j) ** 2)))

    _both(check, _half_variance_stream if mutant == "half_variance" else half_sensitivity)
