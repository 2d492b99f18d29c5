"""Issue 35: the without-replacement (replace-one) RDP at orders above 256, and the noise
calibrated for small eps (q = 0.01, T = 10^4, delta = 1e-5: Yang et al.'s c2 fit).

Until the fix, orders above ``max_exact_order`` (256) got the unsubsampled Gaussian RDP
alpha/(2 z^2); below eps ~ 0.02 the optimal order crosses 256, the amplification dropped
and the calibrated noise multiplier jumped ~50x (eps 0.0170: z 17,230; eps 0.0203: 790
and also too large, its optimum pinned at order 256; now 346 and 294).

Oracles (no dpbounds helper used):

* Wang, Balle & Kasiviswanathan (2019), Theorem 27, summed here in exact arithmetic
  (mpmath, the forward differences as binomial sums) at one large order;
* ``dp_accounting``'s Poisson-subsampled Gaussian RDP (add/remove) at the same noise
  multiplier, as an independent accountant of the same composition's scale: sampling
  without replacement under replace-one has the amplified profile q*delta_base of Poisson's
  remove direction (Balle, Barthe & Gaboardi 2018, Thm 10; RECONSTRUCTED). Theorem 27's
  second-order term is 4x Poisson's, so Theorem 27 alone calibrated ~2x Poisson's noise
  multiplier (measured 2.0119-2.0387 at eps = 0.01, 0.0142, 0.0170, 0.0203, 0.0289, 0.05;
  before the large-order fix 100x at 0.0170); the integer-moment terms (issue 35) have
  Poisson's leading term: measured ratio (ours / dp_accounting Poisson RDP, calibrated to
  rtol 2e-3 with the orders below) 1.0305, 1.0560, 1.0327, 1.0379, 1.0376, 1.0416 at the same
  eps. The tests' own without-replacement oracle (``wor_moment_oracle``) re-accounts the
  calibrated noise to the target. Against ``dp_accounting``'s Poisson
  PLD (pessimistic, value_discretization_interval 1e-6, add/remove; calibrated to rtol 1e-3;
  ~0.2% discretization noise): 2.302, 2.268, 2.262, 2.255, 2.253 at eps = 0.0142, 0.0170,
  0.0203, 0.0289, 0.05 for Theorem 27 alone (before the fix: 113x at 0.0170). RDP is the
  oracle here: the PLD
  costs ~0.3 CPU-s per evaluation at that interval (0.1 at 1e-4, where it reads eps 0.0120
  instead of 0.0067 for our noise at 0.0170: too coarse for 10^4 compositions).
  ``dp_accounting``'s own without-replacement RDP is no oracle here: above order 256 it drops
  the forward differences for every term (its Stirling branch), so its optimum stays at 256
  (it reads 0.0238 for our noise at eps 0.0170).
"""

from __future__ import annotations

import math

import dp_accounting
import mpmath as mp
import numpy as np
import pytest
from dp_accounting import rdp as dp_rdp

import dpbounds.privacy.rdp as rdp_module
from dpbounds.privacy.calibrate import noise_multiplier_for_epsilon

Q, STEPS, DELTA = 0.01, 10_000, 1e-5
#: the eps values of notebook 02's axis around the old jump, and one below
EPS = (0.0142, 0.0170, 0.0203, 0.0289)
#: ours / dp_accounting Poisson's noise multiplier measured 1.03-1.06 (module docstring)
MAX_RATIO = 1.1
DP_ORDERS = [*np.arange(2, 65, dtype=float), 80.0, 96.0, 128.0, 160.0, 192.0, 256.0, 320.0,
             384.0, 512.0, 640.0, 768.0, 1024.0, 1536.0, 2048.0, 3072.0, 4096.0]


def _poisson_eps(z: float) -> float:
    acc = dp_rdp.RdpAccountant(DP_ORDERS)
    event = dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(z))
    acc.compose(dp_accounting.SelfComposedDpEvent(event, STEPS))
    return float(acc.get_epsilon(DELTA))


def _sandwich_failures(eps_values: tuple[float, ...]) -> list[str]:
    """Calibrate at each eps; the multiplier must re-account to eps under dp_accounting's
    Poisson RDP and be at most MAX_RATIO times the multiplier that reaches eps there."""
    out = []
    for eps in eps_values:
        z = noise_multiplier_for_epsilon(eps, DELTA, Q, STEPS, sampling="without_replacement")
        if _poisson_eps(z) > eps:
            out.append(f"eps {eps}: z {z} re-accounts above target")
        if _poisson_eps(z / MAX_RATIO) <= eps:  # eps(z) decreases: z_oracle < z / MAX_RATIO
            out.append(f"eps {eps}: z {z} over {MAX_RATIO}x the oracle's")
    return out


def test_small_eps_calibration_is_within_the_independent_accountants_band() -> None:
    assert _sandwich_failures(EPS) == []


