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


#: measured on main before step 8 (start and noise bounded together; the table of commit
#: a2226d5, this machine, 2026-12-03, this script): (certified upper end, reported lower
#: bound, its gap as printed then, which bound gave it, B&B CPU-s, tune CPU-s)
BEFORE = {
    "issue 32": (0.1633, 0.1631, 0.001, "B&B", 9.69, 16.9),
    "Fig. 3": (0.02406, 0.02404, 0.000999, "B&B", 5.10, 9.0),
    "kappa 1": (1e-07, 1e-07, 2.77e-08, "MI", 3.45, 5.6),
    "kappa 4": (0.0001175, 0.0001174, 0.000999, "B&B", 1.82, 3.2),
    "kappa 10, eps 0.01": (0.006203, 0.006197, 0.000999, "B&B", 1.80, 3.6),
    "kappa 10, eps 10": (3.016e-08, 3.013e-08, 0.000998, "B&B", 2.97, 5.2),
    "kappa 100": (8.563e-05, 8.555e-05, 0.001, "B&B", 4.00, 7.8),
    "kappa 100, m < n": (0.2434, 0.2408, 0.0108, "B&B", 8.79, 10.6),
    "kappa 1e3, d 1": (5.132e-05, 5.031e-05, 0.02, "B&B", 16.55, 25.4),
    "kappa 1e4": (0.008803, 0.008794, 0.00101, "B&B", 17.25, 45.9),
    "kappa 1e5": (0.002868, 0.00286, 0.00295, "B&B", 28.53, 69.0),
    "kappa 1e6": (0.2115, 0.211, 0.0026, "B&B", 19.59, 58.3),
}


NOTE = """What changed. Step 8 of the branch and bound (`dpbounds/tuning/_certify_error.py`,
DERIVED): at step 6's eigenvalue the start term and the noise are bounded together, by Taylor's
formula of their sum with the exact gradient at the box's centre (the start falls where the
noise grows along the ridge of near-optimal (alpha, beta), so adding separate least values lost
the box's first-order variation of each); for d >= 2 the other directions' noise at mu or L is in
the same sum. Step 6's majorants of h's convolution powers use |h_j| <= beta^(j/2) / sin(theta)
where the whole box has complex roots (4e4 times smaller at n = 150 than (j + 1) rho^j's); at mu
(or L) steps 1, 1' and 2's bounds at the same eigenvalue are paired with step 6's; a cell still
below the threshold gets a second eigenvalue away from the first (the centre's value can peak at
mu, where the bound is loose, with a peak near L within 1%); step 7 runs at 4 of a box's weakest
intervals (was 2; the rounds after the second, and the second eigenvalue, only on boxes within
2% of the threshold).

What is left. L/mu = 1e5 and 1e6 stop at 0.26% with the box budget spent (T* = 1246 at
L/mu = 1e5:
step 6 and so step 8 are not run above T = 256; run to 2048 they cost 4.6x the CPU and gained
nothing at L/mu = 1e5, measured: 224 against 49 CPU-s).

Paired CPU (the branch and bound alone, `certify_error_minimum` on the tune's own arguments, old
= e0b713b and new run one after the other under the same load, 2026-12-03 22:08-22:21 UTC): kappa
1 4.59 -> 5.56 CPU-s, Fig. 3 6.22 -> 8.23, kappa 100 4.83 -> 6.24, issue 32 12.17 -> 15.78 (the
price of the tighter bound where the gap was already at the threshold), m < n 9.64 -> 9.53 and
kappa 1e3, d 1 23.6 -> 17.1 (both now close: 8,299 and 9,191 boxes, were 16,000).
"""


HEADER = (
    "# Worst-case tuner: proven bracket, before vs after step 8 (start and noise bounded "
    "together)\n\n"
    "gap = tuned worst case (certified upper end) / lower bound - 1; MI = linear-MMSE and "
    "Chebyshev (any linear method); the reported lower bound is max(MI, heavy ball's "
    "branch and bound, B&B). before = the committed table of a2226d5 (step 7, the closed "
    "form of the oscillating mode); after = this script on main 2026-12-03 (step 8, see "
    "below). CPU-s by time.process_time on a 2-vCPU AMD EPYC (Zen 3) shared with other "
    "jobs (load average 2-4 for both columns, measured on the same day); compare gaps "
    "first, CPU-s roughly.\n\n")


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
