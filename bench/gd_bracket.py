"""Before/after of the proven bracket of the plug-in DP gradient descent's tuning by worst-case
error (examples/dp_gd_strongly_convex.py, `tune dp_gd_linear`): tuned certified upper end,
proven lower bound, factor upper/lower, which argument gave it, CPU-s per tune.

    PYTHONPATH=$PWD python bench/gd_bracket.py
"""
import json
import os
import sys
import time

from dpbounds import extend as ex

ex.load_plugins([os.path.join(os.path.dirname(__file__), "..", "examples",
                              "dp_gd_strongly_convex.py")], entry_points=False)
BASE = dict(d=100, N=100000, eps=1.0, delta=1e-5, L=1.0, mu=0.1, R=2.0, S1=0.5)
PROBLEMS = [
    ("example (mu .1, S1 .5, R 2, Tmax 300)", {}, 300),
    ("mu .1, Tmax 1000", {}, 1000),
    ("kappa 1e3 (mu 1e-3), Tmax 1000", dict(mu=1e-3), 1000),
    ("eps 0.01", dict(eps=0.01), 1000),
    ("eps 10", dict(eps=10.0), 1000),
    ("d 1, kappa 10, eps .1", dict(d=1, eps=0.1), 1000),
]
if __name__ == "__main__":
    rows = []
    for name, over, tmax in PROBLEMS:
        if len(sys.argv) > 1 and sys.argv[1] not in name:
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        r = ex.tune("dp_gd_linear", {**BASE, **over}, by="error", max_horizon=tmax)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        t = r.tuned
        row = dict(problem=name, alpha=t.alpha, T=t.horizon, attained=t.worst_case,
                   upper=t.worst_case_upper, lower=r.lower_bound,
                   factor=t.worst_case_upper / r.lower_bound, by=r.lower_bound_by[:40],
                   cpu_s=round(cpu, 1), wall_s=round(wall, 1))
        print(json.dumps(row), flush=True)
