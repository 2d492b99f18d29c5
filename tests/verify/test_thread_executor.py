"""A study run by a thread pool gives the in-process result (an independent review, stop 64:
both tree studies crashed or failed their checks on a ``ThreadPoolExecutor(2)``).

A grid point's checks patch process-wide state (the noise and permutation taps and the
mutants replace methods of the random streams), so two points run at once by threads of one
process read each other's draws; ``TheoremStudy.run_point`` now holds a lock. Oracle: the
same study in this process, no executor (each point's seed is ``(seed, j)`` wherever it
runs). Negative control: without the lock the thread pool's result differs or raises.
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


_WITHOUT_LOCK = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("thread_test", sys.argv[1])
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
from dpbounds.verify.studies import _common

class NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

here = t._without_seconds(t.scaling_study("tran_cutkosky.alg1", quick=True, progress=False))
_common._RUN_LOCK = NoLock()
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


def test_negative_control_without_the_lock_threads_interfere() -> None:
    # in a process of its own: threads that patch and restore the same methods at once can
    # leave a patch installed, which would reach the tests run after this one
    out = subprocess.run([sys.executable, "-c", _WITHOUT_LOCK, __file__], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "INTERFERED"
