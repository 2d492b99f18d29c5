"""A ``noise="grid"`` run's ledger as a dp_accounting event (walkthrough of stop 79: its
``SubsampledDiscreteGaussianMechanism`` had none).

The event is the unsampled zCDP release (``ZCDpEvent``), sound by the joint quasi-convexity
of Rényi divergence. Oracles, none shared with ``dpbounds.privacy.events``:

* the claim itself: the exact Rényi divergences of a Poisson-subsampled scalar discrete
  Gaussian pair, both directions, summed over the integers here, at integer and fractional
  orders, never exceed ``rho * alpha`` with ``rho = s^2 / (2 v)`` written out; at rate 1 they
  equal it at integer orders (two-sided: the event's rho is not an over-statement either);
* the coupling's relation: a sensitivity measured under add/remove on a sample drawn
  without replacement enters doubled (a replaced record moves a sum by 2s), and the exact
  divergence of that replace-one pair exceeds the undoubled rho's bound (negative control);
* dp_accounting's own RDP accountant reads the run's event at or above dpbounds' amplified
  epsilon (the event forgoes amplification; it may not claim less).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpbounds.privacy import mechanisms as M
from dpbounds.privacy.events import dp_accounting_relation, to_dp_event

dpa = pytest.importorskip("dp_accounting")


def _dg_logpmf(v: float, center: int, support: np.ndarray) -> np.ndarray:
    lw = -((support - center) ** 2) / (2 * v)
    return lw - logsumexp(lw)


def _mix(rate: float, log_a: np.ndarray, log_b: np.ndarray) -> np.ndarray:
    """log((1 - rate) e^log_a + rate e^log_b)."""
    if rate == 1.0:
        return log_b
    return np.logaddexp(math.log1p(-rate) + log_a, math.log(rate) + log_b)


def _renyi(log_p: np.ndarray, log_q: np.ndarray, alpha: float) -> float:
    """D_alpha(P || Q) by direct summation over the support (log space: the tails underflow)."""
    return float(logsumexp(alpha * log_p + (1 - alpha) * log_q) / (alpha - 1))


@pytest.mark.parametrize("v,s,rate", [(4.0, 1, 0.1), (9.0, 2, 0.3), (2.5, 3, 0.05),
                                      (16.0, 1, 1.0)])
def test_subsampled_discrete_gaussian_renyi_below_its_unsampled_rho(v, s, rate):
    z = np.arange(-400, 401)
    base, shifted = _dg_logpmf(v, 0, z), _dg_logpmf(v, s, z)
    mix = _mix(rate, base, shifted)
    rho = s**2 / (2 * v)  # Canonne, Kamath & Steinke's, written out
    mech = M.SubsampledDiscreteGaussianMechanism(variance=v, sensitivity=s, sampling_rate=rate,
                                                 sampling="poisson")
    ev = to_dp_event(mech)
    assert isinstance(ev, dpa.ZCDpEvent) and rho <= ev.rho <= rho * (1 + 1e-12)  # rounded up
    for alpha in (1.25, 1.5, 2.0, 3.0, 3.5, 8.0, 32.0):
        for d in (_renyi(mix, base, alpha), _renyi(base, mix, alpha)):
            assert d <= ev.rho * alpha * (1 + 1e-9)
    if rate == 1.0:  # two-sided: the integer orders attain rho * alpha
        for alpha in (2.0, 3.0, 8.0):
            assert _renyi(shifted, base, alpha) == pytest.approx(rho * alpha, rel=1e-9)


def test_without_replacement_pairs_differ_by_a_replacement_under_either_relation():
    v, s, rate = 9.0, 1, 0.2
    mech = M.SubsampledDiscreteGaussianMechanism(
        variance=v, sensitivity=s, sampling_rate=rate, sampling="without_replacement",
        neighbouring="add_remove", per_example_sum=True)
    for nb in ("add_remove", "replace_one"):
        ev = to_dp_event(mech, nb)
        assert ev.rho == pytest.approx((2 * s) ** 2 / (2 * v), rel=1e-12)
    # negative control: the undoubled rho is exceeded by the replace-one pair a sample can
    # hold (the record's value s replaced by -s: the sum moves by 2s), at rate 1
    z = np.arange(-300, 301)
    d = _renyi(_dg_logpmf(v, s, z), _dg_logpmf(v, -s, z), 2.0)
    assert d > 1.5 * (s**2 / (2 * v)) * 2.0
    # Poisson: a pair differs as the relation does (its record keeps its coin)
    pois = M.SubsampledDiscreteGaussianMechanism(variance=v, sensitivity=s, sampling_rate=rate,
                                                 sampling="poisson", per_example_sum=True)
    assert to_dp_event(pois, "add_remove").rho == pytest.approx(s**2 / (2 * v), rel=1e-12)
    assert to_dp_event(pois, "replace_one").rho == pytest.approx((2 * s) ** 2 / (2 * v),
                                                                 rel=1e-12)
    # a generic subsampled zCDP mechanism: Poisson's add/remove rho is 4x under replace-one
    gen = M.SubsampledZcdpMechanism(rho=0.1, sampling_rate=0.1, sampling="poisson")
    assert to_dp_event(gen, "add_remove").rho == pytest.approx(0.1)
    assert to_dp_event(gen, "replace_one").rho == pytest.approx(0.4)
    wor = M.SubsampledZcdpMechanism(rho=0.1, sampling_rate=0.1)
    assert to_dp_event(wor, "replace_one").rho == pytest.approx(0.1)
    with pytest.raises(ValueError, match="PLD accountant has no ZCDpEvent"):
        to_dp_event(wor, accountant="pld")


@pytest.mark.parametrize("sampling", ["without_replacement", "poisson"])
def test_grid_run_ledger_travels_and_dp_accounting_reads_no_less(sampling):
    from dpbounds.algorithms import dp_sgd
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(1)
    a = rng.standard_normal((400, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    y = np.sign(rng.standard_normal(400))
    obj = LogisticRegression(a, y, l2_radius=1.0, l1_radius=math.sqrt(3))
    kw = {"public_n": 400} if sampling == "poisson" else {}
    res = dp_sgd(obj, epsilon=1.0, delta=1e-6, steps=20, batch_size=40, step_size=0.1,
                 clip_threshold=1.0, noise="grid", seed=0, sampling=sampling, **kw)
    ledger = res.privacy.ledger
    (mech, count), = ledger.entries
    ev = to_dp_event(res)
    assert isinstance(ev, dpa.SelfComposedDpEvent) and ev.count == count == 20
    # the base release's rho from its stored integer sensitivity and variance, written out
    s = mech.sensitivity * (2 if sampling == "without_replacement"
                            and mech.neighbouring.value == "add_remove" else 1)
    assert ev.event.rho == pytest.approx(math.ceil(s) ** 2 / (2 * mech.variance), rel=1e-12)
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dp_accounting_relation(
        ledger.neighbouring))
    acc.compose(ev)
    theirs = acc.get_epsilon(1e-6)
    ours = res.privacy.epsilon
    # never below dpbounds' amplified epsilon, and between the optimal RDP conversion of
    # 20 rho-zCDP releases (their RDP curve alpha * 20 rho, on a fine grid of orders here)
    # and Bun & Steinke's looser closed form
    rho_t = 20 * ev.event.rho
    orders = np.linspace(1.01, 400, 40000)
    optimal = float(np.min(orders * rho_t + np.log1p(-1 / orders)
                           - (np.log(1e-6) + np.log(orders)) / (orders - 1)))
    assert theirs >= ours * (1 - 1e-9)
    assert optimal * (1 - 1e-3) <= theirs <= _zcdp_eps(rho_t, 1e-6)


def _zcdp_eps(rho: float, delta: float) -> float:
    """Bun & Steinke's conversion, rho + 2 sqrt(rho log(1/delta)) (looser than the RDP
    accountant's)."""
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_a_full_batch_laplace_run_travels_as_its_laplace_mechanism():
    # walkthrough of stop 80: a full-batch DP heavy ball run's ledger (a "subsampled" Laplace
    # of m = n) was refused; its event is the Laplace mechanism, read by dp_accounting at the
    # pure T Delta / b written out here (two-sided), and a proper subsample is still refused
    from dpbounds.algorithms import dp_heavy_ball
    from dpbounds.objectives import QuadraticObjective

    f = QuadraticObjective.random(d=3, mu=0.5, L=2.0, n=200, seed=0, offset_scale=1.0)
    res = dp_heavy_ball(f, epsilon=1.0, steps=4, step_size=0.1, momentum=0.3, seed=0)
    (mech, count), = res.privacy.ledger.entries
    assert mech.sample_size == mech.dataset_size == 200 and count == 4
    ev = to_dp_event(res)
    assert isinstance(ev, dpa.SelfComposedDpEvent) and ev.count == 4
    assert isinstance(ev.event, dpa.LaplaceDpEvent)
    stated = 4 * mech.sensitivity_under("replace_one") / mech.scale  # T Delta / b
    assert ev.event.noise_multiplier == pytest.approx(4 / stated, rel=1e-12)
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(ev)
    theirs = acc.get_epsilon(1e-9)
    # its RDP reads a pure mechanism a little above its epsilon (the conversion), never below
    assert stated * (1 - 1e-9) <= theirs <= stated * 1.05
    assert res.privacy.epsilon == pytest.approx(stated, rel=1e-6)
    half = M.SubsampledLaplaceMechanism(mech.scale, mech.sensitivity, 100, 200)
    with pytest.raises(ValueError, match="no dp_accounting equivalent"):
        to_dp_event(half)
    # under add/remove an n-of-(n+1) sample is a replacement pair: the add/remove sensitivity
    # would be half of what moves (review of stop 80: E5), so it stays refused
    whole = M.SubsampledLaplaceMechanism(mech.scale, 1.0, 200, 200, per_example_sum=True)
    with pytest.raises(ValueError):
        to_dp_event(whole, "add_remove")


def test_a_without_replacement_export_warns_that_dp_accounting_reads_it_looser():
    # walkthrough of stop 80: dp_accounting read a DP-SGD run's event at 1.6 where dpbounds
    # certified 1.0, and to_dp_event said nothing (the shell's line shows both readings)
    import warnings

    wor = M.SubsampledGaussianMechanism(2.0, 0.025, 1.0, "without_replacement", "replace_one",
                                        per_example_sum=True)
    with pytest.warns(UserWarning, match="looser than dpbounds'"):
        ev = to_dp_event((wor, 200))
    assert isinstance(ev, dpa.SelfComposedDpEvent)
    pois = M.SubsampledGaussianMechanism(2.0, 0.025, 1.0, "poisson", "add_remove",
                                         per_example_sum=True)
    with warnings.catch_warnings():  # control: Poisson reads the same in both libraries
        warnings.simplefilter("error")
        to_dp_event((pois, 200))
