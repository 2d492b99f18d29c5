"""A study run by a thread pool gives the in-process result (an independent review, stop 64:
both tree studies crashed or failed their checks on a ``ThreadPoolExecutor(2)``).

A grid point's checks patch methods (the noise and permutation taps and the mutants replace
methods of the random streams). Set process-wide, two points run at once by threads of one
process read each other's draws. ``TheoremStudy.run_point`` holds a lock (stop 64), and the
patches are now seen only by the thread that made them (:mod:`dpbounds._patching`, stop 65).
Oracle: the same study in this process, no executor (each point's seed is ``(seed, j)``
wherever it runs). Without the lock the confined patches alone give that result; negative
control: without the lock and with the patches shared by all threads (what ``setattr`` did)
the thread pool's result differs or raises.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import subprocess
import sys

import pytest

from dpbounds.verify import scaling_study


def _without_seconds(res) -> dict:
    doc = json.loads(json.dumps(res.to_json(), default=repr))

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "seconds" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return strip(doc)


def _on_threads(theorem: str):
    with cf.ThreadPoolExecutor(2) as pool:
        return scaling_study(theorem, quick=True, progress=False, executor=pool)


@pytest.mark.parametrize("theorem", ["tran_cutkosky.alg1"])
def test_a_thread_pool_gives_the_in_process_result(theorem: str) -> None:
    here = scaling_study(theorem, quick=True, progress=False)
    assert _without_seconds(_on_threads(theorem)) == _without_seconds(here)


class NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_without_the_lock_the_confined_patches_alone_give_the_in_process_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dpbounds.verify.studies import _common

    here = _without_seconds(scaling_study("tran_cutkosky.alg1", quick=True, progress=False))
    monkeypatch.setattr(_common, "_RUN_LOCK", NoLock())
    assert _without_seconds(_on_threads("tran_cutkosky.alg1")) == here


_WITHOUT_LOCK = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("thread_test", sys.argv[1])
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
from dpbounds import _patching
from dpbounds.verify.studies import _common

here = t._without_seconds(t.scaling_study("tran_cutkosky.alg1", quick=True, progress=False))
_common._RUN_LOCK = t.NoLock()
shared = {}
_patching._stacks = lambda: shared  # one stack for every thread: what setattr did
differs = 0
for _ in range(3):  # the interleaving is the scheduler's: a few tries
    try:
        differs += t._without_seconds(t._on_threads("tran_cutkosky.alg1")) != here
    except Exception:  # a crash is interference too
        differs += 1
    if differs:
        break
print("INTERFERED" if differs else "SAME")
"""


def test_negative_control_without_the_lock_shared_patches_interfere() -> None:
    # in a process of its own: threads that patch and restore the same methods at once can
    # leave a patch installed, which would reach the tests run after this one
    out = subprocess.run([sys.executable, "-c", _WITHOUT_LOCK, __file__], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "INTERFERED"
