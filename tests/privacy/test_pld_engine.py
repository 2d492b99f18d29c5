"""The dense PLD engine (``dpbounds.privacy._pld``) against independent oracles.

* dp_accounting's own composition and epsilon(delta) on the same PMFs;
* the same FFT power in 80-bit long double (round-off ~2000x smaller): every upper tail of our
  composition plus its mass at +inf must dominate it (then delta(eps) is an upper bound);
* randomised response composed three times, in closed form.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from dpbounds.privacy import _pld

pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as pldlib  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)


def _long_double_power(pmf, count):
    """The same FFT power in 80-bit long double (round-off ~2000x smaller), on a wider window:
    the oracle for the round-off allowance."""
    from scipy import fft

    lo, hi = _pld._chernoff_window(pmf.probs, count, 1e-15)
    lo, hi = lo - 2000, hi + 2000
    size = fft.next_fast_len(hi - lo + 1)
    out = fft.irfft(fft.rfft(pmf.probs.astype(np.longdouble), size) ** count, size)
    return count * pmf.lower + lo, np.roll(out, -lo)[: hi - lo + 1]


@pytest.mark.parametrize("sigma,q,count", [(1.3, 0.02, 400), (1.3, 0.02, 3000), (0.7, 0.1, 50),
                                           (3.0, 0.5, 7)])
def test_dense_self_composition_upper_bounds_an_80_bit_fft(sigma, q, count):
    # every upper tail of ours, plus its mass at +inf, is at least the long-double one's: then
    # delta(eps) = inf + sum_{L > eps} p (1 - e^{eps - L}) is an upper bound for every eps
    one = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-3)
    for pmf in (one._pmf_remove, one._pmf_add):
        pmf = _pld.from_dp_accounting_pmf(pmf)
        ours = _pld.self_compose(pmf, count)
        lower, ref = _long_double_power(pmf, count)
        start = ours.lower - lower
        diff = ours.probs.astype(np.longdouble) - ref[start:start + ours.probs.size]
        beyond = ref[start + ours.probs.size:].sum()  # cut by our window and trim
        exact_inf = -math.expm1(count * math.log1p(-pmf.infinity_mass))
        tails = np.cumsum(diff[::-1])[::-1] + (ours.infinity_mass - exact_inf - beyond)
        assert float(tails.min()) >= 0.0
        # negative control: the check sees an understatement of 1e-12 (mass moved from the
        # largest finite loss to the smallest, without any allowance at +inf)
        bad = diff.copy()
        bad[-1] -= 1e-12 + tails.max()
        bad[0] += 1e-12 + tails.max()
        assert float((np.cumsum(bad[::-1])[::-1] - beyond).min()) < 0.0


@pytest.mark.parametrize("sigma,q,count", [(1.3, 0.02, 400), (0.7, 0.1, 50), (3.0, 0.5, 7)])
def test_dense_engine_matches_dp_accounting_composition(sigma, q, count):
    one = pldlib.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-3)
    theirs = one.self_compose(count)
    ours = _pld.self_compose(_pld.from_dp_accounting_pmf(one._pmf_remove), count)
    for delta in (1e-3, 1e-6):
        ref = theirs._pmf_remove.get_epsilon_for_delta(delta)
        # ours is more pessimistic by its round-off allowance (< 1e-12 at +inf here)
        assert _pld.epsilon_for_delta(ours, delta) == pytest.approx(ref, rel=1e-6)
    for eps in (0.0, 0.5, 2.0):
        ref = theirs._pmf_remove.get_delta_for_epsilon(eps)
        assert _pld.delta_for_epsilon(ours, eps) == pytest.approx(ref, rel=1e-8, abs=1e-11)
    # composition of two different PMFs
    two = pldlib.from_laplace_mechanism(2.0, value_discretization_interval=1e-3)
    ref = theirs.compose(two).get_epsilon_for_delta(1e-6)
    mixed = _pld.compose(ours, _pld.from_dp_accounting_pmf(two._pmf_remove))
    assert _pld.epsilon_for_delta(mixed, 1e-6) == pytest.approx(ref, rel=1e-6)


def test_dense_engine_epsilon_is_the_exact_inverse():
    # randomised response with eps0 = 1 composed 3 times: delta(eps) in closed form
    rr = _pld.DensePld(1.0, -1, np.array([1 / (1 + math.e), 0.0, math.e / (1 + math.e)]), 0.0)
    three = _pld.self_compose(rr, 3)
    p = math.e / (1 + math.e)
    for eps in (0.0, 0.5, 1.0, 2.5):
        exact = sum(math.comb(3, k) * p**k * (1 - p) ** (3 - k) * max(0.0, 1 - math.exp(
            eps - (2 * k - 3))) for k in range(4))
        assert _pld.delta_for_epsilon(three, eps) == pytest.approx(exact, rel=1e-12)
    for delta in (0.3, 0.1, 0.01):
        eps = _pld.epsilon_for_delta(three, delta)
        assert _pld.delta_for_epsilon(three, eps) <= delta
        assert _pld.delta_for_epsilon(three, eps * (1 - 1e-9)) > delta


@pytest.mark.parametrize("laplaces", [60, 61])  # with the Gaussian part: an odd, an even count
def test_many_distinct_parts_compose_as_dp_accounting_does(laplaces):
    """The accountant composes its parts in a balanced tree (a Laplace schedule of 2e4
    distinct scales took ~110 s composed in order: fuzz 16); the result must be dp_accounting's
    sequential composition of the same events on the same grid, never below it. Control: one
    part fewer moves epsilon by far more than the tolerance (a part lost by the tree, such as
    an odd level's last one, would fail)."""
    import dp_accounting as dpa
    from dp_accounting.pld import PLDAccountant

    from dpbounds.privacy.accountants.pld_accountant import PldAccountant
    from dpbounds.privacy.mechanisms import GaussianMechanism, LaplaceMechanism

    scales = np.linspace(20.0, 60.0, laplaces)
    ours = PldAccountant("add_remove")
    for b in scales:
        ours.compose(LaplaceMechanism(float(b)), 1)
    ours.compose(GaussianMechanism(8.0), 3)
    h = ours.discretization_interval()

    def theirs(skip):
        acc = PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
                            value_discretization_interval=h)
        for i, b in enumerate(scales):
            if i != skip:
                acc.compose(dpa.LaplaceDpEvent(float(b)))
        acc.compose(dpa.GaussianDpEvent(8.0), 3)
        return acc

    full, fewer = theirs(None), theirs(laplaces - 1)
    for delta in (1e-3, 1e-6):
        got, want = ours.get_epsilon(delta), full.get_epsilon(delta)
        assert want * (1 - 1e-12) <= got <= want * (1 + 1e-7)
        assert fewer.get_epsilon(delta) < want * (1 - 1e-4)