def test_old_cap_fails_the_band(monkeypatch: pytest.MonkeyPatch) -> None:
    # negative control: orders above 256 get the unamplified alpha/(2 z^2) again (the old
    # code); at eps 0.0170 the calibration lands at ~17,000, ~100x the oracle's
    original = rdp_module._wor_log_a_integers

    def old_cap(q: float, z: float, alphas: np.ndarray, generic: bool = False,
                levels: int | None = None, own_terms: np.ndarray | None = None,
                table: np.ndarray | None = None) -> np.ndarray:
        if alphas.max() <= 256:
            return original(q, z, alphas, generic, levels, own_terms, table)
        return (alphas - 1.0) * alphas / (2.0 * z * z)

    monkeypatch.setattr(rdp_module, "_wor_log_a_integers", old_cap)
    failures = _sandwich_failures((0.0170,))
    assert len(failures) == 1 and "oracle" in failures[0]


def _theorem27_log_a(q: float, z: float, alpha: int, top: int) -> float:
    """log of WBK19 Thm 27's bound on A_alpha, terms j <= top only (a lower bound of the full
    sum: every term is positive), exact: Delta^l h(0) = sum_i (-1)^(l-i) C(l, i) h(i) with
    h(x) = exp((x - 1) x / (2 z^2)), the Gaussian's e^{(x-1) eps(x)}."""
    with mp.workprec(6000):
        zz = mp.mpf(z) ** 2
        h = [mp.exp(mp.mpf((i - 1) * i) / (2 * zz)) for i in range(top + 2)]
        fd = [mp.fsum((-1) ** (lev - i) * mp.binomial(lev, i) * h[i] for i in range(lev + 1))
              for lev in range(top + 2)]
        eps2 = 1 / zz  # eps(2) = 2 / (2 z^2)
        total = 1 + q**2 * mp.binomial(alpha, 2) * min(4 * mp.expm1(eps2), 2 * mp.exp(eps2))
        for j in range(3, top + 1):
            lo, hi = 2 * (j // 2), 2 * ((j + 1) // 2)
            term = min(4 * mp.sqrt(fd[lo] * fd[hi]),
                       2 * mp.exp(mp.mpf((j - 1) * j) / (2 * zz)))
            total += mp.mpf(q) ** j * mp.binomial(alpha, j) * term
        return float(mp.log(total))


@pytest.mark.parametrize("z, alpha", [(345.84, 512), (30.0, 768)])
def test_large_order_rdp_is_theorem_27(z: float, alpha: int, theorem27_only: None) -> None:
    # Theorem 27 alone (the integer-moment terms switched off)
    ours = float(rdp_module.without_replacement_gaussian_rdp(Q, z, [float(alpha)])[0])
    exact = _theorem27_log_a(Q, z, alpha, top=60) / (alpha - 1)
    # ours keeps every term (a truncated sum is below it) and the tail past j = 60 is nil
    assert exact * (1 - 1e-12) <= ours <= exact * (1 + 1e-9)
    # control: the old cap (no amplification) is far above the theorem
    assert alpha / (2 * z * z) > exact * 1.5
    assert math.isfinite(ours)


@pytest.mark.parametrize("z, alpha", [(345.84, 512), (30.0, 768)])
def test_large_order_rdp_with_the_moment_terms(z: float, alpha: int) -> None:
    # with the integer-moment terms: the tests' own oracle to its rounding, below Theorem 27
    from tests.privacy.wor_moment_oracle import wor_rdp

    ours = float(rdp_module.without_replacement_gaussian_rdp(Q, z, [float(alpha)])[0])
    oracle = float(wor_rdp(Q, z, np.array([float(alpha)]))[0])
    assert oracle * (1 - 1e-12) <= ours <= oracle * (1 + 1e-9)
    assert ours < 0.5 * _theorem27_log_a(Q, z, alpha, top=60) / (alpha - 1)


def test_calibration_reaccounts_to_the_target_under_the_oracle() -> None:
    # the calibrated noise at eps 0.0170, re-accounted by the tests' own oracle (dp_accounting's
    # conversion): at most the target, and 1% less noise is above it (two-sided)
    from tests.privacy.wor_moment_oracle import wor_rdp

    z = noise_multiplier_for_epsilon(0.0170, DELTA, Q, STEPS, sampling="without_replacement")
    orders = np.array(DP_ORDERS)

    def eps(noise: float) -> float:
        return float(dp_rdp.rdp_privacy_accountant.compute_epsilon(
            orders, STEPS * wor_rdp(Q, noise, orders), DELTA)[0])

    assert eps(z) <= 0.0170 * (1 + 1e-9)
    assert eps(0.99 * z) > 0.0170


def test_orders_past_a_million_are_refused_not_allocated():
    # above order 256 each integer order builds a row of its length (1e6: 0.85 s, 170 MB, the
    # largest accepted; 1e8 would exhaust memory): refused with the parameter named
    wor = rdp_module.without_replacement_gaussian_rdp
    assert 0.0 < float(wor(0.01, 300.0, [1e6])[0]) <= 1e6 / (2 * 300.0 ** 2)  # the cap
    with pytest.raises(ValueError, match="orders must be at most"):
        wor(0.01, 300.0, [1e8])
