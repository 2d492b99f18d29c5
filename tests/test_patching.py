"""Patches seen only by the thread that made them (:mod:`dpbounds._patching`).

The mutants and taps of ``verify`` and ``audit`` patch module functions and methods. Set with
``setattr`` they reached every thread: a mutant run on one thread of a thread pool changed
what a correct run on another thread computed. Oracles: each thread's result run alone, in
this process, without threads; interleavings forced with events where a test needs one.
Negative control: the same patches shared by all threads (one stack for the process, what
``setattr`` did) interfere.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

from dpbounds import _patching
from dpbounds._patching import thread_patch


def _module() -> types.ModuleType:
    mod = types.ModuleType("patch_target")
    mod.f = lambda x: x + 1  # type: ignore[attr-defined]
    return mod


class Base:
    def method(self, x):
        return ("base", x)

    @classmethod
    def make(cls, x):
        return (cls.__name__, x)

    @staticmethod
    def static(x):
        return ("static", x)


class Child(Base):
    pass


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_module_function_is_patched_for_the_calling_thread_only() -> None:
    mod = _module()
    original = mod.f
    with thread_patch(mod, "f", lambda inner: lambda x: -inner(x)):
        assert mod.f(1) == -2
        assert _in_thread(lambda: mod.f(1)) == 2
    assert mod.f is original  # the very object is back


def test_methods_classmethods_and_staticmethods_keep_their_binding() -> None:
    b = Base()
    with (thread_patch(Base, "method", lambda inner: lambda self, x: ("patched", inner(self, x))),
          thread_patch(Base, "make", lambda inner: classmethod(
              lambda cls, x: ("patched", inner.__func__(cls, x)))),
          thread_patch(Base, "static", lambda inner: staticmethod(lambda x: ("p", inner(x))))):
        assert b.method(1) == ("patched", ("base", 1))
        assert Base.method(b, 1) == ("patched", ("base", 1))
        assert Child.make(2) == ("patched", ("Child", 2))  # bound to the class asked
        assert Base.static(3) == ("p", ("static", 3))
        assert _in_thread(lambda: (b.method(1), Child.make(2), Base.static(3))) == (
            ("base", 1), ("Child", 2), ("static", 3))
    assert isinstance(vars(Base)["make"], classmethod)
    assert isinstance(vars(Base)["static"], staticmethod)
    assert b.method(1) == ("base", 1)


def test_an_inherited_attribute_is_deleted_again() -> None:
    c = Child()
    with thread_patch(Child, "method", lambda inner: lambda self, x: ("child", inner(self, x))):
        assert c.method(1) == ("child", ("base", 1))
        assert Base().method(1) == ("base", 1)  # the base class is untouched
    assert "method" not in vars(Child)


def test_patches_nest_within_a_thread() -> None:
    mod = _module()
    with thread_patch(mod, "f", lambda inner: lambda x: 10 * inner(x)):
        with thread_patch(mod, "f", lambda inner: lambda x: inner(x) + 0.5):
            assert mod.f(1) == 20.5  # the inner patch built from the outer one
        assert mod.f(1) == 20
    assert mod.f(1) == 2


def test_an_exception_in_the_block_or_in_make_restores() -> None:
    mod = _module()
    original = mod.f
    with pytest.raises(KeyError), thread_patch(mod, "f", lambda inner: lambda x: 0):
        raise KeyError
    assert mod.f is original

    def broken(inner):
        raise RuntimeError("make failed")
    with pytest.raises(RuntimeError), thread_patch(mod, "f", broken):
        pass
    assert mod.f is original and not _patching._INSTALLED
    assert not _patching._stacks()


def test_a_missing_attribute_is_refused() -> None:
    with pytest.raises(AttributeError, match="no attribute 'g'"), \
            thread_patch(_module(), "g", lambda inner: inner):
        pass


def test_two_threads_patch_the_same_attribute_at_once() -> None:
    mod = _module()
    original = mod.f
    inside = threading.Barrier(2)
    leave_first = threading.Event()
    seen: dict[str, list] = {"a": [], "b": []}

    def worker(tag: str, k: int) -> None:
        with thread_patch(mod, "f", lambda inner: lambda x: k * inner(x)):
            inside.wait()  # both patches installed at once
            seen[tag].append(mod.f(1))
            if tag == "a":
                leave_first.set()
            else:
                leave_first.wait()
        if tag == "b":  # a left first; b's patch is still in place
            return
        seen[tag].append(mod.f(1))  # a, after leaving: the original while b still patches

    ta = threading.Thread(target=worker, args=("a", 3))
    tb = threading.Thread(target=worker, args=("b", 5))
    ta.start()
    tb.start()
    ta.join()
    tb.join()
    assert seen == {"a": [6, 2], "b": [10]}
    assert mod.f is original


def test_scaled_noise_on_one_thread_leaves_another_threads_draws_alone() -> None:
    from dpbounds.audit.mutation import scaled_noise
    from dpbounds.backend import TrialRandom

    alone = TrialRandom(0, 3).normal((4,), scale=1.0)
    inside, drawn = threading.Event(), threading.Event()
    mutant: list = []

    def under_mutant() -> None:
        with scaled_noise(0.5):
            inside.set()
            drawn.wait()
            mutant.append(TrialRandom(0, 3).normal((4,), scale=1.0))

    t = threading.Thread(target=under_mutant)
    t.start()
    inside.wait()
    here = TrialRandom(0, 3).normal((4,), scale=1.0)  # while the other thread's mutant is on
    drawn.set()
    t.join()
    np.testing.assert_array_equal(here, alone)
    np.testing.assert_array_equal(mutant[0], 0.5 * alone)


_REPLAYS = [None, "scaled_contribution"] * 6


def _replays_on_threads() -> list[tuple[float, bool]]:
    from dpbounds.verify.replay import replay_dp_sgd

    def one(mutation):
        v = replay_dp_sgd(steps=200, mutation=mutation)
        return (v.measured, v.holds)
    with cf.ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, _REPLAYS))


def test_replay_verdicts_on_a_thread_pool_give_the_in_process_results() -> None:
    from dpbounds.verify.replay import replay_dp_sgd

    alone = {m: replay_dp_sgd(steps=200, mutation=m) for m in set(_REPLAYS)}
    assert alone[None].holds and not alone["scaled_contribution"].holds  # the oracle is sharp
    expected = [(alone[m].measured, alone[m].holds) for m in _REPLAYS]
    for _ in range(3):
        assert _replays_on_threads() == expected


_SHARED = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("patch_test", sys.argv[1])
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
from dpbounds import _patching
from dpbounds.verify.replay import replay_dp_sgd

alone = {m: replay_dp_sgd(steps=200, mutation=m) for m in set(t._REPLAYS)}
expected = [(alone[m].measured, alone[m].holds) for m in t._REPLAYS]
shared = {}
_patching._stacks = lambda: shared  # one stack for every thread: what setattr did
differs = 0
for _ in range(5):  # the interleaving is the scheduler's: a few tries
    try:
        differs += t._replays_on_threads() != expected
    except Exception:  # a crash is interference too
        differs += 1
    if differs:
        break
print("INTERFERED" if differs else "SAME")
"""


