"""CPU-seconds of the interactive CLI paths (issue 36 item 4): every ``COMMAND --help``, the
``--list`` pages and one bad input per command, each in a fresh ``python -m dpbounds`` process.

CPU is the child's user + sys (``resource.getrusage(RUSAGE_CHILDREN)`` around the run), the best
of ``--repeat`` runs (the machine may be shared: the minimum is the least disturbed). The target is
<= 0.5 CPU-s each. Run from the repository root::

    PYTHONPATH=$PWD python bench/bench_cli_latency.py [--repeat 3] [--markdown]

With ``PYTHONDONTWRITEBYTECODE=1`` in the environment and no ``__pycache__`` the package is
compiled from source on every run (an editable install never byte-compiles it); the timing then
includes that compile, so say which case a table measures.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

CASES: list[tuple[str, list[str]]] = [
    ("help", ["--help"]),
    *[("help", [c, "--help"]) for c in ("demo", "privacy", "bound", "compare", "tune", "rate",
                                        "audit", "verify", "calibrate")],
    ("help", ["tune", "hb", "--help"]),
    ("help", ["tune", "nag", "--help"]),
    ("help", ["rate", "hb", "--help"]),
    ("list", ["verify", "--list"]),
    ("list", ["audit", "--list"]),
    ("list", ["bound", "--list"]),
    ("error", ["demo", "--bogus"]),
    ("error", ["privacy", "--epsilon", "-1"]),
    ("error", ["bound", "no_such_theorem"]),
    ("error", ["compare", "--epsilon", "-1"]),
    ("error", ["tune", "no_such_method"]),
    ("error", ["tune", "hb", "--mu", "1", "--L", "10", "--epsilon", "-1"]),
    ("error", ["rate", "no_such_method"]),
    ("error", ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "nan", "--L", "1"]),
    ("error", ["audit", "dp_foo"]),
    ("error", ["audit", "dp_sgd", "--epsilon", "-1"]),
    ("error", ["audit", "plan", "nosuch"]),
    ("error", ["verify", "no.such"]),
    ("error", ["verify", "yang.sgd", "--trials", "0"]),
    ("error", ["verify", "yang.sgd", "--vary", "q"]),
    ("error", ["calibrate", "no_such_method", "--steps", "10"]),
    ("error", ["calibrate", "x", "--steps", "-3"]),
]


def run_once(argv: list[str]) -> tuple[float, float, int, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "dpbounds", *argv], capture_output=True,
                         text=True, env=os.environ.copy(), timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (out.stderr.strip() or out.stdout.strip()).splitlines()
    return cpu, wall, out.returncode, (last[-1] if last else "")[:70]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    print(f"python {sys.version.split()[0]}, PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, best of {a.repeat}")
    print("| kind | command | CPU-s | wall s | exit | last line |")
    print("|---|---|---:|---:|---:|---|")
    worst = 0.0
    for kind, argv in CASES:
        runs = [run_once(argv) for _ in range(a.repeat)]
        cpu = min(r[0] for r in runs)
        wall = min(r[1] for r in runs)
        worst = max(worst, cpu)
        rc, last = runs[-1][2], runs[-1][3].replace("|", "/")
        print(f"| {kind} | `dpbounds {' '.join(argv)}` | {cpu:.2f} | {wall:.2f} | {rc} | {last} |")
    print(f"\nworst: {worst:.2f} CPU-s (target <= 0.5)")


if __name__ == "__main__":
    main()
