"""Benchmark: DP-NAG / DP-MASG horizons and noise schedules chosen by the worst case (issue 32
item 5) against Remark 4.1's choice (the bound's), on the problems of
``bench/worst_case_tuning.py``.

Run:  python bench/worst_case_nag.py OUT.json [--only K ...]

Per problem and method: the tuned row's horizon, certified worst case (``upper``), proven
lower bound on the best (horizon, schedule) over every horizon <= max_horizon (``lower``;
before the horizon proof: on the best schedule at the tuned horizon only), the Remark 4.1
row's horizon and worst case, their ratio, the CPU seconds of ``tune_nesterov``
(``time.process_time``), and a horizon oracle: the best certified worst case (grid
oversampling 16) over every ``step``-th horizon of [T/2, 2T] (``step = max(1, T // 20)``),
each with its own worst-case schedule (``oracle_gap`` = tuned / oracle - 1; negative: the
tuner's horizon is better than every one the oracle tried). ``max_horizon`` is capped at 3000
here (the tuner's cost grows like T^2 in the certification).
"""

from __future__ import annotations

import argparse
import json
import time

from worst_case_tuning import PROBLEMS, cpu_model  # type: ignore[import-not-found]

from dpbounds.bounds.strongly_convex.gradient_noise import subsampling_variance
from dpbounds.bounds.strongly_convex.nesterov import masg_schedule, nesterov_schedule
from dpbounds.tuning import tune_nesterov
from dpbounds.tuning._worst_case_allocation import best_allocation
from dpbounds.tuning.nesterov import _run_arrays


def _oracle(p, method, T0):
    m = p.get("m", p["n"])
    s2 = subsampling_variance(p["sensitivity"], p["n"], m)
    Tmax = min(p["max_horizon"], 3000)
    lo, hi = max(1, T0 // 2), min(Tmax, 2 * T0)
    best = float("inf")
    for T in range(lo, hi + 1, max(1, T0 // 20)):
        sched = (nesterov_schedule(1.0 / p["L"], T) if method == "nag"
                 else masg_schedule(p["mu"], p["L"], horizon=T))
        steps, mom = _run_arrays(method, sched, p["mu"])
        got = best_allocation(p["mu"], p["L"], p["d"], steps, mom, mom,
                              sensitivity=p["sensitivity"], n=p["n"], m=m,
                              epsilon=p["epsilon"], sampling_var=s2,
                              initial_gap=p["initial_gap"], oversampling=16)
        best = min(best, got.upper)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", type=int, nargs="*")
    args = ap.parse_args()
    out = {"cpu": cpu_model(), "problems": []}
    for k, p in enumerate(PROBLEMS):
        if args.only and k not in args.only:
            continue
        q = dict(p, max_horizon=min(p["max_horizon"], 3000))
        t0 = time.process_time()
        res = tune_nesterov(**q, reference_horizons=())
        cpu_tune = time.process_time() - t0
        rows = {c.label: c for c in res.choices}
        entry = {"k": k, "setting": q, "cpu_tune_s": cpu_tune, "methods": {}}
        for method, name in (("nag", "DP-NAG"), ("masg", "DP-MASG")):
            tuned = rows[f"{name} tuned by worst case"]
            remark = rows[f"{name}-opt (Remark 4.1 T)"]
            oracle = _oracle(q, method, tuned.horizon)
            entry["methods"][method] = {
                "T": tuned.horizon, "upper": tuned.worst_case_upper,
                "lower": tuned.worst_case_lower,
                "gap": tuned.worst_case_upper / tuned.worst_case_lower - 1,
                "searched": tuned.horizons_searched, "remark_T": remark.horizon,
                "remark_upper": remark.worst_case_upper,
                "remark_over_tuned": remark.worst_case_upper / tuned.worst_case_upper,
                "oracle": oracle, "oracle_gap": tuned.worst_case_upper / oracle - 1}
        out["problems"].append(entry)
        print(json.dumps({"k": k, "cpu": round(cpu_tune, 2),
                          **{m: {kk: (round(v, 4) if isinstance(v, float) else v)
                                 for kk, v in e.items() if kk in ("T", "upper", "gap",
                                                                  "remark_over_tuned",
                                                                  "oracle_gap")}
                             for m, e in entry["methods"].items()}}), flush=True)
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
