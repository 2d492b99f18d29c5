"""Benchmark: 100x100 heavy-ball LMI rate map (Kuru et al. Prop. 3.4) vs the naive approach.

Run:  .venv/bin/python bench/bench_rate_map.py [--size 100] [--processes 2] [--naive-points 40]
      .venv/bin/python bench/bench_rate_map.py --accuracy

* fast: :func:`dpbounds.lmi.rate_map.lmi_rate_map` (SDP set up once per worker, closed-form lower
  bound, continuation brackets, Illinois search, 2 processes), every certificate verified;
* naive: rebuild the cvxpy problem and solve it at every step of a plain bisection on (0, 1)
  (:func:`dpbounds.lmi.heavy_ball_lmi.naive_heavy_ball_lmi_rate`; absolute margin 1e-7, no
  verification), timed on a random subset of the same grid and extrapolated to the full grid
  (stated in the output).

Both run in this one process run, side by side, so the ratio is meaningful even on a shared
machine; absolute times are not.

``--accuracy`` instead compares :func:`~dpbounds.lmi.heavy_ball_lmi.heavy_ball_lmi_rate` with the
independent oracle of ``tests/lmi/test_heavy_ball_lmi.py`` (bisection whose certificates and Farkas
certificates are checked in mpmath at 50 digits) at the 18 grid points of the tests, Kuru et al.'s
Section-5 point (mu = 0.02, L = 5.1028, alpha = 0.1/L, beta = 0.9) and (mu, L) = (1e-3, 1): the
relative error of 1 - rho, whether rho_lower is below the minimal rate, and the time per rate.
It imports ``dpbounds`` from ``PYTHONPATH``, so the same command measures another checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import time
import warnings

import numpy as np

from dpbounds.lmi.heavy_ball_lmi import naive_heavy_ball_lmi_rate
from dpbounds.lmi.rate_map import closed_form_rate_map, default_grid, lmi_rate_map


def _oracle():
    path = pathlib.Path(__file__).resolve().parents[1] / "tests" / "lmi" / "test_heavy_ball_lmi.py"
    spec = importlib.util.spec_from_file_location("_lmi_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def accuracy() -> None:
    """1 - rho and the bracket against the independent oracle (see the module docstring)."""
    from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate

    o = _oracle()
    points = [(f"grid mu={p[0]:g} a={p[2]:g} b={p[3]:g}", p) for p in o.GRID18]
    points += [("Section 5 (mu=0.02, L=5.1028)", o.SECTION5), ("mu=1e-3, L=1", o.ILL)]
    worst_grid, rows, wrong_lower = 0.0, [], 0
    for name, p in points:
        t0 = time.perf_counter()
        cert = heavy_ball_lmi_rate(*p)
        seconds = time.perf_counter() - t0
        if not cert.certified:
            print(f"{name:34s} no certificate ({cert.reason})")
            continue
        lo, hi = o.oracle_minimal_rate(p, rel_width=1e-9)
        # bounds on the relative error of 1 - rho (rho* is somewhere in [lo, hi])
        err_hi = ((1 - lo) - (1 - cert.rho)) / (1 - hi)
        err_lo = max(((1 - hi) - (1 - cert.rho)) / (1 - lo), 0.0)
        lower_ok = o._oracle_decide(p, cert.rho_lower) != 1 and cert.rho_lower <= hi
        wrong_lower += not lower_ok
        indep = o.mp_certificate_margin(p, cert.rho, cert.P, cert.c0, cert.c) > 0
        if name.startswith("grid"):
            worst_grid = max(worst_grid, err_hi)
        rows.append(name)
        print(f"{name:34s} rho*={0.5 * (lo + hi):.12f} (+-{0.5 * (hi - lo):.1e})  "
              f"rho={cert.rho:.12f}  rel.err(1-rho) in [{err_lo:.2e}, {err_hi:.2e}]  "
              f"rho_lower<=rho*: {'yes' if lower_ok else 'NO'}  "
              f"certificate holds at 50 digits: {indep}  {seconds * 1e3:.0f} ms, "
              f"{cert.solves} solves", flush=True)
    print(f"worst relative error of 1 - rho on the grid: {worst_grid:.2e}; rho_lower above the "
          f"minimal rate at {wrong_lower} of {len(rows)} certified points")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--naive-points", type=int, default=40)
    ap.add_argument("--mu", type=float, default=0.1)
    ap.add_argument("--L", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--accuracy", action="store_true",
                    help="compare with the independent oracle instead of timing the map")
    args = ap.parse_args()
    if args.accuracy:
        accuracy()
        return
    # the naive baseline solves near-degenerate problems; cvxpy warns, the result is kept as is
    warnings.filterwarnings("ignore", message="Solution may be inaccurate")

    alphas, betas = default_grid(args.L, args.size)
    t0 = time.perf_counter()
    cf = closed_form_rate_map(args.mu, args.L, alphas, betas)
    t_cf = time.perf_counter() - t0

    cpu0 = time.process_time()
    rm = lmi_rate_map(args.mu, args.L, alphas, betas, tol=args.tol, processes=args.processes,
                      progress=True)
    cpu = time.process_time() - cpu0
    print(rm.summary())
    n_points = alphas.size * betas.size

    rng = np.random.default_rng(args.seed)
    idx = rng.choice(n_points, size=args.naive_points, replace=False)
    pts = [(alphas[k % alphas.size], betas[k // alphas.size]) for k in idx]
    t0 = time.perf_counter()
    naive = []
    for a, b in pts:
        r = naive_heavy_ball_lmi_rate(args.mu, args.L, a, b, tol=args.tol)
        naive.append(np.nan if r is None else r)
    t_naive = time.perf_counter() - t0
    naive = np.array(naive)
    fast = rm.rho_lmi.ravel()[idx]
    both = ~np.isnan(naive) & ~np.isnan(fast)
    agree_cert = np.mean(np.isnan(naive) == np.isnan(fast))
    t_naive_full = t_naive / len(pts) * n_points

    print(f"closed-form map ({n_points} points): {t_cf * 1e3:.2f} ms")
    print(f"LMI map, fast path: {rm.seconds:.1f} s on {rm.processes} processes "
          f"({rm.solves / n_points:.2f} SDP solves per point, all certificates verified: "
          f"{bool(np.all(rm.verified == rm.certified))})"
          + (f"; CPU {cpu:.1f} s" if rm.processes == 1 else ""))
    cert = rm.certified
    if rm.rho_lmi_lower is not None and cert.any():
        width = rm.rho_lmi[cert] - rm.rho_lmi_lower[cert]
        print(f"proven bracket rho - rho_lower: median {np.median(width):.2e}, "
              f"max {width.max():.2e}")
    print(f"naive rebuild-and-solve bisection: {t_naive:.1f} s for {len(pts)} random grid points "
          f"(1 process) -> extrapolated {t_naive_full:.0f} s for the {n_points}-point map")
    print(f"ratio naive/fast (extrapolated, wall clock): {t_naive_full / rm.seconds:.0f}x; "
          f"per process-second: {t_naive_full / (rm.seconds * rm.processes):.0f}x")
    if both.any():
        print(f"naive vs fast rates on the subset: max |diff| = "
              f"{np.max(np.abs(naive[both] - fast[both])):.2e} (tol {args.tol}); "
              f"certified/uncertified agreement {agree_cert:.0%}")
    print(f"LMI >= closed form everywhere certified: "
          f"{bool(np.all(rm.rho_lmi[rm.certified] >= cf.rho_closed_form[rm.certified] - 1e-9))}")


if __name__ == "__main__":
    main()
