"""Benchmark: the per-step loop of five DP algorithms, NumPy path vs compiled (the fast extra).

Run ``python bench/bench_step_loop.py`` (about five minutes on a 2-core machine; ``--quick``
for a smoke run; ``--no-avx512``: this host with AVX-512 switched off,
``bench/_no_avx512.py``). For Tran & Cutkosky's Algorithm 1 (tree-momentum NSGD) and Algorithm 2
(sensitivity-reduced NSGD, RECONSTRUCTED), DP-NSGD, DP-SGD and noisy projected SGD on the
verification problem ``huber_well`` (:mod:`dpbounds.verify.problems`, N = 1000 samples, batch 1,
4 batched trials, no trace), at d in {4, 16, 64}, it prints microseconds per step

* ``numpy``: the array-API loop (``DPBOUNDS_KERNELS=numpy``);
* ``compiled``: the compiled loop (:mod:`dpbounds.algorithms._step_kernels`);

in CPU time (``time.process_time``) and wall time, **by differencing**: runs of ``S`` and
``3 S`` steps, each the minimum over ``--repeats`` runs (the machine is shared: the minimum is
the least disturbed run), and the per-step cost is their difference over ``2 S``. The run's
setup (the calibration of its noise, compilation, allocation) cancels; ``setup ms`` is what is
left of the short run. (The previous version subtracted a separately timed calibration, which
the timed run did not pay in full: it printed 0.107 us for Algorithm 2 at d = 4 where the
differenced cost is 4.19.) Each row is measured once per noise stream (``--normals``):
``numpy`` (NumPy's generators, the default) and ``fast`` (the compiled xoshiro256++ / ziggurat
stream of :mod:`dpbounds._normals`, ``DPBOUNDS_NORMALS=fast``), side by side under the same load.

The limit. Nothing in a step touches more than a few cache lines (the state, one sample, the
tree's live nodes: all in L1), so memory bandwidth is no bound. What every step must do is draw
its ``trials x d`` Gaussian noise numbers: ``noise floor`` is that draw alone
(``TrialRandom.normal_steps`` in blocks of 1024 steps, as the loops draw it). The arithmetic
(``flops``: counted per step for 4 trials, from the loops) is some hundred floating-point
operations; the compiled step is bound by its latency chain (norm, square root, division, then
the step: a few hundred cycles per trial) more than by throughput.

Timings on a shared machine are noisy: read the ratios measured side by side in one run.

d = 16, 4 trials (the target: <= 2 us per step), CPU us per step, differenced (S = 20000), on
an "AMD EPYC" (lscpu: family 26, 2 vCPU, AVX-512) shared by other jobs (load 7-8 on 2 cores,
which inflates CPU time too); three runs of the commit that added the fast stream:

=========  ==================  ==================  ==================
loop       numpy / fast run 1  numpy / fast run 2  numpy / fast run 3
=========  ==================  ==================  ==================
Alg. 1     2.58 / 1.11         1.80 / 1.85         1.94 / 1.47
Alg. 2     2.66 / 1.90         2.13 / 1.41         2.54 / 1.80
DP-NSGD    1.05 / 0.45         1.18 / 0.37         -
DP-SGD     0.79 / 0.45         0.83 / 0.42         -
noise      0.75 / 0.19         0.96 / 0.20         0.89 / 0.19
=========  ==================  ==================  ==================

On an "AMD EPYC" family 23 model 1 (Zen 1, AVX2 split in 128-bit halves), 2 vCPU, quiet,
2026-12-04, d = 16, CPU us per step, numpy / fast normals. "Before" counted, in the
differenced cost, Algorithms 1 and 2's exact node count (``privacy.tree._exact_k``, a
dynamic programme of O(T log T) per run, ~1 s at T = 4e5, now memoised per (N, E)); the three
"after" runs also carry a small change to Algorithm 2's loop (a transcript-only norm skipped
when nothing is recorded; same iterates):

=========  ===========  ===========  ===========  ===========
loop       before       after 1      after 2      after 3
=========  ===========  ===========  ===========  ===========
Alg. 1     4.55 / 3.37  2.22 / 1.45  2.27 / 1.82  2.96 / 1.66
Alg. 2     7.70 / 5.53  2.75 / 2.00  2.84 / 2.10  2.60 / 2.14
DP-NSGD    2.43 / 1.15  1.77 / 0.96  1.82 / 1.90  1.74 / 1.10
DP-SGD     1.90 / 1.19  1.81 / 1.06  1.80 / 1.09  1.75 / 1.06
noise      1.22 / 0.85  1.46 / 0.45  1.16 / 0.49  1.25 / 0.49
=========  ===========  ===========  ===========  ===========

With the fast stream Algorithm 1, DP-NSGD and DP-SGD are under 2 us on this slower host (one
DP-NSGD reading of 1.90 is noise: 0.96-1.10 otherwise); Algorithm 2 reads 2.00-2.14, just
above. NumPy's stream alone costs 1.2-1.5 us of a step here (64 numbers at 18-23 ns).

On an "AMD EPYC" family 25 model 17 (Zen 4), 2026-12-06, with AVX-512 switched off
(``--no-avx512``: NumPy's dispatch, numba's features, OpenBLAS), ``--d 16 --compiled-only``,
S = 2e5, one run, CPU us per step, numpy / fast normals: Alg. 1 1.12 / 0.72, Alg. 2 1.37 /
0.96, DP-NSGD 0.82 / 0.40, DP-SGD 0.82 / 0.40, projected 0.86 / 0.43, noise 0.64 / 0.23. A
stand-in for the library calls only: these loops are bound by latency, not by vector width, so
a Zen 4 without AVX-512 runs them about as fast as with it; the Zen 1 rows above are the ones
of a slower core.

On the issue's own CPU class, an "AMD EPYC" family 25 model 1 (Zen 3, AVX2/FMA, no
AVX-512), 2 vCPU, quiet (load 0.5), 2026-12-07, ``--d 16``, S = 2e5, min of 3, CPU us per step,
compiled loop, numpy / fast normals (the issue measured 3.65 / 6.98 / 2.52 / 2.83 for the
first four on such a host before the compiled loops):

=========  ===========
loop       numpy / fast
=========  ===========
Alg. 1     1.36 / 1.08
Alg. 2     1.93 / 1.25
DP-NSGD    1.29 / 0.69
DP-SGD     1.06 / 0.67
projected  1.00 / 0.60
noise      1.08 / 0.31
=========  ===========

All four non-convex loops are under the 2 us target with either stream (Algorithm 2 with
NumPy's stream by the least margin); the NumPy path (``DPBOUNDS_KERNELS=numpy``) reads 53-122
us per step, 41-97x the compiled loop.

Before that commit (same file's differenced ``measure()``, NumPy stream only, and
``normal_steps``' in-place fill not yet reaching ``array_api_compat.numpy``: it stacked copies)
two runs gave Alg. 1 1.75 / 2.08, Alg. 2 3.20 / 2.78, DP-NSGD 0.99 / 1.40, DP-SGD 1.31 / 1.91,
noise draw 1.19 / 1.12 us per step.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from collections.abc import Callable

import _no_avx512  # before NumPy: --no-avx512 switches AVX-512 off (bench/_no_avx512.py)

EMULATED = _no_avx512.apply()

from dpbounds.algorithms import (  # noqa: E402
    dp_nsgd,
    dp_sgd,
    noisy_projected_sgd,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.algorithms.dp_sgd import noisy_sgd_noise  # noqa: E402
from dpbounds.algorithms.tree_momentum import sensitivity_reduced_privacy, tree_momentum_privacy  # noqa: E402
from dpbounds.backend import TrialRandom  # noqa: E402
from dpbounds.objectives._logistic_kernel import AVAILABLE  # noqa: E402
from dpbounds.verify.problems import problem  # noqa: E402

N, TRIALS, EPS, DELTA, ETA = 1000, 4, 8.0, 1e-5, 1e-3
ALGS = ("alg1", "alg2", "dp_nsgd", "dp_sgd", "projected")


def _flops(alg: str, d: int) -> int:
    """Floating-point operations per step for TRIALS trials (batch 1), counted from the loops:
    sample gradient ~5d, clip ~3d, normalised step ~4d; the tree adds ~7d (amortised merge,
    release), Algorithm 2 a second gradient and a clipped difference (~10d)."""
    per = {"alg1": 19, "alg2": 29, "dp_sgd": 10, "dp_nsgd": 10, "projected": 10}[alg]
    return TRIALS * per * d


def _runner(alg: str, d: int, steps: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """(run, setup): the run of ``steps`` steps and its calibration alone."""
    inst = problem("huber_well").build(N, d, seed=0)
    f = inst.objective
    c = dict(trials=TRIALS, seed=0, x0=inst.x0, trace=None)
    epochs = max(2, steps // N)
    if alg == "alg1":
        return (lambda: tree_momentum_nsgd(f, epsilon=EPS, delta=DELTA, epochs=epochs,
                                           step_size=ETA, **c),
                lambda: tree_momentum_privacy(EPS, DELTA, n=N, epochs=epochs, alpha=1 / N,
                                              clip_norm=f.G))
    if alg == "alg2":
        gamma = min(1.0, f.L * ETA * N / f.G)
        return (lambda: sensitivity_reduced_nsgd(f, epsilon=EPS, delta=DELTA, epochs=epochs,
                                                 step_size=ETA, **c),
                lambda: sensitivity_reduced_privacy(EPS, DELTA, n=N, epochs=epochs,
                                                    alpha=1 / N, gamma=gamma, clip_norm=f.G,
                                                    diff_clip=f.L * ETA * N))
    if alg in ("dp_sgd", "dp_nsgd"):
        run = dp_sgd if alg == "dp_sgd" else dp_nsgd
        extra = dict(clip_threshold=1.0) if alg == "dp_sgd" else dict(regulariser=0.1)
        return (lambda: run(f, epsilon=EPS, delta=DELTA, steps=steps, batch_size=1,
                            step_size=ETA, **extra, **c),
                lambda: noisy_sgd_noise(EPS, DELTA, n=N, batch_size=1, steps=steps,
                                        contribution_bound=1.0))  # cached after the first
    return (lambda: noisy_projected_sgd(f, epsilon=EPS, delta=DELTA, radius=1.0, steps=steps,
                                        **{**c, "trace": None}),
            lambda: None)  # the lecture's closed-form sigma


def _steps_of(alg: str, steps: int) -> int:
    return max(2, steps // N) * N if alg in ("alg1", "alg2") else steps


def _best(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Least CPU and least wall seconds of ``repeats`` calls."""
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def _noise_floor(d: int, repeats: int, normals: str = "numpy") -> float:
    """CPU microseconds per step to draw TRIALS x d Gaussians in blocks of 1024 steps (as the
    loops draw them: ``_step_kernels.MAX_BLOCK``) from the stream ``normals``."""
    rng = TrialRandom(0, TRIALS, normals=normals)
    block = 1024
    rng.normal_steps(block, (d,), 0.5)  # load the compiled stream before timing it
    cpu, _ = _best(lambda: rng.normal_steps(block, (d,), 0.5), repeats)
    return 1e6 * cpu / block


