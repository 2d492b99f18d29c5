"""The proven bracket of the worst-case heavy-ball tuner: the method-independent linear-MMSE and
Chebyshev bound, and the reported one (max of it and heavy ball's branch and bound,
:mod:`dpbounds.tuning._certify_error`) before and after the refined certified upper end
(``quadratic_worst_case(..., refine=16)``) and step 6 of the branch and bound (the current
table: before = main at c0d820a, steps 0-5'), and the CPU of the branch and bound and of the
tune.

Run: ``PYTHONPATH=. python bench/worst_case_bracket.py`` (a few CPU-minutes: one full tune per
problem); writes ``bench/worst_case_bracket.md``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import dpbounds.tuning._certify_error as ce
import dpbounds.tuning.heavy_ball as hb
from dpbounds.tuning._lmi_lower import linear_method_lower_bound

# (label, mu, L, d, n, m, eps, S1, E0, Tmax)
PROBLEMS = [
    ("issue 32", 1e-3, 1.0, 100, 10**5, 10**4, 0.1, 1.0, 5.0, 3000),
    ("Fig. 3", 0.02, 5.1, 20, 10**5, 10**5, 1.0, 40.0, 10.0, 1000),
    ("kappa 1", 1.0, 1.0, 10, 10**4, 10**4, 1.0, 1.0, 1.0, 1000),
    ("kappa 4", 0.25, 1.0, 10, 10**4, 10**4, 0.3, 1.0, 1.0, 1000),
    ("kappa 10, eps 0.01", 0.1, 1.0, 20, 10**5, 10**5, 0.01, 1.0, 5.0, 1000),
    ("kappa 10, eps 10", 0.1, 1.0, 20, 10**5, 10**5, 10.0, 1.0, 5.0, 1000),
    ("kappa 100", 0.01, 1.0, 50, 10**5, 10**5, 1.0, 1.0, 1.0, 1000),
    ("kappa 100, m < n", 0.01, 1.0, 3, 10**3, 10**2, 0.3, 2.0, 0.5, 1000),
    ("kappa 1e3, d 1", 1e-3, 1.0, 1, 10**4, 10**4, 10.0, 1.0, 1.0, 1000),
    ("kappa 1e4", 1e-4, 1.0, 1000, 10**6, 10**5, 1.0, 1.0, 2.0, 2000),
    ("kappa 1e5", 1e-5, 1.0, 10, 10**6, 10**6, 1.0, 1.0, 1.0, 2000),
    ("kappa 1e6", 1e-6, 1.0, 10, 10**5, 10**5, 10.0, 1.0, 1.0, 1000),
]


#: measured on main before step 7 (the closed form of the oscillating mode) and the full
#: window of single horizons (the table of commit 1cc19a9, this machine, 2026-12-03, this
#: script): (certified upper end, reported lower bound, its gap as printed then, which bound
#: gave it, B&B CPU-s, tune CPU-s)
BEFORE = {
    "issue 32": (0.1633, 0.162, 0.00808, "B&B", 17.77, 30.3),
    "Fig. 3": (0.02406, 0.02385, 0.00908, "B&B", 14.91, 20.7),
    "kappa 1": (1e-07, 1e-07, 2.77e-08, "MI", 2.97, 6.6),
    "kappa 4": (0.0001175, 0.0001174, 0.000999, "B&B", 2.46, 4.9),
    "kappa 10, eps 0.01": (0.006203, 0.006197, 0.000994, "B&B", 2.58, 5.5),
    "kappa 10, eps 10": (3.016e-08, 3.013e-08, 0.000998, "B&B", 6.85, 10.8),
    "kappa 100": (8.563e-05, 8.338e-05, 0.027, "B&B", 16.09, 22.3),
    "kappa 100, m < n": (0.2434, 0.2407, 0.0112, "B&B", 8.26, 11.4),
    "kappa 1e3, d 1": (5.132e-05, 5.016e-05, 0.0231, "B&B", 24.99, 37.9),
    "kappa 1e4": (0.008803, 0.008482, 0.0378, "B&B", 26.26, 61.9),
    "kappa 1e5": (0.002868, 0.002652, 0.0818, "B&B", 9.27, 63.2),
    "kappa 1e6": (0.2115, 0.2101, 0.00659, "B&B", 6.89, 49.7),
}


NOTE = """What changed. Step 7 of the branch and bound (`dpbounds/tuning/_certify_error.py`,
DERIVED): at one eigenvalue per box where every point of the box has complex roots, the start
term and the noise are bounded from the closed form of the oscillating mode
(e_t = beta^(t/2) R cos(t theta - phi), h_j = beta^(j/2) sin((j+1) theta) / sin theta), with the
exact range of cos(theta) on the box: the phase's range is t times the box's width in theta,
so it stays tight at thousands of steps, where step 6's Taylor remainders (run to T = 256)
and step 5's sweep are loose (at L/mu = 1e5, T ~ 1250, the start bound was ~20% low on boxes
of relative width 1e-3). The eigenvalue is chosen at the centre's weakest interval (grids in
the angle and the eigenvalue, each point moved to the nearest peak of the start term: the
peaks near L are narrow), two rounds per box. The window of single horizons around the tuned
T* now covers all of [T*/sqrt 2, T* sqrt 2] (at most 1024, for T* <= 4096; it was at most 256
and only for T* <= 512): a leaf's weakest horizon moves across that range. The noise bounds,
the costliest part, are computed at the coarse partition's horizons (U_k grows with k, so
the value at the largest coarse k <= T0 bounds it from below), which cut the window's cost
from 71 to 22 CPU-s at L/mu = 1e5.

