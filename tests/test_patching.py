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
