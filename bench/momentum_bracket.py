"""The proven bracket of a plug-in linear momentum method with a constant gamma (not 0, not
beta) tuned by worst-case error, before and after the fixed-gamma branch and bound (issue 33).

    PYTHONPATH=$PWD python bench/momentum_bracket.py [gamma mu max_horizon d] ...

One JSON line per problem: the tuned row, the method-independent lower bound (before), the
reported one (after), both gaps, and the CPU-s of ``proven_lower_bound`` (after) and of the
whole tune. Results: ``bench/momentum_bracket.md``.
"""

from __future__ import annotations

import json
import sys
import time

import dpbounds.tuning._linear_error as le
from dpbounds import extend as ex

PROBLEMS = [(0.5, 0.1, 30, 4), (0.5, 0.1, 30, 1), (1.5, 0.1, 30, 4), (0.5, 0.01, 100, 4),
            (1.5, 0.01, 100, 4), (0.5, 0.001, 300, 4)]


def plugin(gamma: float) -> ex.Method:
    def step(x, grad, noise, p, memory):
        prev = memory.get("prev", x)  # x_{-1} = x_0
        memory["prev"] = x
        y = x + gamma * (x - prev)
        return x + p["beta"] * (x - prev) - p["alpha"] * (grad(y) + noise)

    return ex.Method(f"momentum_gamma_{gamma:g}", step=step, mechanism="laplace",
                     neighbouring="replace-one",
                     sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                     linear=ex.LinearMomentum(alpha="alpha", beta="beta", gamma=gamma))


def run(gamma: float, mu: float, tmax: int, d: int) -> dict:
    orig = le.proven_lower_bound
    seen: dict = {}

    def timed(*args, **kwargs):
        t = time.process_time()
        out = orig(*args, **kwargs)
        seen["cpu"] = time.process_time() - t
        seen["before"] = orig(*args, **{**kwargs, "gamma": None})[0]
        return out

    le.proven_lower_bound = timed
    try:
        t = time.process_time()
        res = ex.tune(plugin(gamma), dict(mu=mu, L=1.0, d=d, N=1000, eps=1.0, S1=1.0, R=1.0),
                      objective="error", max_horizon=tmax)
        total = time.process_time() - t
    finally:
        le.proven_lower_bound = orig
    tu = res.tuned
    return dict(gamma=gamma, mu=mu, max_horizon=tmax, d=d, alpha=tu.alpha, beta=tu.beta,
                T=tu.horizon, attained=tu.worst_case, upper=tu.worst_case_upper,
                lower_before=seen["before"], lower_after=res.lower_bound,
                gap_before=tu.worst_case_upper / seen["before"] - 1, gap_after=res.certified_gap,
                cpu_lower_bound=seen["cpu"], cpu_tune_total=total, by=res.lower_bound_by)


if __name__ == "__main__":
    args = [float(v) for v in sys.argv[1:]]
    probs = ([(args[i], args[i + 1], int(args[i + 2]), int(args[i + 3]))
              for i in range(0, len(args), 4)] if args else PROBLEMS)
    for g, m, tm, dd in probs:
        print(json.dumps(run(g, m, tm, dd)), flush=True)