What is left. L/mu = 1e3 at d = 1 (2.0%) and m < n (1.1%) spend the box budget (16,000) on
leaves that are still ~1e-3 wide along the ridge of near-optimal (alpha, beta): the box's own
variation, not the bound's slack, is what remains there. L/mu = 1e5 and 1e6 stop at 0.3%
with the budget spent.
"""


HEADER = (
    "# Worst-case tuner: proven bracket, before vs after step 7 (the oscillating mode's closed "
    "form)\n\n"
    "gap = tuned worst case (certified upper end) / lower bound - 1; MI = linear-MMSE and "
    "Chebyshev (any linear method); the reported lower bound is max(MI, heavy ball's "
    "branch and bound, B&B). before = the committed table of 1cc19a9 (third-order step 6, "
    "single horizons around T* for T* <= 512); after = this script on main 2026-12-03 (step "
    "7, see below). CPU-s by time.process_time on a 2-vCPU AMD EPYC (Zen 3) shared with "
    "other jobs (load average 2-4 for both columns, measured on the same day); compare "
    "gaps first, CPU-s roughly.\n\n")


def main() -> None:
    spent: list[float] = []
    orig = ce.certify_error_minimum

    def timed(*a, **k):
        t = time.process_time()
        out = orig(*a, **k)
        spent.append(time.process_time() - t)
        return out

    hb.certify_error_minimum = timed
    rows = ["| problem | T_max | certified upper end before / after | MI lower (gap) | "
            "before: lower (gap), by | after: lower (gap), by | B&B CPU-s before / after | "
            "tune CPU-s before / after |",
            "|---|---|---|---|---|---|---|---|"]
    only = set(sys.argv[1:])  # labels to run (default: all)
    for label, mu, L, d, n, m, eps, S, E0, Tmax in PROBLEMS:
        if only and label not in only:
            continue
        spent.clear()
        t = time.process_time()
        res = hb.tune_heavy_ball(mu, L, d=d, n=n, m=m, epsilon=eps, sensitivity=S,
                                 initial_gap=E0, max_horizon=Tmax)
        total = time.process_time() - t
        old = linear_method_lower_bound(mu, L, d, n, m, eps, S, 2 * E0 / mu, E0, Tmax)
        up = res.tuned.worst_case_upper
        b_up, b_low, b_gap, b_by, b_bb, b_tune = BEFORE[label]
        rows.append(f"| {label} | {Tmax} | {b_up:.4g} / {up:.4g} | "
                    f"{old:.4g} ({up / old - 1:.3g}) | "
                    f"{b_low:.4g} ({b_gap:.3g}), {b_by} | "
                    f"{res.lower_bound:.4g} ({res.certified_gap:.3g}), "
                    f"{'B&B' if 'branch' in res.lower_bound_by else 'MI'} | "
                    f"{b_bb:.2f} / {sum(spent):.2f} | {b_tune:.1f} / {total:.1f} |")
        print(rows[-1], flush=True)
    if only:
        return  # a partial run prints its rows only
    Path(__file__).with_suffix(".md").write_text(HEADER + "\n".join(rows) + "\n\n" + NOTE)

if __name__ == "__main__":
    main()
