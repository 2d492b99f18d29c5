"""How many quick ``verify`` studies end INCONCLUSIVE by default, and what would decide each
(issue 34 item 6's closing note).

Each row runs ``python -m dpbounds verify THEOREM --vary V --quick --json --seed S`` in a
subprocess (the CLI as a user runs it), one after another (never in parallel: the machine is
shared), for every theorem of ``verify --list`` and every swept variable (``d``, ``N``,
``eps``), and records the exit status (0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2/4 other), the JSON's
``status`` and ``inconclusive`` reasons (each names what would decide it), the failing
verdicts, and the child's CPU seconds (user + sys) and wall time. Usage::

    PYTHONPATH=$PWD python bench/verify_inconclusive.py > out.jsonl          # ~15-30 CPU-min
    PYTHONPATH=$PWD python bench/verify_inconclusive.py --vary d --theorems \
        strongly_convex.nag > one.jsonl
    python bench/verify_inconclusive.py --table out.jsonl                     # markdown

The table has one row per study: exit status, CPU s, and each reason shortened to its
decision (``needs``: an informative grid, ``--trials N``, a longer run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

# the `dpbounds verify` children plan as on a fresh host (no cost cache: the probes run);
# DPBOUNDS_COST_CACHE=FILE measures them with one
os.environ.setdefault("DPBOUNDS_COST_CACHE", "off")

VARY = ("d", "N", "eps")


def theorems() -> list[str]:
    """The theorem ids ``dpbounds verify --list`` prints (lines starting in column 0, up to
    the problems' section)."""
    out = subprocess.run([sys.executable, "-m", "dpbounds", "verify", "--list"],
                         capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        if line.startswith("verification problems"):
            break
        if line and not line[0].isspace():
            names.append(line.split()[0])
    return names


def one(theorem: str, vary: str, seed: int, timeout: float) -> dict:
    """Run one quick study; its exit status, status, reasons, failing verdicts and cost."""
    cmd = [sys.executable, "-m", "dpbounds", "verify", theorem, "--vary", vary, "--quick",
           "--json", "--seed", str(seed)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ))
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        rc, stdout, stderr = -1, "", f"timed out after {timeout} s"
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row: dict = dict(theorem=theorem, vary=vary, seed=seed, rc=rc, cpu_s=round(cpu, 1),
                     wall_s=round(wall, 1))
    try:
        res = json.loads(stdout)
    except json.JSONDecodeError:
        row.update(status="no JSON", error=stderr.strip().splitlines()[-3:])
        return row
    row.update(status=res.get("status"), inconclusive=res.get("inconclusive", []),
               values=res.get("values"),
               failed=[str(v.get("name", "")) for v in res.get("verdicts", [])
                       if v.get("gating", True) and v.get("status") == "no"])
    return row


def _decision(reason: str) -> str:
    """A reason shortened to what it is about and what would decide it."""
    if "vacuous at every point" in reason:
        return ("utility bound vacuous at every grid point -> informative grid "
                "(--vary N --grid informative)")
    head, _, need = reason.partition(": ")
    row = head.split(";")[0].split(" (")[0].strip()
    m = re.search(r"--trials (\d+)", reason)
    n = re.search(r"(T >= \d+[^;,)]*|\d+ epochs[^;,)]*)", reason)
    what = (f"--trials {m.group(1)}" if m else n.group(1) if n else need.strip()[:90])
    return f"{row[:70]} -> {what}"


def table(path: str) -> str:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    out = ["| study | exit | status | CPU s | why INCONCLUSIVE -> what would decide it |",
           "|---|---|---|---|---|"]
    for r in rows:
        reasons = sorted({_decision(x) for x in r.get("inconclusive", [])})
        fail = "; ".join(r.get("failed", []))[:200]
        why = ("FAIL: " + fail if r["rc"] == 1 else "<br>".join(reasons) if reasons else "-")
        out.append(f"| `{r['theorem']} --vary {r['vary']}` | {r['rc']} | {r['status']} | "
                   f"{r['cpu_s']} | {why} |")
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["status"])] = counts.get(str(r["status"]), 0) + 1
    out.append("")
    out.append("Counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
               + f" (of {len(rows)}; CPU {sum(r['cpu_s'] for r in rows):.0f} s in all)")
    return "\n".join(out)


def sweep_main(argv: Sequence[str] | None, doc: str, run_one: Callable[..., dict],
               make_table: Callable[[str], str],
               first: Callable[[float], dict] | None = None) -> int:
    """The command line of a sweep over every quick study (this bench's and
    ``bench_plan_memory.py``'s): ``run_one(theorem, vary, seed, timeout)`` prints one JSON
    line per study, after ``first(timeout)`` if given; ``--table`` prints ``make_table``."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--theorems", nargs="+", default=None)
    p.add_argument("--vary", nargs="+", default=list(VARY), choices=VARY)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--table", metavar="JSONL", help="print the markdown table of a results file")
    args = p.parse_args(argv)
    if args.table:
        print(make_table(args.table))
        return 0
    if first is not None:
        print(json.dumps(first(args.timeout)), flush=True)
    for th in args.theorems or theorems():
        for v in args.vary:
            print(json.dumps(run_one(th, v, args.seed, args.timeout)), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return sweep_main(argv, __doc__, one, table)


if __name__ == "__main__":
    raise SystemExit(main())
