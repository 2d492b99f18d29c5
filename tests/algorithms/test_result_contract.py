"""One result contract for every algorithm in :mod:`dpbounds.algorithms`.

Every public algorithm returns a frozen :class:`~dpbounds.algorithms.SimulationResult` whose
``algorithm`` is the stable id of the run: the name of the function called (the table of
``conftest.CASES`` covers every public algorithm, see ``test_every_algorithm_is_covered``).
Its attributes cannot be reassigned and its ``params`` cannot be changed, yet it pickles; the
default trace is ``"auto"`` everywhere (suboptimality on a convex objective, the gradient norm
otherwise). Negative controls: a mutable stand-in fails the frozen check, and a result whose
id is a display name fails the id check.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest

import dpbounds.algorithms as algorithms
from dpbounds.algorithms import SimulationResult


def is_frozen(res) -> bool:
    """Whether neither an attribute nor a parameter of ``res`` can be changed in place."""
    try:
        res.x = None
    except dataclasses.FrozenInstanceError:
        pass
    else:
        return False
    try:
        res.params["steps"] = -1
    except TypeError:
        return True
    return False


def test_every_case_has_its_function_name_as_id(algorithm_table):
    cases, objectives = algorithm_table
    for name, run in cases.items():
        res = run(objectives[name][0], trials=2, seed=0)
        function = name.split("[")[0]
        assert isinstance(res, SimulationResult)
        assert res.algorithm == function, (name, res.algorithm)
        assert is_frozen(res), name
        again = pickle.loads(pickle.dumps(res))
        assert again.algorithm == res.algorithm and again.params.keys() == res.params.keys()
        assert isinstance(again.params, type(res.params))
        np.testing.assert_array_equal(again.trace, res.trace)


def test_controls_are_caught():
    class Mutable:
        x = None
        params: dict = {}
    assert not is_frozen(Mutable())
    res = algorithms.dp_nag(_quadratic(), epsilon=1.0, steps=3, trials=1, seed=0)
    renamed = dataclasses.replace(res, algorithm="DP-NAG")
    assert renamed.algorithm != "dp_nag"  # a display name is not the function's name
    changed = dataclasses.replace(res, params={**res.params, "steps": 99})
    assert changed.params["steps"] == 99 and res.params["steps"] != 99


def test_params_are_a_private_copy():
    mine = {"steps": 3}
    res = SimulationResult("x", np.zeros((1, 1)), np.zeros((1, 1)), "loss", None, params=mine)
    mine["steps"] = 4
    assert res.params["steps"] == 3


def _returns_result(name: str) -> bool:
    f = getattr(algorithms, name)
    return (inspect.isfunction(f)
            and str(inspect.signature(f).return_annotation).endswith("Result"))


@pytest.mark.parametrize("name", sorted(filter(_returns_result, algorithms.__all__)))
def test_trace_defaults_to_auto(name):
    params = inspect.signature(getattr(algorithms, name)).parameters
    if "trace" in params:
        assert params["trace"].default == "auto", name
    else:  # *_opt forward **kwargs to the base algorithm
        assert any(p.kind is p.VAR_KEYWORD for p in params.values()), name


def test_auto_trace_follows_convexity():
    from dpbounds.objectives import NonconvexLogisticRegression

    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 3))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    f = NonconvexLogisticRegression(A, np.sign(rng.normal(size=40)), lam=0.1)
    res = algorithms.dp_gd(f, epsilon=1.0, delta=1e-5, steps=3, trials=1, seed=0)
    assert res.trace_kind == "grad_norm"
    assert algorithms.dp_gd(_quadratic(), epsilon=1.0, delta=1e-5, steps=3, trials=1,
                            seed=0).trace_kind == "suboptimality"


def _quadratic():
    from dpbounds.objectives import QuadraticObjective

    return QuadraticObjective.random(3, 0.5, 2.0, n=40, offset_scale=0.3, seed=1)
