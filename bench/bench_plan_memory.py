"""Benchmark: the plans' memory estimates against the measured peaks (issue 36, "nothing that
eats memory": a plan that misses an array lets a study die instead of refusing it).

Each row runs ``python -m dpbounds verify THEOREM --vary V --quick --json --seed S`` in a
subprocess, one after another, and reads the child's own peak resident set (``os.wait4``'s
``ru_maxrss``, per child) beside the plan's ``estimated_memory_bytes`` (the JSON's regime). A
child that imports every study module gives the baseline (the interpreter and the imports,
which the plan does not count), so ``peak - baseline`` is what the study's arrays and its
compiled kernels' code generation took, to be compared with the estimate. Usage::

    PYTHONPATH=$PWD python bench/bench_plan_memory.py > out.jsonl       # ~4-6 CPU-min
    PYTHONPATH=$PWD python bench/bench_plan_memory.py --full 120 --theorems T --vary V
                                          # the full study (planned grid) at 120 CPU-s
    python bench/bench_plan_memory.py --table out.jsonl                 # markdown

Results: ``bench/bench_plan_memory.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

# the `dpbounds verify` children plan as on a fresh host (no cost cache: the probes run);
# DPBOUNDS_COST_CACHE=FILE measures them with one
os.environ.setdefault("DPBOUNDS_COST_CACHE", "off")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify_inconclusive import sweep_main  # noqa: E402  (the same study sweep)

MIB = 2.0**20


def _child(cmd: list[str], timeout: float) -> tuple[int, str, float, float, float]:
    """``(exit status, stdout, peak RSS MiB, CPU s, wall s)`` of one child process."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    # Linux reports ru_maxrss in KiB
    return (proc.returncode, text, usage.ru_maxrss / 1024.0,
            usage.ru_utime + usage.ru_stime, wall)


#: A child that imports every study module and the algorithms, and runs nothing.
_IMPORTS = ("import importlib, pkgutil, dpbounds.verify.studies as s, dpbounds.algorithms, "
            "dpbounds.verify.study\n"
            "for m in pkgutil.iter_modules(s.__path__):\n"
            "    importlib.import_module('dpbounds.verify.studies.' + m.name)")


def baseline(timeout: float) -> float:
    """Peak RSS (MiB) of a process that imports every study and runs none."""
    return _child([sys.executable, "-c", _IMPORTS], timeout)[2]


#: ``--full S``: the full (planned, not quick) study at a CPU budget of S seconds
_FULL: list[float] = []


def one(theorem: str, vary: str, seed: int, timeout: float) -> dict:
    mode = ["--max-seconds", f"{_FULL[0]:g}"] if _FULL else ["--quick"]
    cmd = [sys.executable, "-m", "dpbounds", "verify", theorem, "--vary", vary, *mode,
           "--json", "--seed", str(seed)]
    rc, text, peak, cpu, wall = _child(cmd, timeout)
    row: dict = dict(theorem=theorem, vary=vary, seed=seed, rc=rc, peak_mib=round(peak, 1),
                     cpu_s=round(cpu, 1), wall_s=round(wall, 1),
                     mode=f"full, --max-seconds {_FULL[0]:g}" if _FULL else "quick")
    try:
        regime = json.loads(text).get("regime", {})
    except json.JSONDecodeError:
        row["estimate_mib"] = None
        return row
    est = regime.get("estimated_memory_bytes")
    row["estimate_mib"] = None if est is None else round(float(est) / MIB, 1)
    return row


def table(path: str) -> str:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    base = next((r["baseline_mib"] for r in rows if "baseline_mib" in r), 0.0)
    out = [f"Baseline (every study module imported, nothing run): {base:.0f} MiB.", "",
           "| study | exit | estimate MiB | peak MiB | peak - baseline MiB | (peak - baseline) / "
           "estimate | CPU s |", "|---|---|---|---|---|---|---|"]
    worst = 0.0
    for r in rows:
        if "theorem" not in r:
            continue
        extra = r["peak_mib"] - base
        est = r.get("estimate_mib")
        ratio = extra / est if est else float("nan")
        worst = max(worst, ratio) if ratio == ratio else worst
        mode = "" if r.get("mode", "quick") == "quick" else f" ({r['mode']})"
        out.append(f"| `{r['theorem']} --vary {r['vary']}`{mode} | {r['rc']} | {est} | "
                   f"{r['peak_mib']:.0f} | {extra:.0f} | {ratio:.2f} | {r['cpu_s']} |")
    out += ["", f"Largest (peak - baseline) / estimate: {worst:.2f}."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--full" in args:  # taken out here: the shared sweep's parser does not know it
        i = args.index("--full")
        _FULL.append(float(args[i + 1]))
        del args[i : i + 2]
    return sweep_main(args, __doc__, one, table,
                      first=lambda timeout: {"baseline_mib": round(baseline(timeout), 1)})


if __name__ == "__main__":
    raise SystemExit(main())
