"""Before/after of the proven bracket of a plug-in DP Nesterov's tuning by worst-case error
(issues #32/#33): the plug-in (``LinearMomentum(alpha, beta, gamma=beta)``, Laplace noise of
its own calibration) tuned by ``extend.tune(..., objective="error")``; the tuned certified
upper end, the proven lower bound before (the method-independent linear-MMSE/Chebyshev bound,
the only one for gamma != 0 before) and after (the larger of it and the Nesterov branch and
bound of ``dpbounds.tuning._certify_nesterov``), the factors upper/lower, CPU-s of the whole
tune and of the branch and bound alone.

    PYTHONPATH=$PWD python bench/nesterov_bracket.py [substring of a problem name]
"""
import json
import sys
import time

import numpy as np

from dpbounds import extend as ex
from dpbounds.tuning._certify_nesterov import certify_nesterov_minimum
from dpbounds.tuning._linear_error import proven_lower_bound


def _nag(x, grad, noise, p, memory):
    prev = memory.get("prev", x)  # x_{-1} = x_0
    memory["prev"] = x
    y = x + p["beta"] * (x - prev)
    return y - p["alpha"] * (grad(y) + noise)


METHOD = ex.Method("plugin_nag", step=_nag, mechanism="laplace",
                   sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                   linear=ex.LinearMomentum(alpha="alpha", beta="beta", gamma="beta"))
BASE = dict(L=1.0, N=1000.0, S1=1.0, R=1.0)
PROBLEMS = [  # (name, mu, d, eps, max_horizon)
    ("kappa 10, d 4, eps 1", 0.1, 4, 1.0, 300),
    ("kappa 10, d 1, eps 10", 0.1, 1, 10.0, 300),
    ("kappa 100, d 4, eps 1", 0.01, 4, 1.0, 1000),
    ("kappa 100, d 100, eps 0.1", 0.01, 100, 0.1, 1000),
    ("kappa 1e3, d 1, eps 1", 1e-3, 1, 1.0, 1000),
    ("kappa 1e4, d 4, eps 10", 1e-4, 4, 10.0, 1000),
]

if __name__ == "__main__":
    for name, mu, d, eps, tmax in PROBLEMS:
        if len(sys.argv) > 1 and sys.argv[1] not in name:
            continue
        prob = {**BASE, "mu": mu, "d": d, "eps": eps}
        t0, c0 = time.perf_counter(), time.process_time()
        r = ex.tune(METHOD, prob, objective="error", max_horizon=tmax)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        t = r.tuned

        def nv(T, _eps=eps):  # the plug-in's Laplace calibration: b_T = S1 T / (N eps)
            return 2.0 * (np.asarray(T, dtype=float) / (1000.0 * _eps)) ** 2

        assert abs(nv(t.horizon) / t.noise_variance - 1) < 1e-5
        before, _ = proven_lower_bound(mu, 1.0, d, noise_var=nv, initial_gap=1.0,
                                       max_horizon=tmax, heavy=False,
                                       best=t.worst_case_upper)
        c1 = time.process_time()
        bb = certify_nesterov_minimum(mu, 1.0, d, tmax, nv, 0.0, best=t.worst_case,
                                      initial_gap=1.0, any_noise=True)
        cpu_bb = time.process_time() - c1
        print(json.dumps(dict(problem=name, alpha_L=t.alpha, beta=t.beta, T=t.horizon,
                              attained=t.worst_case, upper=t.worst_case_upper,
                              lower_before=before, lower_after=r.lower_bound,
                              factor_before=t.worst_case_upper / before,
                              factor_after=t.worst_case_upper / r.lower_bound,
                              bb_over_attained=bb.lower / t.worst_case, boxes=bb.boxes,
                              by=r.lower_bound_by[:30], cpu_tune_s=round(cpu, 1),
                              wall_tune_s=round(wall, 1), cpu_bb_s=round(cpu_bb, 1))),
              flush=True)
