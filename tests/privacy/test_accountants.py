"""Accountants against independent oracles.

* RdpAccountant vs dp_accounting.RdpAccountant (Gaussian, Poisson / without-replacement
  subsampled Gaussian, Laplace, zCDP, single-epoch tree aggregation), same orders;
* ZcdpAccountant vs Lee & Kifer's closed forms and dp_accounting's ZCDpEvent;
* PldAccountant vs prv_accountant's certified bracket (Poisson-subsampled Gaussian) and the
  exact analytic Gaussian (full batch), plus dp_accounting's own PLDAccountant;
* PureDpAccountant vs the closed forms of Kuru et al.
The largest relative differences measured are printed with ``pytest -s``.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from dpbounds.privacy import accountants as A
from dpbounds.privacy import mechanisms as M
from dpbounds.privacy.gaussian import gaussian_delta, gaussian_epsilon
from dpbounds.privacy.laplace import amplify_without_replacement
from dpbounds.privacy.rdp import rdp_to_dp_epsilon

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)
INT_ORDERS = np.concatenate([np.arange(2, 65.0), [80.0, 96.0, 128.0, 256.0, 512.0]])
AR, RO = dpa.NeighboringRelation.ADD_OR_REMOVE_ONE, dpa.NeighboringRelation.REPLACE_ONE


def _ref_rdp(event, count, relation=AR, delta=1e-6, orders=INT_ORDERS):
    acc = rdp_privacy_accountant.RdpAccountant(list(orders), relation)
    acc.compose(event, count)
    return acc.get_epsilon(delta), acc


CASES = [
    # (our mechanism, our relation, dp_accounting event, relation, count)
    (M.GaussianMechanism(3.0, 1.5), "add_remove", dpa.GaussianDpEvent(2.0), AR, 50),
    (M.SubsampledGaussianMechanism(1.1, 0.01), "add_remove",
     dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), AR, 1000),
    (M.SubsampledGaussianMechanism(2.4, 0.004, 2.0), "add_remove",
     dpa.PoissonSampledDpEvent(0.004, dpa.GaussianDpEvent(1.2)), AR, 20_000),
    (M.SubsampledGaussianMechanism(3.0, 0.01, 2.0, "without_replacement"), "replace_one",
     dpa.SampledWithoutReplacementDpEvent(10_000, 100, dpa.GaussianDpEvent(1.5)), RO, 500),
    (M.LaplaceMechanism(2.0, 1.0), "add_remove", dpa.LaplaceDpEvent(2.0), AR, 30),
    (M.ZcdpMechanism(0.01), "add_remove", dpa.ZCDpEvent(0.01), AR, 40),
]


@pytest.mark.parametrize("mech,rel,event,ref_rel,count", CASES)
def test_rdp_accountant_matches_dp_accounting(mech, rel, event, ref_rel, count, theorem27_only):
    # without replacement: Theorem 27 alone (dp_accounting's); the integer-moment terms of
    # issue 35 are compared with the tests' own oracle in test_rdp / test_run_privacy
    worst = 0.0
    for delta in [1e-3, 1e-6, 1e-10]:
        ref, ref_acc = _ref_rdp(event, count, ref_rel, delta)
        ours = A.RdpAccountant(rel, orders=INT_ORDERS).compose(mech, count)
        # same RDP curve on the same orders -> same epsilon
        eps = rdp_to_dp_epsilon(ours.rdp, INT_ORDERS, delta)
        assert eps == pytest.approx(ref, rel=1e-7)
        worst = max(worst, abs(eps - ref) / ref)
        assert ours._grid_delta(eps) == pytest.approx(ref_acc.get_delta(eps), rel=1e-6)
        # linear curves (Gaussian, zCDP) are optimised over every order: never worse
        assert ours.get_epsilon(delta) <= eps * (1 + 1e-12)
        assert ours.get_epsilon(delta) >= 0.9 * eps
    print(f"RDP vs dp_accounting {type(mech).__name__}: max rel diff {worst:.2e}")


def test_rdp_accountant_tree_matches_single_epoch_tree_event():
    T, sigma = 1000, 6.0
    K = math.ceil(math.log2(T + 1))
    ref, _ = _ref_rdp(dpa.SingleEpochTreeAggregationDpEvent(sigma, T), 1,
                      dpa.NeighboringRelation.REPLACE_SPECIAL, 1e-6)
    acc = A.RdpAccountant("replace_one", orders=INT_ORDERS).compose(
        M.TreeAggregationMechanism(sigma, 1.0, K), 1)
    assert rdp_to_dp_epsilon(acc.rdp, INT_ORDERS, 1e-6) == pytest.approx(ref, rel=1e-9)
    assert acc.get_epsilon(1e-6) <= ref


def test_zcdp_accountant():
    acc = A.ZcdpAccountant().compose(M.GaussianMechanism(4.0, 2.0), 25)
    acc.compose(M.PureDpMechanism(0.1), 10)
    rho = 25 * 4 / 32 + 10 * 0.01 / 2
    assert acc.rho == pytest.approx(rho)
    L = math.log(1e6)
    assert acc.get_epsilon(1e-6) == pytest.approx(rho + 2 * math.sqrt(rho * L))
    assert acc.get_delta(acc.get_epsilon(1e-6)) == pytest.approx(1e-6, rel=1e-9)
    tight = A.ZcdpAccountant(conversion="tight").compose(M.ZcdpMechanism(rho))
    ref, _ = _ref_rdp(dpa.ZCDpEvent(rho), 1, AR, 1e-6,
                      orders=np.concatenate([np.linspace(1.02, 20, 3000), np.arange(21, 500)]))
    assert tight.get_epsilon(1e-6) == pytest.approx(ref, rel=1e-4)
    assert tight.get_epsilon(1e-6) <= ref * (1 + 1e-12)
    e = tight.get_epsilon(1e-6)
    assert tight.get_delta(e) == pytest.approx(1e-6, rel=1e-4)
    with pytest.raises(A.UnsupportedMechanismError):
        A.ZcdpAccountant().compose(M.SubsampledGaussianMechanism(1.0, 0.1))


def test_group_privacy_conversion():
    ar = A.ZcdpAccountant("add_remove").compose(M.ZcdpMechanism(0.1))
    ro = A.ZcdpAccountant("replace_one").compose(M.ZcdpMechanism(0.1))
    assert ro.rho == pytest.approx(4 * ar.rho)
    with pytest.raises(ValueError, match="neighbouring"):
        A.ZcdpAccountant("add_remove").compose(M.ZcdpMechanism(0.1, "replace_one"))
    g = M.GaussianMechanism(1.0, 1.0, "add_remove")
    assert A.RdpAccountant("replace_one").compose(g).rdp[0] == pytest.approx(
        4 * A.RdpAccountant("add_remove").compose(g).rdp[0])


def test_pld_accountant_inside_prv_bracket():
    prv = pytest.importorskip("prv_accountant")
    worst = 0.0
    for z, q, steps, delta in [(1.0, 0.01, 2000, 1e-5), (2.0, 0.05, 300, 1e-8)]:
        acc = prv.PRVAccountant(
            prvs=[prv.PoissonSubsampledGaussianMechanism(noise_multiplier=z,
                                                         sampling_probability=q)],
            max_self_compositions=[steps], eps_error=0.005, delta_error=delta * 1e-3)
        lo, est, hi = acc.compute_epsilon(delta=delta, num_self_compositions=[steps])
        ours = A.PldAccountant().compose(M.SubsampledGaussianMechanism(z, q), steps)
        eps = ours.get_epsilon(delta)
        assert lo <= eps <= hi * 1.002
        worst = max(worst, abs(eps - est) / est)
        lo2, hi2 = ours.epsilon_interval(delta)
        assert lo2 <= eps <= hi2 and lo2 <= hi
    print(f"PLD vs prv_accountant estimate: max rel diff {worst:.2e}")


def test_pld_accountant_full_batch_gaussian_is_exact():
    sigma, T = 8.0, 30
    acc = A.PldAccountant().compose(M.GaussianMechanism(sigma), T)
    for delta in [1e-4, 1e-8]:
        exact = gaussian_epsilon(sigma / math.sqrt(T), delta)
        eps = acc.get_epsilon(delta)
        assert exact <= eps <= exact * 1.003 + 1e-3  # pessimistic discretisation
    assert acc.get_delta(1.0) >= gaussian_delta(sigma / math.sqrt(T), 1.0) * (1 - 1e-9)


def test_pld_matches_dp_accounting_pld_accountant():
    ref = pld_privacy_accountant.PLDAccountant(AR)
    ref.compose(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(1.3)), 400)
    ours = A.PldAccountant().compose(M.SubsampledGaussianMechanism(1.3, 0.02), 400)
    assert ours.get_epsilon(1e-6) == pytest.approx(ref.get_epsilon(1e-6), rel=1e-3)


def test_pld_tree_and_laplace():
    # tree: exactly a Gaussian with sensitivity sqrt(K) Delta
    a = A.PldAccountant("replace_one").compose(M.TreeAggregationMechanism(10.0, 2.0, 9))
    b = A.PldAccountant("replace_one").compose(M.GaussianMechanism(10.0, 6.0, "replace_one"))
    assert a.get_epsilon(1e-6) == pytest.approx(b.get_epsilon(1e-6), rel=1e-12)
    # Laplace: a pure (sens/b)-DP mechanism; delta at eps = sens/b vanishes
    lap = A.PldAccountant().compose(M.LaplaceMechanism(2.0, 1.0))
    assert lap.get_delta(0.5 * (1 + 1e-3)) < 1e-12
    assert lap.get_epsilon(1e-9) <= 0.5 * (1 + 1e-3)


def test_pure_accountant_and_subsampled_laplace():
    acc = A.PureDpAccountant()  # replace-one by default (Kuru et al.)
    mech = M.SubsampledLaplaceMechanism.kuru(sensitivity_function=2.0, scale=0.05, n=1000, m=20)
    acc.compose(mech, 100)
    expected = 100 * math.log1p(20 / 1000 * math.expm1(2.0 / (0.05 * 20)))
    assert acc.get_epsilon() == pytest.approx(expected, rel=1e-14)
    assert acc.get_epsilon() == pytest.approx(100 * amplify_without_replacement(2.0, 20, 1000))
    # the accountant rounds its epsilon up (a few ulps above the float `expected`)
    assert acc.get_epsilon() >= expected
    assert acc.get_delta(acc.get_epsilon()) == 0.0 and acc.get_delta(expected * 0.99) == 1.0
    with pytest.raises(A.UnsupportedMechanismError):
        acc.compose(M.GaussianMechanism(1.0))
    with pytest.raises(A.UnsupportedMechanismError):
        A.PureDpAccountant("add_remove").compose(mech)
    # RDP of a pure mechanism never exceeds its epsilon
    r = A.RdpAccountant("replace_one").compose(mech, 100)
    assert r.get_epsilon(1e-6) <= expected


def test_supports_and_unsupported_combinations():
    wor = M.SubsampledGaussianMechanism(1.0, 0.1, sampling="without_replacement")
    poisson = M.SubsampledGaussianMechanism(1.0, 0.1)
    assert not A.RdpAccountant("add_remove").supports(wor)
    assert A.RdpAccountant("replace_one").supports(wor)
    assert not A.RdpAccountant("replace_one").supports(poisson)
    assert not A.PldAccountant().supports(wor)
    assert not A.ZcdpAccountant().supports(poisson)
    assert A.make_accountant("pld").supports(poisson)
    with pytest.raises(ValueError, match="accountant"):
        A.make_accountant("moments")


def test_accountants_are_interchangeable_and_ordered():
    # the same Gaussian run through every accountant: PLD (tight) <= RDP <= zCDP standard
    mech, T, delta = M.GaussianMechanism(20.0), 100, 1e-6
    eps = {name: A.make_accountant(name).compose(mech, T).get_epsilon(delta)
           for name in ("pld", "rdp", "zcdp")}
    exact = gaussian_epsilon(20.0 / math.sqrt(T), delta)
    assert exact <= eps["pld"] <= eps["rdp"] <= eps["zcdp"]
    print("Gaussian x100, sigma=20, delta=1e-6:", {k: round(v, 5) for k, v in eps.items()},
          "exact", round(exact, 5))


# ------------------------------------------------------- neighbouring relation honoured


def _eq11_mp(sensitivity, scale, m, n):
    """Kuru et al. eq. (11) in 50-digit arithmetic: ln(1 + m/n (e^{S/b} - 1))."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        return mpmath.log1p(mpmath.mpf(m) / n * mpmath.expm1(mpmath.mpf(sensitivity) / scale))