def measure(alg: str, d: int, path: str, steps: int, repeats: int) -> dict[str, float]:
    """Microseconds per step by differencing: runs of ``steps`` and ``3 steps`` steps, the
    per-step cost is their difference over ``2 steps`` (the setup, the calibration, the first
    call's compilation and every other per-run cost cancel; a subtracted calibration did not
    match what the timed run paid and printed 0.107 us for Algorithm 2 at d = 4 against 4.19
    differenced). Each run's time is the minimum of ``repeats``."""
    os.environ["DPBOUNDS_KERNELS"] = path
    steps = _steps_of(alg, steps)  # whole epochs for the tree loops: the long run has 3x
    short, _ = _runner(alg, d, steps)
    long, _ = _runner(alg, d, 3 * steps)
    short()  # compile (compiled path) and fill the calibration caches
    long()
    c1, w1 = _best(short, repeats)
    c3, w3 = _best(long, repeats)
    T = _steps_of(alg, 3 * steps) - _steps_of(alg, steps)
    return dict(cpu=1e6 * (c3 - c1) / T, wall=1e6 * (w3 - w1) / T, setup_ms=1e3 * (
        c1 - (c3 - c1) * _steps_of(alg, steps) / T))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few steps, one repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--d", type=int, nargs="+", default=[4, 16, 64], help="dimensions")
    ap.add_argument("--algs", nargs="+", default=list(ALGS), choices=ALGS)
    ap.add_argument("--compiled-only", action="store_true", help="skip the NumPy path")
    ap.add_argument("--normals", nargs="+", default=["numpy", "fast"],
                    choices=("numpy", "fast"),
                    help="noise streams to compare (TrialRandom's normals / DPBOUNDS_NORMALS)")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps of the short compiled run (the long one has 3x; default 2e5)")
    args = ap.parse_args()
    if EMULATED:
        print(EMULATED)
    repeats = 1 if args.quick else args.repeats
    numpy_steps, compiled_steps = (400, 4000) if args.quick else (3000, 200_000)
    compiled_steps = args.steps or compiled_steps
    print(f"CPU: {_cpu_model()}, {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; "
          f"numba {'available' if AVAILABLE else 'missing: compiled = NumPy path'}")
    print(f"us per step, {TRIALS} trials, batch 1, N = {N}; CPU and wall, differenced "
          f"(runs of S and 3S steps, min of {repeats}); S = {compiled_steps} compiled")
    print(f"{'algorithm':>10} {'d':>3} {'normals':>7} {'numpy cpu':>10} {'wall':>8} "
          f"{'compiled cpu':>13} {'wall':>8} {'speed-up':>9} {'noise floor':>12} {'flops':>6} "
          f"{'setup ms':>9}")
    for d in args.d:
        floors = {nm: _noise_floor(d, repeats, nm) for nm in args.normals}
        for alg in args.algs:
            for nm in args.normals:  # the streams side by side, under the same load
                os.environ["DPBOUNDS_NORMALS"] = nm
                a = (dict(cpu=math.nan, wall=math.nan) if args.compiled_only
                     else measure(alg, d, "numpy", numpy_steps, repeats))
                b = measure(alg, d, "auto", compiled_steps, repeats)
                print(f"{alg:>10} {d:>3} {nm:>7} {a['cpu']:>10.2f} {a['wall']:>8.2f} "
                      f"{b['cpu']:>13.3f} {b['wall']:>8.3f} "
                      f"{a['cpu'] / max(b['cpu'], 1e-9):>9.0f} {floors[nm]:>12.3f} "
                      f"{_flops(alg, d):>6} {b['setup_ms']:>9.1f}", flush=True)
    os.environ.pop("DPBOUNDS_KERNELS", None)
    os.environ.pop("DPBOUNDS_NORMALS", None)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
