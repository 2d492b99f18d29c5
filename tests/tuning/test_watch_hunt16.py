"""Mutant hunt 16's survivors (stop 81), killed: the watch of an objective's calibration
constants against a ``__getattribute__`` hook, an inherited hook, a data-derived instance
attribute on a package objective, and the order of selections (its cache); and a ledger
exported under another relation than its own.

Oracle for the watch: the Laplace scales the runs of a private selection actually used, read
from their own ledgers through a spy, on two neighbouring data sets (one record replaced): a
public calibration gives the same scales on both (or the selection is refused); the mutants
gave 0.029 against 0.240 (hooks) and 0.120 against 0.960 (the instance attribute). Oracle for
the export: the closed-form Gaussian RDP of T releases at the replace-one sensitivity 2C,
converted at delta over a fine grid of orders, written here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.objectives import LogisticRegression
from dpbounds.tuning import select_privately


def _data(far: bool):
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.5, 0.5, (200, 2))
    if far:
        a[0] = [4.0, -4.0]
    return a, np.where(rng.random(200) < 0.5, 1.0, -1.0)


class _Sneaky(LogisticRegression):  # S1 answered by __getattribute__ from the records
    def __getattribute__(self, k):
        if k == "l1_sensitivity":
            a = object.__getattribute__(self, "features_np")
            return 2.0 * float(np.max(np.abs(a).sum(axis=1)))
        return object.__getattribute__(self, k)


class _SneakyChild(_Sneaky):  # the hook inherited from a base of one's own
    pass


class _ProxyBase:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, key):
        return getattr(self._inner, key)


class _Proxy(_ProxyBase):  # an inherited __getattr__ around undeclared radii
    pass


def _plain(far):
    return LogisticRegression(*_data(far), l2=0.02, l1_radius=8.0, l2_radius=6.0)


def _slope(far):  # a data-derived instance attribute on a package objective
    f = _plain(far)
    f.psi_slope = float(np.max(np.abs(f.features_np)))
    return f


BUILDS = {
    "getattribute": lambda far: _Sneaky(*_data(far), l2=0.02, l1_radius=8.0, l2_radius=6.0),
    "inherited getattribute": lambda far: _SneakyChild(*_data(far), l2=0.02, l1_radius=8.0,
                                                       l2_radius=6.0),
    "inherited getattr proxy": lambda far: _Proxy(LogisticRegression(*_data(far), l2=0.02)),
    "instance psi_slope": _slope,
}
KW = dict(epsilon=1.0, score_epsilon=0.1, loss_bound=5.0, stop_probability=0.3, momentum=0.0,
          seed=3)
GRID = {"step_size": [0.25, 0.5], "steps": [3]}


def _scales(build, far):
    seen = []

    def spy(objective, **run):
        res = dp_heavy_ball(objective, **run)
        seen.append(tuple(round(m.scale, 9) for m, _ in res.privacy.ledger.entries))
        return res

    try:
        select_privately(spy, build(far), GRID, **KW)
    except ValueError:
        return "refused"
    return sorted(set(seen))


@pytest.mark.parametrize("name", list(BUILDS))
def test_a_data_dependent_calibration_is_refused_or_the_noise_is_the_same(name):
    near, far = _scales(BUILDS[name], False), _scales(BUILDS[name], True)
    assert near == far, (near, far)
    # the package's own declared objective runs, with one noise scale on both neighbours
    control_near, control_far = _scales(_plain, False), _scales(_plain, True)
    assert control_near == control_far and control_near != "refused"


def test_the_watch_does_not_depend_on_what_ran_before():
    # a selection on a plain instance first (a watcher cached by class alone then missed the
    # instance attribute of the next one)
    assert _scales(_plain, False) != "refused"
    assert _scales(_slope, False) == _scales(_slope, True)


def test_an_add_remove_ledger_exported_for_replace_one_doubles_its_sensitivity():
    import dp_accounting as dpa

    from dpbounds.algorithms import dp_gd
    from dpbounds.data import kuru_synthetic
    from dpbounds.privacy.events import dp_accounting_relation, to_dp_event

    ds = kuru_synthetic(n=500, d=3, seed=0)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    res = dp_gd(f, epsilon=1.0, delta=1e-6, mechanism="gaussian", clip_threshold=1.0,
                steps=20, neighbouring="add_remove", public_n=500, seed=0)
    (mech, count), = res.privacy.ledger.entries
    acc = dpa.rdp.RdpAccountant(neighboring_relation=dp_accounting_relation("replace_one"))
    acc.compose(to_dp_event(res, "replace_one"))
    theirs = acc.get_epsilon(1e-6)
    rho = count * (2 * mech.sensitivity_under("add_remove")) ** 2 / (2 * mech.sigma**2)
    a = np.linspace(1.001, 2000, 400000)
    oracle = float(np.min(a * rho + np.log1p(-1 / a) - (math.log(1e-6) + np.log(a)) / (a - 1)))
    # two-sided: at least the closed form (a relation ignored read 0.837 against 1.763)
    assert oracle * (1 - 1e-3) <= theirs <= oracle * 1.01