def _exact_pure_composition_delta(eps0, steps, epsilon):
    """Optimal delta(epsilon) of ``steps`` eps0-DP mechanisms (Kairouz-Oh-Viswanath: the
    composed randomised response is the worst case), in 50-digit arithmetic."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        p = mpmath.exp(eps0) / (1 + mpmath.exp(eps0))
        total = mpmath.mpf(0)
        for k in range(steps + 1):
            loss = (steps - 2 * k) * eps0
            if loss > epsilon:
                total += mpmath.binomial(steps, k) * p ** (steps - k) * (1 - p) ** k * (
                    1 - mpmath.exp(epsilon - loss))
        return total


def test_subsampled_laplace_add_remove_sensitivity_under_replace_one_accountants():
    # the reviewer's case: S = 0.5 measured under add/remove is 2S = 1 under replace-one
    mpmath = pytest.importorskip("mpmath")
    scale, sens, m, n, steps, delta = 1.0, 0.5, 10, 100, 10, 1e-5
    mech = M.SubsampledLaplaceMechanism(scale, sens, m, n, neighbouring="add_remove")
    eps0 = _eq11_mp(2 * sens, scale, m, n)
    pure_closed = steps * eps0  # basic composition (Kuru et al. Thm A.2)
    rho = steps * eps0**2 / 2  # eps-DP => eps^2/2-zCDP (Bun-Steinke), Lee & Kifer Lemma 3.8
    with mpmath.workdps(50):
        zcdp_closed = rho + 2 * mpmath.sqrt(rho * mpmath.log(1 / mpmath.mpf(delta)))
        lo, hi = mpmath.mpf(0), pure_closed  # exact optimal epsilon at delta, by bisection
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if _exact_pure_composition_delta(eps0, steps, mid) <= delta \
                else (mid, hi)
        exact = hi
    got = {name: A.make_accountant(name, "replace_one").compose(mech, steps).get_epsilon(delta)
           for name in ("rdp", "zcdp", "pld", "pure")}
    assert got["pure"] == pytest.approx(float(pure_closed), rel=1e-13)
    assert got["zcdp"] == pytest.approx(float(zcdp_closed), rel=1e-12)
    for name, eps in got.items():  # no accountant may report less than the exact optimum
        assert eps >= float(exact) * (1 - 1e-12), name
    assert got["pld"] == pytest.approx(float(exact), rel=1e-2)  # pessimistic, 1e-4 grid
    assert got["rdp"] <= float(pure_closed) * (1 + 1e-2)
    print(f"\nsubsampled Laplace (add/remove S={sens}) under replace-one: {got}, "
          f"exact {float(exact):.6g}, basic {float(pure_closed):.6g}")


def _sensitive_mechanisms(sensitivity, neighbouring, per_example_sum=False):
    kw = dict(neighbouring=neighbouring, per_example_sum=per_example_sum)
    return [
        M.GaussianMechanism(2.0, sensitivity, **kw),
        M.LaplaceMechanism(2.0, sensitivity, **kw),
        M.SubsampledGaussianMechanism(2.0, 0.1, sensitivity, "poisson", **kw),
        M.SubsampledGaussianMechanism(2.0, 0.1, sensitivity, "without_replacement", **kw),
        M.SubsampledLaplaceMechanism(2.0, sensitivity, 10, 100, **kw),
        M.TreeAggregationMechanism(2.0, sensitivity, 3, **kw),
        # grid units: 0.7 -> 1, 1.4 -> 2 (rounded up), so the doubling and halving still pair
        M.DiscreteGaussianMechanism(variance=4.0, sensitivity=sensitivity, **kw),
        M.SubsampledDiscreteGaussianMechanism(0.1, variance=4.0, sensitivity=sensitivity, **kw),
    ]


def _accountant(name, relation):
    if name == "pld":
        return A.PldAccountant(relation, value_discretization_interval=1e-3)
    return A.make_accountant(name, relation)


def _eps(name, relation, mech, count=5, delta=1e-6):
    return _accountant(name, relation).compose(mech, count).get_epsilon(delta)


def test_every_accountant_honours_the_relation_of_every_mechanism():
    classes = {type(m) for m in _sensitive_mechanisms(1.0, "add_remove")}
    assert classes == {c for c in vars(M).values() if isinstance(c, type)
                       and issubclass(c, M.Mechanism) and "sensitivity" in getattr(
                           c, "__dataclass_fields__", {})}  # no mechanism class left out
    checked = 0
    s = 0.7
    for name in A.ACCOUNTANTS:
        # replace-one accountant: add/remove S must count as replace-one 2S (always valid)
        for ar, ro, ro_same in zip(_sensitive_mechanisms(s, "add_remove"),
                                   _sensitive_mechanisms(2 * s, "replace_one"),
                                   _sensitive_mechanisms(s, "replace_one")):
            if not _accountant(name, "replace_one").supports(ro):
                assert not _accountant(name, "replace_one").supports(ar)
                continue
            eps = _eps(name, "replace_one", ar)
            assert eps == pytest.approx(_eps(name, "replace_one", ro), rel=1e-12), (name, ar)
            assert eps > _eps(name, "replace_one", ro_same), (name, ar)  # doubling happened
            checked += 1
        # add/remove accountant: a replace-one 2S halves only for a declared per-example sum
        for ro, ro_sum, ar in zip(_sensitive_mechanisms(2 * s, "replace_one"),
                                  _sensitive_mechanisms(2 * s, "replace_one", True),
                                  _sensitive_mechanisms(s, "add_remove")):
            acc = _accountant(name, "add_remove")
            if not acc.supports(ar):
                continue
            assert not acc.supports(ro), (name, ro)
            with pytest.raises(A.UnsupportedMechanismError, match="per_example_sum"):
                acc.compose(ro)
            assert _eps(name, "add_remove", ro_sum) == pytest.approx(
                _eps(name, "add_remove", ar), rel=1e-12), (name, ro_sum)
            checked += 1
    assert checked >= 12
