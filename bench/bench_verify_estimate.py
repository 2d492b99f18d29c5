"""Benchmark: a quick ``verify`` study's CPU estimate against the CPU its runs take, and what
planning costs (issue 36 item 4: the estimate within 2x, planning cheap). Speed is measured
here, not asserted in a test (timings on a shared machine vary).

Run:  python bench/bench_verify_estimate.py [STUDY ...]   (default: four quick studies)
      python bench/bench_verify_estimate.py --full VAR STUDY ...   (full planned studies
      over VAR = N, d or eps at the default --max-seconds 900)

Per study: the estimate of the runs (``estimated_total_seconds``), the runs' CPU (from the plan
to the result, ``time.process_time``), their ratio, and the planning CPU (imports excluded).
Measured 2026-12-02 (AMD EPYC, 2 vCPU, load 6-14), yang.sgd: estimate 2.93 vs runs 2.9 CPU-s
(was 0.73), planning 3.7 CPU-s (was 11.9).
"""

from __future__ import annotations

import platform
import sys
import time

from dpbounds.verify import scaling_study

STUDIES = ("strongly_convex.nag", "yang.sgd", "tran_cutkosky.alg1", "tran_cutkosky.alg2")


def main() -> None:
    print(platform.processor() or platform.machine())
    args = sys.argv[1:]
    var = None
    if args[:1] == ["--full"]:
        var, args = args[1], args[2:]
    for name in args or STUDIES:
        at: dict[str, float] = {}

        def on_plan(reg: dict[str, object], at: dict[str, float] = at) -> None:
            at["plan"] = time.process_time()
            at["est"] = float(reg["estimated_total_seconds"])  # type: ignore[arg-type]

        t0 = time.process_time()
        if var is None:
            scaling_study(name, quick=True, estimate=True, on_plan=on_plan)
        else:
            scaling_study(name, vary={var: None}, estimate=True, on_plan=on_plan)
        runs = time.process_time() - at["plan"]
        label = name if var is None else f"{name} --vary {var}"
        print(f"{label:<40} estimate {at['est']:6.2f} s  runs {runs:6.2f} s  "
              f"ratio {at['est'] / runs:5.2f}  planning {at['plan'] - t0:6.2f} s CPU",
              flush=True)


if __name__ == "__main__":
    main()
