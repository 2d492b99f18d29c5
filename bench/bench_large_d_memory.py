"""Benchmark: memory of DP-GD at large d against the size of its data (issue 36, item 3).

Run ``python bench/bench_large_d_memory.py`` (a minute; ``--n``/``--d`` to change the size).
Logistic regression on ``kuru_synthetic`` data (n x d float64 features, the "data" below),
4 batched trials, 3 steps of DP-GD (Laplace: the plain full-data pass, compiled when numba is
installed and d <= ``COMPILED_MAX_D``; Gaussian: per-sample clipping). Memory is counted with
:mod:`tracemalloc` (NumPy reports its buffers to it), after a warm-up run on a tiny problem (so
imports and compilation are not counted), so other processes on a shared machine do not
disturb it:

* ``objective``: what building :class:`~dpbounds.objectives.LogisticRegression` adds (its row
  norms; before issue 36 also its signed copy ``Z = y * A`` of the features); ``obj peak``: the
  peak while building it and computing its smoothness ``L`` (the default step size's);
* ``run peak``: the peak above that during the run (the states, gradients and noise of the
  trials; the compiled pass's ``(d, n)`` copy of the data when it is chosen);
* ``x data``: (data + objective + run peak) / data, the total the process holds for the
  problem per byte of data (the target of the issue: <= 1.5);
* ``floor s``: two reads of the data (margins, then gradients) at the read bandwidth measured
  by a BLAS dot product over the data, the memory-bandwidth floor of one full-data step;
  ``CPU s/step`` against it.

BLAS is pinned to one thread (``OPENBLAS_NUM_THREADS=1``, as the library's runs use one process
per core; on the shared 2-core machine two BLAS threads made one (8, 16384) x (16384, 96)
product 100x slower). ``--no-avx512``: this host with AVX-512 switched off
(``bench/_no_avx512.py``). Results: ``bench/bench_large_d_memory.md``.
"""

from __future__ import annotations

import os

import _no_avx512  # before NumPy: --no-avx512 switches AVX-512 off (bench/_no_avx512.py)

EMULATED = _no_avx512.apply()
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

from dpbounds.algorithms import dp_gd  # noqa: E402
from dpbounds.data import kuru_synthetic  # noqa: E402
from dpbounds.objectives import LogisticRegression  # noqa: E402
from dpbounds.objectives._wide_kernel import WIDE_MIN_D  # noqa: E402


def measure(n: int, d: int, trials: int, mechanism: str, steps: int) -> dict[str, float]:
    A, y = kuru_synthetic(n=n, d=d, seed=0)
    data = A.nbytes + y.nbytes
    extra = dict(delta=1e-6, clip_threshold=1.0) if mechanism == "gaussian" else {}
    for dw in (3, WIDE_MIN_D):  # warm-up: imports, compilation of both kinds of pass, caches
        small, ys = kuru_synthetic(n=16, d=dw, seed=0)
        dp_gd(LogisticRegression(small, ys, l2=0.02), epsilon=1.0, steps=2, trials=trials,
              seed=0, mechanism=mechanism, trace=None, step_size=0.1, **extra)
    v = np.ones(A.size)
    t = time.perf_counter()
    for _ in range(3):
        float(A.reshape(-1) @ v)
    # the dot product reads the data and v (as large): two data-sized reads, a step's floor
    read_s = (time.perf_counter() - t) / 3
    del v
    l1_radius = float(np.abs(A).sum(1).max()) * 1.01  # the bench's temporary, not traced
    tracemalloc.start()
    f = LogisticRegression(A, y, l2=0.02, l1_radius=l1_radius)
    _ = f.smoothness  # the default step size's L (a sparse SVD above d = 4000), not timed
    objective, objective_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    t = time.process_time()
    dp_gd(f, epsilon=1.0, steps=steps, trials=trials, seed=0, mechanism=mechanism, trace=None,
          **extra)
    cpu = time.process_time() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return dict(data_mb=data / 1e6, objective=objective / data,
                objective_peak=objective_peak / data, run_peak=(peak - objective) / data,
                total=(data + peak) / data, cpu_per_step=cpu / steps, floor=read_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--d", type=float, nargs="+", default=[1e5, 1e6])
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    if EMULATED:
        print(EMULATED)
    print(f"{'mechanism':>9} {'n':>5} {'d':>8} {'data MB':>8} {'objective':>9} {'obj peak':>8} "
          f"{'run peak':>9} "
          f"{'x data':>7} {'CPU s/step':>10} {'floor s':>8}")
    for d in args.d:
        for mech in ("laplace", "gaussian"):
            r = measure(args.n, int(d), args.trials, mech, args.steps)
            print(f"{mech:>9} {args.n:>5} {int(d):>8} {r['data_mb']:>8.0f} "
                  f"{r['objective']:>8.2f}x {r['objective_peak']:>7.2f}x "
                  f"{r['run_peak']:>8.2f}x {r['total']:>6.2f}x "
                  f"{r['cpu_per_step']:>10.3f} {r['floor']:>8.3f}", flush=True)


if __name__ == "__main__":
    main()
