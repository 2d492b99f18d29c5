"""Benchmark: the Section-5 workload of Kuru et al. (Figs. 3-4).

Six algorithms (DP-GD, DP-HB, DP-NAG, DP-NAG-opt, DP-MASG, DP-MASG-opt) on L2-regularised
logistic regression (eq. (35), λ = 0.01, the paper's L) over the synthetic data of Section 5
(n = 10^5, d = 20), ε = 1, every (T, m, c) in {100, 200, 500, 1000} x {10^3, 10^5} x {0.1, 1},
20 independent trials per configuration batched into one (20, d) state, x_0 = 10·1, E_0 = 10,
and F(x_t) - F* recorded at **every** iterate of every trial.

Usage::

    python bench/bench_kuru_workload.py --fresh             # the full workload, every CPU
    python bench/bench_kuru_workload.py --quick             # n = 10^4, T in {100, 200}: a smoke run
    python bench/bench_kuru_workload.py --workers 1 --fresh # in this process
    python bench/bench_kuru_workload.py --dask              # on a Dask LocalCluster

Each configuration is one cell of a sweep (:mod:`dpbounds.sweep`): finished configurations are
stored in ``bench/out/kuru_workload_store`` the moment they finish, so a killed run resumes
where it stopped (only the configurations in flight are recomputed) and a progress bar shows
configurations done / total with an ETA. **For timings pass ``--fresh``** (recompute every
configuration) or ``--no-store``; a resumed run reports the stored compute times of the reused
configurations beside the wall time of the run itself.

Prints the wall time of every configuration, the total, and the final mean F(x_T) - F* table.
Results (mean traces) go to ``bench/out/kuru_workload.npz``. ``bench_octave_ratio.py`` times
the same workload against a vectorised Octave implementation (``bench/octave/kuru_section5.m``)
in one run, with the limit of this machine.

What makes it fast (each measured in CHANGELOG.md):

* the compiled logistic pass (``dpbounds/objectives/_logistic_kernel.py``, the ``fast`` extra:
  numba) computes F(x_t) and the gradient in one pass over the data for all trials; set
  ``DPBOUNDS_KERNELS=numpy`` to time the NumPy pass instead;
* a mini-batch run's F(x_t), which its updates never use, is evaluated for many steps in one
  stacked full-data pass (``TraceRecorder.record_later``: each data block is read once for all
  the recorded states; the same bits as a pass per step);
* the -opt methods re-select their horizon, so several requested T are one run: each is run once
  (``reselected_horizon``) and its result reported for every T that selects it;
* on AVX-512 CPUs numba compiles with 512-bit vectors (``NUMBA_CPU_FEATURES``, set below before
  numba is imported; ``--narrow-vectors`` keeps numba's 256-bit default: 150 s instead of 115 s
  on the 2-core machine);
* BLAS is pinned to one thread per process: the NumPy pass is dominated by small blocked matrix
  products, where OpenBLAS threads only add contention (measured 6x slower on the shared 2-core
  machine).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def _wide_vectors() -> str:
    """Let numba use 512-bit vectors on an AVX-512 CPU, where LLVM prefers 256-bit ones.

    The compiled logistic pass's products and exponentials run 1.3-1.5x faster with them
    (measured; the division-free reciprocal is unchanged). Set before numba is imported, so
    this process and the workers it starts (which inherit the environment) compile with it;
    ``--narrow-vectors`` or an explicit ``NUMBA_CPU_FEATURES`` leaves numba's default.
    """
    if "NUMBA_CPU_FEATURES" in os.environ or "--narrow-vectors" in sys.argv:
        return "numba's default vector width"
    try:
        import llvmlite.binding as llvm
    except ImportError:
        return "no numba"
    try:
        llvm.initialize_native_target()
    except RuntimeError:  # pragma: no cover - newer llvmlite initialises itself
        pass
    features = llvm.get_host_cpu_features()
    if not features.get("avx512f"):
        return "numba's default vector width (no AVX-512)"
    os.environ["NUMBA_CPU_FEATURES"] = features.flatten() + ",-prefer-256-bit"
    return "512-bit vectors"


VECTORS = _wide_vectors()

import argparse  # noqa: E402
import functools  # noqa: E402
import itertools  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpbounds.algorithms import (  # noqa: E402
    dp_gd,
    dp_heavy_ball,
    dp_masg,
    dp_masg_opt,
    dp_nag,
    dp_nag_opt,
    reselected_horizon,
)
from dpbounds.data import kuru_synthetic  # noqa: E402
from dpbounds.objectives import LogisticRegression, _logistic_kernel  # noqa: E402
from dpbounds.sweep import Cell, SweepError, SweepOptions, add_sweep_arguments  # noqa: E402

ALGORITHMS = {
    "DP-GD": dp_gd,
    "DP-HB": dp_heavy_ball,
    "DP-NAG": dp_nag,
    "DP-NAG-opt": dp_nag_opt,
    "DP-MASG": dp_masg,
    "DP-MASG-opt": dp_masg_opt,
}

@functools.lru_cache(maxsize=1)
def _objective(n: int, d: int, seed: int) -> LogisticRegression:
    """The Section-5 objective with x*, F* computed (once per process)."""
    ds = kuru_synthetic(n=n, d=d, seed=seed)
    f = LogisticRegression.kuru(*ds, lam=0.01, paper_smoothness=True, **ds.domain())
    f.optimum  # noqa: B018 - cache x*, F*
    return f


def kernel_name() -> str:
    return "compiled (numba)" if _logistic_kernel.enabled() else "NumPy"


def config_kwargs(f: LogisticRegression, name: str, T: int, m: int, c: float, trials: int,
                  seed: int) -> dict:
    """The keyword arguments of ``ALGORITHMS[name]`` for one Section-5 configuration."""
    kw: dict = dict(epsilon=1.0, steps=T, batch_size=m, trials=trials, seed=seed, x0=10.0,
                    trace="suboptimality")
    if name == "DP-GD":
        kw["step_size"] = c / f.smoothness
    else:
        kw["c"] = c
    if name.endswith("-opt"):
        kw["initial_error"] = 10.0
    return kw


def unique_runs(f: LogisticRegression, configs: list[dict]) -> tuple[list[dict], list[int]]:
    """``(unique, owner)``: the configurations that are distinct runs, and for each of
    ``configs`` the index in ``unique`` of the run that computes it.

    The -opt methods re-select their horizon (Kuru et al. Remark 4.1): requested T's with the
    same horizon are the same run, bit for bit; each is run once (``reselected_horizon``).
    """
    runs: dict[tuple, int] = {}  # run key -> index in unique
    unique: list[dict] = []
    owner: list[int] = []
    for cfg in configs:
        key = (cfg["name"], cfg["T"], cfg["m"], cfg["c"])
        if cfg["name"].endswith("-opt"):
            method = "nag" if cfg["name"].startswith("DP-NAG") else "masg"
            horizon = reselected_horizon(f, method=method, epsilon=1.0, steps=cfg["T"],
                                         c=cfg["c"], batch_size=cfg["m"], initial_error=10.0)
            key = (cfg["name"], f"horizon {horizon}", cfg["m"], cfg["c"])
        if key not in runs:
            runs[key] = len(unique)
            unique.append(cfg)
        owner.append(runs[key])
    return unique, owner


def run_config(name: str, T: int, m: int, c: float, n: int, d: int, data_seed: int,
               trials: int, seed: int) -> dict:
    """One cell: ``trials`` runs of one configuration, F(x_t) - F* at every iterate."""
    f = _objective(n, d, data_seed)
    r = ALGORITHMS[name](f, **config_kwargs(f, name, T, m, c, trials, seed))
    return dict(steps=int(r.steps), mean_trace=r.mean_trace(),
                mean_log_trace=np.mean(np.log(r.trace), axis=0),
                final=float(r.mean_trace()[-1]), eps=float(r.ledger.epsilon))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--T", type=int, nargs="+", default=[100, 200, 500, 1000])
    ap.add_argument("--m", type=int, nargs="+", default=[1000, 100_000])
    ap.add_argument("--c", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--narrow-vectors", action="store_true",
                    help="keep numba's default (256-bit) vectors on AVX-512 CPUs")
    ap.add_argument("--out", default="bench/out/kuru_workload.npz")
    add_sweep_arguments(ap, store="bench/out/kuru_workload_store")
    a = ap.parse_args()
    if a.quick:
        a.n, a.T, a.m = 10_000, [100, 200], [100, 10_000]
    options = SweepOptions.from_args(a)
    t_start = time.perf_counter()
    f = _objective(a.n, a.d, a.seed)
    t_setup = time.perf_counter() - t_start
    print(f"data + F* (trust-region Newton): {t_setup:.1f} s; n={a.n}, d={a.d}, "
          f"L={f.smoothness:.4f} (paper's), mu={f.strong_convexity}, F*={f.optimum.value:.10f}; "
          f"{options.executor}; logistic pass: {kernel_name()} ({VECTORS})")
    configs = [dict(name=name, T=T, m=m, c=c) for T, m, c in itertools.product(a.T, a.m, a.c)
               for name in ALGORITHMS]
    unique, owner = unique_runs(f, configs)
    # cost hint: longest first, so the pool stays busy
    cells = [Cell(run_config, dict(**cfg, n=a.n, d=a.d, data_seed=a.seed), trials=a.trials,
                  seed=a.seed + 1000, cost=cfg["T"] * (1 if cfg["m"] < a.n else 3))
             for cfg in unique]
    try:
        sweep = options.run(cells, desc="kuru workload")
    except SweepError as exc:
        print(f"bench_kuru_workload: {exc}", file=sys.stderr)
        return 1
    records, infos = list(sweep), list(sweep.info)
    results = []
    for i, cfg in enumerate(configs):
        j = owner[i]
        first = owner.index(j) == i  # the config whose cell ran; the others share its result
        results.append(dict(cfg, **records[j], wall=infos[j].seconds if first else 0.0,
                            reused=infos[j].reused, same_as=None if first
                            else unique[j]["T"]))
    for res in sorted(results, key=lambda r: -r["wall"]):
        note = " (stored)" if res["reused"] else ""
        if res["same_as"] is not None:
            note = f" (the T={res['same_as']} run: same horizon)"
        print(f"  {res['name']:12s} T={res['T']:5d} m={res['m']:6d} c={res['c']:<4} "
              f"steps={res['steps']:5d} wall={res['wall']:7.2f} s"
              f"{note}  final F-F*={res['final']:.3e}")
    total = time.perf_counter() - t_start
    steps = sum(r["steps"] for r in results)  # the workload's iterations, duplicates included
    print(f"\nTOTAL wall time {total / 60:.2f} min ({total:.0f} s) for {len(results)} runs "
          f"({len(results) - len(unique)} the same run as another -opt configuration, "
          f"{sweep.computed} computed, {sweep.reused} reused from {a.store}), "
          f"{steps} iterations x {a.trials} trials, F(x_t)-F* at every iterate; "
          f"{options.executor}; sum of per-run compute times "
          f"{sum(r['wall'] for r in results):.0f} s")
    print("\nfinal mean F(x_T) - F* (20 trials), epsilon = 1:")
    header = "  ".join(f"{name:>11s}" for name in ALGORITHMS)
    print(f"{'m':>7s} {'c':>4s} {'T':>5s}  {header}")
    table = {(r["name"], r["T"], r["m"], r["c"]): r for r in results}
    for m, c, T in itertools.product(a.m, a.c, a.T):
        row = "  ".join(f"{table[(name, T, m, c)]['final']:11.3e}" for name in ALGORITHMS)
        print(f"{m:7d} {c:4g} {T:5d}  {row}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **{f"{r['name']}_T{r['T']}_m{r['m']}_c{r['c']}": r["mean_trace"]
                                for r in results})
    print(f"\nmean traces saved to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
