"""CPU-seconds of test collection (issue 36 item 4: <= 10 CPU-s), and where they go.

Each pytest process (each xdist worker too) imports every test module before it runs a test.
Three measurements, each a fresh ``python -m pytest --collect-only -q -p no:cacheprovider``
(child user + sys from ``resource.getrusage(RUSAGE_CHILDREN)``, best of ``--repeat``):

* ``as is``: the environment as given. With ``PYTHONDONTWRITEBYTECODE=1`` (set on the dev
  machines of this project) or on a fresh checkout (CI) pytest rewrites the asserts of every
  test module and Python compiles every module of the package, on every run;
* ``cached``: ``PYTHONDONTWRITEBYTECODE`` unset and ``PYTHONPYCACHEPREFIX`` a fresh temporary
  folder (the working tree is not written), after one run that fills it: the rewritten test
  modules and the package's bytecode are read back, what a second run on a developer's machine
  pays;
* ``rewrite``: in this process, parse + pytest's assertion rewrite + compile of every test
  module and conftest (what ``cached`` saves on the test side), against parse + compile without
  the rewrite.

Run from the repository root::

    PYTHONPATH=$PWD python bench/bench_collection.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]


def collect(env: dict[str, str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(COMMAND, capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.stdout.strip().splitlines()[-1]


def rewrite_cost() -> tuple[int, int, float, float]:
    from _pytest.assertion.rewrite import rewrite_asserts

    files = sorted(p for p in (ROOT / "tests").rglob("*.py")
                   if p.name == "conftest.py" or p.name.startswith("test_"))
    sources = [(str(p), p.read_bytes()) for p in files]
    t0 = time.process_time()
    for name, src in sources:
        compile(ast.parse(src, filename=name), name, "exec", dont_inherit=True)
    plain = time.process_time() - t0
    asserts = 0
    t0 = time.process_time()
    for name, src in sources:
        tree = ast.parse(src, filename=name)
        asserts += sum(isinstance(n, ast.Assert) for n in ast.walk(tree))
        rewrite_asserts(tree, src, name, None)
        compile(tree, name, "exec", dont_inherit=True)
    return len(files), asserts, plain, time.process_time() - t0 + 0.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    env = os.environ.copy()
    print(f"python {sys.version.split()[0]}, PYTHONDONTWRITEBYTECODE="
          f"{env.get('PYTHONDONTWRITEBYTECODE', '')!r}, best of {a.repeat}")
    runs = [collect(env) for _ in range(a.repeat)]
    cpu, wall, last = min(runs)
    print(f"as is:   {cpu:6.2f} CPU-s  {wall:6.2f} s wall   ({last})")
    with tempfile.TemporaryDirectory() as prefix:
        cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = prefix
        collect(cached)  # fills the cache
        runs = [collect(cached) for _ in range(a.repeat)]
        cpu, wall, last = min(runs)
        print(f"cached:  {cpu:6.2f} CPU-s  {wall:6.2f} s wall   ({last})")
    files, asserts, plain, rewritten = rewrite_cost()
    print(f"rewrite: {files} test modules and conftests, {asserts} asserts: parse + compile "
          f"{plain:.2f} CPU-s; parse + assertion rewrite + compile {rewritten:.2f} CPU-s")


if __name__ == "__main__":
    main()
