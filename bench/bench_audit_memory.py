"""Benchmark: ``audit``'s memory estimate against the measured peak (issue 36, "nothing that
eats memory": an audit whose estimate is below what it holds can die instead of being refused
by ``--max-memory-gb``).

Each row runs ``python -m dpbounds audit NAME --trials N --json --quiet`` in a child process,
one after another, and reads the child's peak resident set (``os.wait4``'s ``ru_maxrss``)
beside the ``estimated_memory_bytes`` the audit compared with its budget
(:func:`dpbounds.audit.runner.memory_estimate`: the interpreter's base plus bytes per stored
feature value, three sets of runs). ``dpbounds audit plan NAME`` prints the same estimate per
row. Usage::

    PYTHONPATH=$PWD python bench/bench_audit_memory.py            # ~6 CPU-min, markdown
    PYTHONPATH=$PWD python bench/bench_audit_memory.py --full     # the plans' runs, ~8 CPU-min

Results: ``bench/bench_audit_memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

MIB = 2.0**20

#: (audit, runs per data set): each audit's default runs, and 5-20x that for the slope
CASES = (("dp_heavy_ball", 10_000), ("dp_heavy_ball", 200_000),
         ("dp_gd_gaussian_d4", 40_000), ("dp_gd_gaussian_d4", 200_000),
         ("dp_sgd", 40_000), ("dp_sgd", 200_000),
         ("tree_momentum_nsgd_T8", 50_000), ("dp_agd", 40_000))
#: ``--full``: the runs ``dpbounds audit plan all`` asks for (the largest finite row of each
#: audit within the 4 GB budget, at the default target ratio 0.9; seed 0, 2026-12-04)
FULL_CASES = (("sensitivity_reduced_nsgd", 1_020_800), ("tree_momentum_nsgd_T3", 1_059_200),
              ("dp_sgd_batched_attaining", 521_600), ("dp_nsgd_batched", 356_000),
              ("dp_gd_gaussian_d4", 170_000), ("dp_agd", 117_200),
              ("tree_momentum_nsgd_T8", 116_000))


def _child(cmd: list[str], timeout: float) -> tuple[int, str, float, float]:
    """``(exit status, stdout, peak RSS MiB, CPU s)`` of one child process."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        out.seek(0)
        text = out.read()
    return (os.waitstatus_to_exitcode(status), text, usage.ru_maxrss / 1024.0,
            usage.ru_utime + usage.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    ap.add_argument("--full", action="store_true",
                    help="the runs the audits' plans ask for (FULL_CASES) instead of CASES")
    args = ap.parse_args(argv)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    print(f"CPU: {cpu}, {os.cpu_count()} logical CPUs; Python {platform.python_version()}\n")
    print("| audit | runs / set | features | exit | estimate MiB | peak MiB | peak / estimate "
          "| CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in FULL_CASES if args.full else CASES:
        cmd = [sys.executable, "-m", "dpbounds", "audit", name, "--trials", str(runs),
               "--json", "--quiet"]
        rc, text, peak, cpu_s = _child(cmd, args.timeout)
        try:
            res = json.loads(text)
            est, k = res["estimated_memory_bytes"] / MIB, res["features"]
        except (json.JSONDecodeError, KeyError, TypeError):
            est, k = float("nan"), "?"
        print(f"| {name} | {runs:,} | {k} | {rc} | {est:.0f} | {peak:.0f} | "
              f"{peak / est:.2f} | {cpu_s:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