def test_negative_control_patches_shared_by_all_threads_interfere() -> None:
    # in a process of its own: the shared stack must not reach later tests
    out = subprocess.run([sys.executable, "-c", _SHARED, __file__], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "INTERFERED"


def _while_another_thread_patches(context, probe, inside_hook=None):
    """``probe()`` run on this thread while another thread holds ``context()`` (and has
    run ``inside_hook()`` within it)."""
    inside, done = threading.Event(), threading.Event()

    def hold() -> None:
        with context():
            if inside_hook is not None:
                inside_hook()
            inside.set()
            done.wait()
    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(timeout=30)
        return probe()
    finally:
        done.set()
        t.join()


def test_a_base_class_patch_reaches_a_subclass_while_another_thread_patches_it() -> None:
    # the subclass's stand-in falls back along the MRO at call time: through the base
    # class's own stand-in, where this thread patched it (independent review, stop 65)
    def probe():
        with thread_patch(Base, "method", lambda inner: lambda self, x: ("mine", x)):
            return Base().method(1), Child().method(1)
    got = _while_another_thread_patches(lambda: thread_patch(
        Child, "method", lambda inner: lambda self, x: ("theirs", x)), probe)
    assert got == (("mine", 1), ("mine", 1))
    assert "method" not in vars(Child)


def test_a_data_descriptor_is_refused() -> None:
    class P:
        @property
        def v(self):
            return 1
    with pytest.raises(ValueError, match="data descriptor"), \
            thread_patch(P, "v", lambda inner: inner):
        pass
    assert isinstance(vars(P)["v"], property) and not _patching._INSTALLED


def test_names_signatures_pickles_and_caches_read_through_the_stand_in() -> None:
    import importlib
    import inspect
    import pickle

    from dpbounds.verify import mutants

    tm = importlib.import_module("dpbounds.algorithms.tree_momentum")
    dp_sgd = importlib.import_module("dpbounds.algorithms.dp_sgd")
    original = tm.algorithm_1_node_count
    signature = inspect.signature(original)
    info = dp_sgd._calibrate.cache_info  # an lru_cache's

    def probe():
        f, g = tm.algorithm_1_node_count, dp_sgd._calibrate
        assert isinstance(f, _patching._Dispatch) and isinstance(g, _patching._Dispatch)
        # unpickled by name: here the stand-in again (in a fresh process, the function)
        return (f.__name__, inspect.signature(f), pickle.loads(pickle.dumps(f))(10, 2),
                f(10, 2), g.cache_info().maxsize)

    def both():
        stack = contextlib.ExitStack()
        stack.enter_context(mutants._node_count_minus_1())
        stack.enter_context(mutants._steps_off_by_one())
        return stack
    name, sig, back, value, maxsize = _while_another_thread_patches(both, probe)
    assert (name, sig, back, value) == ("algorithm_1_node_count", signature,
                                        original(10, 2), original(10, 2))
    assert maxsize == info().maxsize


def test_a_replacement_made_meanwhile_is_left_in_place() -> None:
    mod = _module()
    other = lambda x: "other"  # noqa: E731
    with thread_patch(mod, "f", lambda inner: lambda x: 0):
        mod.f = other  # a monkeypatch made while the patch is live
    assert mod.f is other and not _patching._INSTALLED


def test_a_classmethods_replacement_gets_it_bound() -> None:
    with thread_patch(Base, "make", lambda inner: classmethod(
            lambda cls, x: ("wrapped", inner(x)))):  # inner: bound to Base already
        assert Child.make(5) == ("wrapped", ("Base", 5))
    assert Child.make(5) == ("Child", 5)


def test_two_owners_of_one_name_are_patched_apart() -> None:
    a, b = _module(), _module()
    with thread_patch(a, "f", lambda inner: lambda x: "a"), \
            thread_patch(b, "f", lambda inner: lambda x: "b"):
        assert (a.f(1), b.f(1)) == ("a", "b")
    assert (a.f(1), b.f(1)) == (2, 2)


def test_many_threads_entering_and_leaving_at_once() -> None:
    mod = _module()
    original = mod.f
    errors: list = []

    def worker(k: int) -> None:
        try:
            for _ in range(300):
                with thread_patch(mod, "f", lambda inner: lambda x: k * inner(x)):
                    with thread_patch(Base, "method",
                                      lambda inner: lambda self, x: (k, inner(self, x))):
                        if mod.f(1) != 2 * k or Base().method(0) != (k, ("base", 0)):
                            errors.append(k)
                if mod.f(1) != 2:
                    errors.append(-k)
        except Exception as exc:  # a race in install / release
            errors.append(exc)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(3, 9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert mod.f is original and "method" in vars(Base) and not _patching._INSTALLED
    assert not isinstance(vars(Base)["method"], _patching._Dispatch)


def _package_patches():
    """Every patch context of the package's mutants and taps (name, context factory)."""
    from dpbounds.audit import mutation as am
    from dpbounds.audit.settings import tree_momentum as tm_settings
    from dpbounds.verify import mutants as vm
    from dpbounds.verify import sampling as vs

    return [
        ("node_count_minus_1", vm._node_count_minus_1),
        ("steps_off_by_one", vm._steps_off_by_one),
        ("skip_clipping", vm._skip_clipping),
        ("scaled_contribution", lambda: vm._skip_clipping(scale=2.0)),
        ("permutation_tap", lambda: vm.permutation_tap(lambda p: None)),
        ("noise_tap", vm.noise_tap),
        ("cyclic_batches", vs.cyclic_batches),
        ("unshuffled", vs.unshuffled),
        ("scaled_noise", lambda: am.scaled_noise(0.5)),
        ("shared_node_count_no_log", am.shared_node_count_no_log),
        ("shared_node_sensitivity_half", am.shared_node_sensitivity_half),
        ("shared_laplace_half_sensitivity", am.shared_laplace_half_sensitivity),
        ("scaled_laplace", lambda: am._scaled_laplace(0.5)),
        ("realised_batch", lambda: am._realised_batch(4)),
        ("reused_noise", am.reused_noise),
        ("wrong_sampling_rate", am.wrong_sampling_rate),
        ("coordinate_noise", am.coordinate_noise),
        ("trial_noise", am.trial_noise),
        ("noise_norm_sigma", am.noise_norm_sigma),
        ("tree_node_tap", tm_settings._tree_node_tap),
    ]


def _owners():
    import importlib

    from dpbounds.algorithms.tree_aggregation import TreeAggregator
    from dpbounds.backend import TrialRandom
    from dpbounds.objectives import Objective
    from dpbounds.privacy.mechanisms import SubsampledLaplaceMechanism

    mods = [importlib.import_module(m) for m in (
        "dpbounds.algorithms.tree_momentum", "dpbounds.algorithms.dp_sgd",
        "dpbounds.algorithms.momentum", "dpbounds.algorithms._step_kernels",
        "dpbounds.privacy.tree")]
    return [*mods, TrialRandom, Objective, SubsampledLaplaceMechanism, TreeAggregator]


def _view(owners) -> dict:
    """Each attribute of ``owners`` as the calling thread sees it (through a stand-in)."""
    out = {}
    for owner in owners:
        for name, raw in list(vars(owner).items()):
            if isinstance(raw, _patching._Dispatch):
                raw = raw._current()
            out[id(owner), name] = raw
    return out


@pytest.mark.parametrize("name,context", _package_patches(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_every_patch_of_the_package_is_seen_by_its_thread_only(name, context) -> None:
    owners = _owners()
    before = _view(owners)
    theirs: list = []
    mine = _while_another_thread_patches(context, lambda: _view(owners),
                                         lambda: theirs.append(_view(owners)))
    changed = [k[1] for k in before if theirs[0].get(k) is not before[k]]
    assert changed, f"{name} patched none of the owners checked (the test would be vacuous)"
    assert all(mine[k] is before[k] for k in before), \
        [k[1] for k in before if mine[k] is not before[k]]
    assert _view(owners) == before and not _patching._INSTALLED
