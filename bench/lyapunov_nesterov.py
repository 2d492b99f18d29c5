"""Benchmark: the noise-aware Lyapunov bound for Nesterov and the two-parameter family (issue 32
item 3, long horizons) against the PEP where it runs and the exact quadratic worst case.

Run:  python bench/lyapunov_nesterov.py > bench/lyapunov_nesterov_results.md

Per method, noise level and horizon T: the exact worst case over one-dimensional quadratics
(a lower bound), the PEP value (full SDP with all pairs for T <= 10, the banded relaxation with
window 2 for 10 < T <= 200) and its exactly checked certificate value, the Lyapunov bound
(default grid of 25 contractions, exact check included), their ratio and the CPU seconds
(``time.process_time``) of each. Then the smallest certified contraction at sigma = 0
(bisection on rho^2 with the exact check) against the quadratic rate and Nesterov's guarantee.
The Notes section of the results file is written by hand from the tables.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case
from dpbounds.pep import FixedStepMethod, pep_worst_case
from dpbounds.pep.lyapunov import _solve, _verify, lyapunov_bound

MU, L, E0 = 0.1, 1.0, 1.0
SQ = math.sqrt(MU / L)
METHODS = [
    ("NAG standard", FixedStepMethod.nesterov(1.0, (1 - SQ) / (1 + SQ))),
    ("NAG (0.5, 0.3)", FixedStepMethod.nesterov(0.5, 0.3)),
    ("family (0.6, 0.3, gamma 0.6)", FixedStepMethod(0.6, 0.3, 0.6)),
]
HORIZONS = [3, 6, 10, 30, 60, 100, 1000]


def _pep(m: FixedStepMethod, T: int, s2: float) -> tuple[float, float, float]:
    """(solver value, certified value or nan, CPU s)."""
    if T > 200:
        return math.nan, math.nan, math.nan
    t0 = time.process_time()
    kw = {} if T <= 10 else {"pairs": "banded", "window": 2}
    r = pep_worst_case(m, MU, L, T, initial_gap=E0, noise_variances=s2, **kw)
    cert = math.nan if r.certified_value is None else r.certified_value
    return r.value, cert, time.process_time() - t0


def _certified(m: FixedStepMethod, mu: float, rho2: float) -> bool:
    sol = _solve(m, mu, 1.0, 100, 1.0, 0.0, rho2)
    if sol is None:
        return False
    P, k, lam, nu = sol
    return _verify(m, mu, 1.0, Fraction(rho2), P, Fraction(float(max(k, 0.0))),
                   [Fraction(float(max(v, 0.0))) for v in lam], [Fraction(float(v)) for v in nu])


def main() -> None:
    print("# Noise-aware Lyapunov bound, Nesterov / two-parameter family: results\n")
    print(f"mu = {MU}, L = {L}, E0 = {E0}; PEP: full (all pairs) T <= 10, banded window 2 above; "
          "CPU s by `time.process_time` on the shared 2-core machine.\n")
    print("NAG standard: alpha = 1/L, beta = (1 - sqrt q) / (1 + sqrt q). PEP certified: the exact "
          "check of its dual certificate (nan: the check failed, the bare value is then not a "
          "proven bound). CPU PEP includes the certificate (second solve + exact check).\n")
    print("| method | s^2 | T | quadratic (exact) | PEP value | PEP certified | Lyapunov | "
          "Lyapunov / PEP value | rho^2 | CPU PEP | CPU Lyapunov |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, m in METHODS:
        for s2 in (0.0, 0.01):
            for T in HORIZONS:
                quad = quadratic_worst_case(MU, L, 1, alpha=m.alpha, beta=m.beta, gamma=m.gamma,
                                            steps=T, laplace_var=s2, initial_gap=E0).value
                pep, cert, tp = _pep(m, T, s2)
                ly = lyapunov_bound(m, MU, L, T, initial_gap=E0, noise_variance=s2)
                print(f"| {name} | {s2:g} | {T} | {quad:.4g} | {pep:.4g} | {cert:.4g} | "
                      f"{ly.value:.4g} | "
                      f"{ly.value / pep:.3g} | {ly.rho ** 2:.4f} | {tp:.2f} | "
                      f"{ly.cpu_seconds:.2f} |", flush=True)
    print("\n## Smallest certified rho^2 at sigma = 0 (standard parameters, bisection, 25 steps)\n")
    print("| kappa | quadratic (1-sqrt q)^2 | certified | Nesterov 1-sqrt q | CPU s |")
    print("|---|---|---|---|---|")
    for mu in (0.1, 0.01, 0.001):
        sq = math.sqrt(mu)
        m = FixedStepMethod.nesterov(1.0, (1 - sq) / (1 + sq))
        lo, hi = (1 - sq) ** 2, 1 - sq
        t0 = time.process_time()
        if not _certified(m, mu, hi):
            hi = 1.0
        for _ in range(25):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if _certified(m, mu, mid) else (mid, hi)
        print(f"| {1 / mu:g} | {(1 - sq) ** 2:.6f} | {hi:.6f} | {1 - sq:.6f} | "
              f"{time.process_time() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
