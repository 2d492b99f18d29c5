"""Benchmark: the LMI-class heavy-ball tuner against a brute-force oracle (issue 19, item 2).

Run:  python bench/lmi_tuner_oracle.py OUT.json [--oracle-from OLD.json] [--only K ...]

For each problem (kappa = L/mu in 1..1e6, eps in 0.01..10; d, n, S1, E0, max_horizon varied,
horizons long enough that the bound says something; infeasible noise skipped by
``check_noise_fits``) it times one
``tune_heavy_ball(..., function_class="smooth_strongly_convex")`` (``time.process_time``) and
compares ``tuned.bound`` with the minimum of the same objective f(alpha, beta) found by an
independent brute-force search over the tuner's reach: its box, alpha L in [1e-3, 1.5], beta in
[0, 0.995], on the y = -log(1 - beta) scale (y = 0 is beta = 0 exactly, gradient descent),
extended by one width towards small alpha and beta -> 1 (alpha L >= 6.7e-7, beta <= 0.999975),
where the tuner's local searches (not its grids) may go; ``--extend 2`` gives the oracle two
widths (alpha L >= 4.4e-10, beta <= 1 - 1.25e-7), how far the tuner's reach grows when its
best point is on the edge of the first.
The check is tuned <= oracle * (1 + 1e-3); a tuned value far *below* the oracle would say the
oracle is not dense enough.

The oracle (this file's code, not the tuner's): an ``N_COARSE`` x ``N_COARSE`` grid, then, around
each of its ``N_STARTS`` best local minima, ``LEVELS`` zooms of a ``ZOOM`` x ``ZOOM`` grid over
+-1 cell of the previous level (the spacing halves each level: final spacing 1/2**LEVELS of a
coarse cell). f is :func:`dpbounds.tuning.heavy_ball._lmi_best` (the objective the tuner
minimises; ``None`` = no certificate = inf), evaluated through a cache.

``--oracle-from`` reuses the oracle minima of an earlier run for the problems whose setting is
unchanged (the objective does not depend on the tuner's search), so only the tuner is re-timed
there. Each row also has the tuner's proven floor at its point (``point_lower_bound``,
``point_gap``) and whether the bound is vacuous (not below E0). The JSON holds, per problem,
the setting, the oracle's minimum and argmin, the tuned bound and (alpha, beta), the objective
re-evaluated at the tuned (alpha, beta), the relative gap tuned/oracle - 1 and the CPU seconds
of the tune. Numbers are comparable only on the same machine and load.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from functools import partial

import numpy as np
from tqdm import tqdm

from dpbounds.bounds.strongly_convex.gradient_noise import check_noise_fits, dp_noise_level
from dpbounds.lmi.heavy_ball_lmi import HeavyBallLMI
from dpbounds.tuning import tune_heavy_ball
from dpbounds.tuning.heavy_ball import _lmi_best

# the oracle's sizes: a 49 x 49 grid of the tuner's reach (its box and the extension: the
# same spacing as a 25 x 25 grid of the box), then around each of its 4 best local minima 7
# zoom levels of 5 x 5 over +-1 cell (spacing halved each level: the last is 1/128 of a grid
# cell, 0.0024 in log alpha); about 2401 + 4 * 7 * 24 ~ 3000 evaluations per problem
N_COARSE, ZOOM, LEVELS, N_STARTS = 49, 5, 7, 4
#: the tuner's box (stated here, checked against the tuner's constants in main()):
#: alpha L in [1e-3, 1.5], beta in [0, 0.995]
ALPHA_L, BETA_MAX, EXTEND, EXTEND_MAX = (1e-3, 1.5), 0.995, 1, 2

# (kappa, L, eps, d, n, m, S1, E0, max_horizon)
PROBLEMS = [
    (1.0, 1.0, 1.0, 10, 10**5, None, 1.0, 1.0, 300),
    (1.0, 5.0, 0.01, 2, 10**6, None, 1.0, 10.0, 300),
    (2.0, 1.0, 10.0, 5, 10**4, None, 1.0, 1.0, 500),
    (5.0, 2.0, 0.1, 20, 10**5, None, 4.0, 1.0, 300),
    (10.0, 1.0, 0.5, 10, 10**4, None, 1.0, 0.1, 300),
    (30.0, 3.0, 1.0, 1, 10**3, None, 1.0, 1.0, 300),
    (100.0, 1.0, 0.03, 10, 10**6, None, 1.0, 1.0, 300),
    (100.0, 10.0, 3.0, 100, 10**5, None, 10.0, 10.0, 500),
    (255.14, 5.1028, 1.0, 20, 10**5, None, 40.0, 10.0, 300),
    (300.0, 1.0, 0.3, 5, 10**5, 10**3, 1.0, 1.0, 300),
    (1e3, 1.0, 10.0, 10, 10**5, None, 1.0, 1.0, 500),
    # kappa >= 1e3: horizons long enough for a bound below E0 (the former problems 11-19 had
    # max_horizon 300-500, where every bound is vacuous, above E0 = F(x_0) - F*, and the
    # objective is set by certificates on the edge of the certified region)
    (1e3, 100.0, 0.1, 10, 10**7, None, 1.0, 1.0, 3000),
    (3e3, 1.0, 1.0, 2, 10**7, None, 0.5, 5.0, 10**4),
    (1e4, 1.0, 0.01, 10, 10**9, None, 1.0, 1.0, 3 * 10**4),
    (1e4, 1.0, 5.0, 30, 10**8, None, 3.0, 1.0, 3 * 10**4),
    (3e4, 1.0, 0.3, 10, 10**9, 10**7, 1.0, 1.0, 10**5),
    (1e5, 1.0, 1.0, 10, 10**10, None, 1.0, 0.1, 3 * 10**5),
    (1e6, 1.0, 0.03, 10, 10**12, None, 1.0, 1.0, 10**7),
    (1e6, 1.0, 10.0, 1, 10**10, None, 0.1, 10.0, 10**7),
    (1e6, 50.0, 1.0, 50, 10**12, None, 5.0, 1.0, 10**7),
    (255.14, 5.1028, 1.0, 20, 10**5, None, 40.0, 10.0, 1000),  # Fig. 3 (the demo's problem)
]


def objective(kappa, L, eps, d, n, m, S, E0, Tmax, fresh=True):
    """f(x, y) with x = log alpha, y = -log(1 - beta): the tuner's objective, cached.

    ``fresh``: a new solver per point, as the tuner does since the oracle study (a reused one
    carries state between solves: certificates, hence f, differ by up to ~2% with the order
    of evaluation); ``--shared-solver``: one solver for all points, as the tuner did before.
    """
    mu, m = L / kappa, (n if m is None else m)
    lmi = HeavyBallLMI(backend="clarabel")
    cache: dict[tuple[float, float], float] = {}

    def noise(T):
        return dp_noise_level(S, d, n, m, eps, T)

    def f(x: float, y: float) -> float:
        key = (float(x), float(y))
        if key not in cache:
            r = _lmi_best(mu, L, math.exp(x), -math.expm1(-y), noise, Tmax, 2.0 * E0 / mu, E0,
                          HeavyBallLMI(backend="clarabel") if fresh else lmi)
            cache[key] = math.inf if r is None else r[0]
        return cache[key]

    return f, cache


def oracle(f, x_range, y_range):
    """Brute force: coarse grid, then nested zoom grids around its best local minima."""
    xs, ys = np.linspace(*x_range, N_COARSE), np.linspace(*y_range, N_COARSE)
    G = np.array([[f(x, y) for y in ys] for x in xs])
    pad = np.pad(G, 1, constant_values=np.inf)
    local = [(G[i, j], i, j) for i in range(N_COARSE) for j in range(N_COARSE)
             if np.isfinite(G[i, j]) and G[i, j] <= np.min(pad[i:i + 3, j:j + 3])]
    best = (math.inf, math.nan, math.nan)
    for _, i, j in sorted(local)[:N_STARTS]:
        cx, cy = xs[i], ys[j]
        hx, hy = xs[1] - xs[0], ys[1] - ys[0]
        for _ in range(LEVELS):
            window = [(f(x, y), x, y)
                      for x in np.clip(cx + np.linspace(-hx, hx, ZOOM), *x_range)
                      for y in np.clip(cy + np.linspace(-hy, hy, ZOOM), *y_range)]
            v, cx, cy = min(window)
            hx, hy = 2 * hx / (ZOOM - 1), 2 * hy / (ZOOM - 1)
            best = min(best, (v, cx, cy))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="JSON file to write")
    ap.add_argument("--oracle-from", help="reuse the oracle minima of this earlier JSON")
    ap.add_argument("--shared-solver", action="store_true",
                    help="one LMI solver for all points (the objective of the old tuner)")
    ap.add_argument("--only", type=int, nargs="*", help="problem indices to run")
    ap.add_argument("--extend", type=int, default=EXTEND,
                    help="widths of the oracle's reach beyond the box (the tuner's grows from "
                         f"{EXTEND} to at most {EXTEND_MAX} when its best point is on the edge)")
    args = ap.parse_args()
    if not EXTEND <= args.extend <= EXTEND_MAX:
        ap.error(f"--extend must lie in [{EXTEND}, {EXTEND_MAX}], got {args.extend}")
    from dpbounds.tuning import heavy_ball as hb
    if (hb._LMI_ALPHA_L, hb._LMI_BETA_MAX, hb._LMI_EXTEND, hb._LMI_EXTEND_MAX) != (
            ALPHA_L, BETA_MAX, EXTEND, EXTEND_MAX):
        raise SystemExit(f"the tuner's box changed: {hb._LMI_ALPHA_L}, {hb._LMI_BETA_MAX}, "
                         f"{hb._LMI_EXTEND}, {hb._LMI_EXTEND_MAX}")
    old = {}
    if args.oracle_from:
        with open(args.oracle_from) as fh:
            old = {r["index"]: r for r in json.load(fh)["rows"]}
    rows = []
    idx = [k for k in range(len(PROBLEMS)) if args.only is None or k in args.only]
    for k in tqdm(idx, desc="problems"):
        kappa, L, eps, d, n, m, S, E0, Tmax = p = PROBLEMS[k]
        try:
            check_noise_fits(S, n, n if m is None else m, eps, d)
        except ValueError:
            print(f"[{k}] skipped: noise does not fit", flush=True)
            continue
        f, cache = objective(*p, fresh=not args.shared_solver)
        # the tuner's reach: its box extended by --extend widths towards small alpha and
        # beta -> 1 (on log alpha and y = -log(1 - beta))
        lo, hi = math.log(ALPHA_L[0] / L), math.log(ALPHA_L[1] / L)
        x_range = (lo - args.extend * (hi - lo), hi)
        y_range = (0.0, -(1 + args.extend) * math.log1p(-BETA_MAX))
        t = time.process_time()
        same = k in old and old[k].get("oracle_extend", EXTEND) == args.extend and all(
            old[k][key] == val for key, val in zip(
            ("kappa", "L", "eps", "d", "n", "m", "S1", "E0", "max_horizon"), p))
        if same:
            o_val, o_x, o_y, o_n, o_cpu = (old[k]["oracle"], old[k]["oracle_x"],
                                           old[k]["oracle_y"], old[k]["oracle_evals"],
                                           old[k]["oracle_cpu_s"])
        else:
            o_val, o_x, o_y = oracle(f, x_range, y_range)
            o_n, o_cpu = len(cache), time.process_time() - t
        t = time.process_time()
        res = tune_heavy_ball(L / kappa, L, d=d, n=n, m=m, epsilon=eps, sensitivity=S,
                              initial_gap=E0, max_horizon=Tmax,
                              function_class="smooth_strongly_convex")
        cpu = time.process_time() - t
        a, b = res.tuned.alpha, res.tuned.beta
        # f at the tuned point, with a fresh solver (as the tuner evaluates since this study)
        again = _lmi_best(L / kappa, L, a, b,
                          partial(dp_noise_level, S, d, n, n if m is None else m, eps),
                          Tmax, 2.0 * E0 / (L / kappa), E0, HeavyBallLMI(backend="clarabel"))
        again = math.inf if again is None else again[0]
        in_box = (x_range[0] - 1e-9 <= math.log(a) <= x_range[1] + 1e-9
                  and -math.log1p(-b) <= y_range[1] + 1e-9)
        row = {"index": k, "kappa": kappa, "L": L, "eps": eps, "d": d, "n": n, "m": m, "S1": S,
               "E0": E0, "max_horizon": Tmax, "oracle": o_val, "oracle_x": o_x,
               "oracle_y": o_y, "oracle_evals": o_n, "oracle_cpu_s": o_cpu,
               "tuned": res.tuned.bound, "tuned_alpha": a, "tuned_beta": b,
               "tuned_reevaluated": again, "tuned_in_box": in_box,
               "gap": res.tuned.bound / o_val - 1.0, "tune_cpu_s": cpu,
               "vacuous": res.vacuous, "point_lower_bound": res.point_lower_bound,
               "point_gap": res.point_gap, "lower_bound": res.lower_bound,
               "oracle_extend": args.extend, "box_edge": res.box_edge}
        rows.append(row)
        _write(args.out, rows)  # after every problem: a run cut short keeps its rows
        print(f"[{k:2d}] kappa={kappa:<8g} eps={eps:<5g} oracle={o_val:.7g} "
              f"tuned={res.tuned.bound:.7g} gap={100 * row['gap']:+.4f}% "
              f"alpha*L={a * L:.4g} beta={b:.5g} in_box={in_box} vacuous={res.vacuous} "
              f"point_gap={100 * res.point_gap:.3g}% "
              f"re-eval={again:.7g} tune={cpu:.1f}s oracle={o_cpu:.1f}s/{o_n}", flush=True)
    worst = max(r["gap"] for r in rows)
    print(f"worst gap tuned/oracle - 1 = {100 * worst:+.4f}%; tune CPU total "
          f"{sum(r['tune_cpu_s'] for r in rows):.1f}s, mean "
          f"{np.mean([r['tune_cpu_s'] for r in rows]):.1f}s; oracle CPU total "
          f"{sum(r['oracle_cpu_s'] for r in rows):.1f}s")


def _write(path: str, rows: list[dict]) -> None:
    with open(path, "w") as fh:
        json.dump({"oracle": {"n_coarse": N_COARSE, "zoom": ZOOM, "levels": LEVELS,
                              "n_starts": N_STARTS}, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
