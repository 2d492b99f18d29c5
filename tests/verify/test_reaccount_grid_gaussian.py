"""Re-accounting a Gaussian grid run counts the rounding's extra move (issue 34), and grid
runs without replacement are re-accounted with the discrete Gaussian's own bound (issue 35).

A grid run releases round(2^j v) + Z: a move of L2 size x changes the integer query by less
than 2^j x + sqrt(d), so every release a sample touches moves by up to sqrt(d) 2^-j more in
value units. Until this, the Gaussian re-accounting read a grid transcript as a float one
(under-counting by ~2^-16 relative). Oracle: the same transcript read without the extra move
(the float reading; without replacement, verify's own bound at the float z) must re-account
strictly lower, by a relative amount of the order of sqrt(d) 2^-j over the declared
sensitivity (the elasticity of eps in the sensitivity is between 0.5 and 5 here). Verify's
bound for the discrete Gaussian without replacement is checked against the package's ledger
(two implementations of the same theorems) with a sigma / 2 control.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_sgd, tree_momentum_nsgd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.reaccount import _wor_epsilon, reaccount


@pytest.fixture(scope="module")
def logistic() -> LogisticRegression:
    A, y = kuru_synthetic(n=500, d=4, seed=0)
    return LogisticRegression(A, y, l2=0.02, l1_radius=5.0)


@pytest.mark.parametrize("name,kw,sens", [
    ("dp_sgd", dict(steps=30, batch_size=50, step_size=0.5, clip_threshold=1.0), 2 / 50),
    ("dp_sgd", dict(steps=30, batch_size=50, step_size=0.5, clip_threshold=1.0,
                    sampling="poisson", public_n=500), 1 / 50),
    ("tree_momentum_nsgd", dict(epochs=2, step_size=0.1, clip_threshold=1.0), None),
])
def test_grid_rounding_is_counted(logistic, name, kw, sens) -> None:
    tr = Transcript()
    fn = dp_sgd if name == "dp_sgd" else tree_momentum_nsgd
    fn(logistic, epsilon=1.0, delta=1e-6, trials=2, seed=0, noise="grid", trace=None,
       transcript=tr, **kw)
    d = tr.as_dict()
    grid = reaccount(d, epsilon=1.0, delta=1e-6)
    assert grid.holds and grid.epsilon <= 1.0 * (1 + 1e-3)
    if d["sampling"] == "without_replacement":
        # the discrete Gaussian's own bound (not dp_accounting's continuous one): the same
        # function of z with and without the rounding's extra move
        std = float(np.asarray(d["release_std"], dtype=float)[0])
        extra = math.sqrt(logistic.d) * 2.0 ** -int(d["grid_bits"])
        as_float_eps = _grid_wor_epsilon(d["sampling_rate"], round(std / sens, 12),
                                         d["steps"], 1e-6)
        assert grid.epsilon == pytest.approx(
            _grid_wor_epsilon(d["sampling_rate"], round(std / (sens + extra), 12),
                              d["steps"], 1e-6), rel=1e-12)
    else:
        as_float_eps = reaccount({k: v for k, v in d.items() if k != "grid_bits"},
                                 epsilon=1.0, delta=1e-6).epsilon
    rise = grid.epsilon / as_float_eps - 1.0
    assert rise > 0  # the float reading under-counts (the control)
    if sens is not None:
        rel = math.sqrt(logistic.d) * 2.0 ** -int(d["grid_bits"]) / sens
        assert 0.5 * rel <= rise <= 5 * rel, (rise, rel)
    else:
        assert rise < 1e-3


def _grid_wor_epsilon(q: float, z: float, steps: int, delta: float) -> float:
    return _wor_epsilon(q, z, steps, delta, False)


@pytest.mark.parametrize("q,z,steps,delta", [(0.1, 8.0, 30, 1e-6), (0.02, 3.0, 200, 1e-5),
                                              (0.5, 1.5, 5, 0.05), (0.05, 0.6, 20, 1e-5)])
def test_float_wor_epsilon_agrees_with_the_package(q, z, steps, delta) -> None:
    """The continuous Gaussian without replacement (Theorem 27 termwise with the
    integer-moment bound): verify's implementation and the package's ledger within 1%,
    never below it by more than the order grid allows, at most dp_accounting's Theorem 27,
    and the check at half the noise multiplier far above (control)."""
    import dp_accounting as dpa
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    from dpbounds.privacy import PrivacyLedger, SubsampledGaussianMechanism

    led = PrivacyLedger("replace_one")
    led.record(SubsampledGaussianMechanism(2.0 * z, q, 2.0, "without_replacement"), steps)
    package = led.epsilon(delta, "rdp")
    check = _wor_epsilon(q, z, steps, delta, True)
    assert package * (1 - 1e-9) <= check <= package * 1.01, (check, package)
    n = 1000
    acc = ref.RdpAccountant(None, dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(
        n, round(q * n), dpa.GaussianDpEvent(z)), steps))
    assert check <= acc.get_epsilon(delta) * (1 + 1e-9)
    assert _wor_epsilon(q, z / 2, steps, delta, True) > 1.5 * package


@pytest.mark.parametrize("q,z,steps,delta", [(0.1, 8.0, 30, 1e-6), (0.02, 3.0, 200, 1e-5),
                                              (0.5, 1.5, 5, 0.05)])
def test_grid_wor_epsilon_agrees_with_the_package(q, z, steps, delta) -> None:
    """Two implementations of the same bound (verify's from the theorems in mpmath and
    float logs on integer orders; the package's ledger on its own order grid, which has
    fractional orders): within 1% of each other, the check never below by more than its
    order grid allows (the ledger's is a minimum over more orders); and the check at half
    the noise multiplier (a sigma / 2 bug) is far above (control)."""
    from dpbounds.privacy import PrivacyLedger, SubsampledDiscreteGaussianMechanism

    led = PrivacyLedger("replace_one")
    led.record(SubsampledDiscreteGaussianMechanism(
        variance=(z * 1000.0) ** 2, sensitivity=1000, dimension=3, sampling_rate=q,
        neighbouring="replace_one", sampling="without_replacement"), steps)
    package = led.epsilon(delta, "rdp")
    check = _grid_wor_epsilon(q, z, steps, delta)
    assert package * (1 - 1e-9) <= check <= package * 1.01, (check, package)
    assert _grid_wor_epsilon(q, z / 2, steps, delta) > 1.5 * package


@pytest.mark.parametrize("continuous", [True, False])
def test_integer_and_mpf_differences_give_the_same_epsilon(continuous, monkeypatch) -> None:
    """The check differences exact integers where the largest term is short and mpf numbers
    where it is long (speed only): both ways on both sides of the switch agree to round-off,
    and a table of another z does not (control)."""
    import dpbounds.verify.reaccount as rc

    for q, z in ((0.05, 0.6), (0.02, 1.0), (0.1, 4.0)):
        monkeypatch.setattr(rc, "_INTEGER_DIFFERENCES_MAX_BITS", math.inf)
        as_integers = _wor_epsilon(q, z, 50, 1e-5, continuous)
        monkeypatch.setattr(rc, "_INTEGER_DIFFERENCES_MAX_BITS", 0.0)
        as_mpf = _wor_epsilon(q, z, 50, 1e-5, continuous)
        assert abs(as_integers / as_mpf - 1.0) < 1e-12, (q, z, as_integers, as_mpf)
        assert abs(_wor_epsilon(q, z * 1.001, 50, 1e-5, continuous) / as_mpf - 1.0) > 1e-5
