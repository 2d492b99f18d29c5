"""Stop 69: Gaussian DP-GD's add/remove audit sees a mean over the private dataset size.

An independent adversary's mutant normalised DP-GD's clipped sum by each data set's own size
(``to_public = 1.0``: a mean over the private n) instead of the public normaliser. Under
add/remove that is up to twice the declared sensitivity C / N, but the audit pair
D = {+r e1}, D' = D + {-r e1} ran at public n = 1, where the private means (C and 0) move by
C exactly as the correct sums over 1 do: the mutant ran bit for bit the correct mechanism and
passed. At public n = 2 the correct release moves by C / 2 and the mutant's by C.

Oracle: the audit's certified lower bound against the claim (a Clopper-Pearson interval of
the attack's rates, independent of the algorithm's accounting). The mutant is compiled from
the module's own source with that one line changed.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import types

import pytest

from dpbounds.audit import audit
from dpbounds.audit.registry import AUDITS

gd_module = importlib.import_module("dpbounds.algorithms.gradient_descent")
LINE = "to_public = f.n / n_pub"


def _private_n_dp_gd():
    src = inspect.getsource(gd_module)
    assert src.count(LINE) == 1, "the line the mutant changes moved: update the test"
    mod = types.ModuleType("dpbounds.algorithms._gd_private_n_mutant")
    mod.__dict__["__file__"] = gd_module.__file__
    exec(compile(src.replace(LINE, "to_public = 1.0"), "<gd_private_n_mutant>", "exec"),
         mod.__dict__)
    return mod.dp_gd


@pytest.mark.parametrize("seed", [0, 1])
def test_the_correct_run_is_consistent(seed):
    r = audit("dp_gd_gaussian", "add_remove", quick=True, seed=seed)
    assert r.epsilon_lower <= r.claimed_epsilon, str(r)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_mean_over_the_private_size_is_caught(seed, monkeypatch):
    spec = AUDITS["dp_gd_gaussian"]
    monkeypatch.setitem(AUDITS, "dp_gd_gaussian",
                        dataclasses.replace(spec, function=_private_n_dp_gd()))
    r = audit("dp_gd_gaussian", "add_remove", quick=True, seed=seed)
    assert r.epsilon_lower > r.claimed_epsilon, str(r)
