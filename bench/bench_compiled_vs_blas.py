"""Benchmark: where the compiled logistic pass beats the NumPy/BLAS pass (issue 36, item 3).

Run ``python bench/bench_compiled_vs_blas.py`` (about a minute; ``--elements`` sets the size of
the data, ``--d`` the feature counts, ``--trials`` the batch sizes). One full-data pass of
:class:`~dpbounds.objectives.LogisticRegression` (``loss_and_grad``: the summed loss and the
gradient at the same point, what DP-GD and heavy ball call every step) with the compiled pass
(``DPBOUNDS_KERNELS=auto``) and with the NumPy pass (``numpy``: blocked BLAS products and
vectorised NumPy ufuncs), on data of a fixed size ``n * d`` (so every row reads the same bytes),
CPU time per call (the minimum of ``--repeat`` calls, after one warm-up), reported as ns per
sample and trial. BLAS is pinned to one thread (the library's runs are one process per core).
A second table times the mini-batch gradient ``grad(x, idx)`` (DP-SGD's step) for batch sizes
``--batch`` (``--minibatch-only`` skips the first). ``--wide`` times instead the two products
with the data of every margin loss's full-data pass above ``COMPILED_MAX_D`` (margins
``X A^T`` and gradient sums ``W A``, in blocks of the objective's 2048 samples): the compiled
column-blocked kernels of :mod:`dpbounds.objectives._wide_kernel` against BLAS's 8-row products
(:func:`dpbounds.backend.rowwise_matmul`), at ``n * d = 2^25`` (256 MiB) by default; it sets
:data:`dpbounds.objectives._wide_kernel.WIDE_MIN_D`.

The rule it sets (:data:`dpbounds.objectives._logistic_kernel.COMPILED_MAX_D`): the compiled
pass is used when ``d <= COMPILED_MAX_D``. It may depend on ``d`` only, never on the number of
trials: the two passes give different last bits, and trial ``k``'s result must not depend on how
many trials run beside it. ``--no-avx512``: this host with AVX-512 switched off
(``bench/_no_avx512.py``). Results: ``bench/bench_compiled_vs_blas.md``.
"""

from __future__ import annotations

import os

import _no_avx512  # before NumPy: --no-avx512 switches AVX-512 off (bench/_no_avx512.py)

EMULATED = _no_avx512.apply()
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpbounds.objectives import LogisticRegression  # noqa: E402
from dpbounds.objectives import _logistic_kernel as kernel  # noqa: E402


def cpu_model() -> str:
    """The CPU's model name as ``lscpu`` prints it."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                 if ln.startswith("Model name")), platform.processor())


def per_call(f: LogisticRegression, x: np.ndarray, mode: str, repeat: int) -> float:
    """Minimum CPU seconds of one ``loss_and_grad`` call with ``DPBOUNDS_KERNELS=mode``."""
    os.environ["DPBOUNDS_KERNELS"] = mode
    f.loss_and_grad(x)  # warm-up: compilation, the compiled pass's transposed copy
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        f.loss_and_grad(x)
        best = min(best, time.process_time() - t)
    return best


def per_minibatch_call(f: LogisticRegression, x: np.ndarray, idx: np.ndarray, mode: str,
                       repeat: int) -> float:
    """Minimum CPU seconds of one mini-batch ``grad(x, idx)`` with ``DPBOUNDS_KERNELS=mode``."""
    os.environ["DPBOUNDS_KERNELS"] = mode
    f.grad(x, idx)
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        f.grad(x, idx)
        best = min(best, time.process_time() - t)
    return best


def minibatch_table(args: argparse.Namespace) -> None:
    """The mini-batch gradient (compiled: rows gathered in the loop; NumPy: a (trials, m, d)
    gather and batched products), 4 trials, ns per sample-trial."""
    print(f"\nmini-batch gradient, 4 trials\n{'d':>7} {'m':>6} {'compiled':>9} {'numpy':>9} "
          f"{'ratio':>6}")
    rng = np.random.default_rng(1)
    for d in args.d:
        n = max(8, int(args.elements) // d)
        A = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        f = LogisticRegression(A, y, l2=0.01)
        x = rng.standard_normal((4, d))
        for m in args.batch:
            if m > n:
                continue
            idx = np.stack([rng.choice(n, m, replace=False) for _ in range(4)])
            c = per_minibatch_call(f, x, idx, "numba", args.repeat)
            p = per_minibatch_call(f, x, idx, "numpy", args.repeat)
            scale = 1e9 / (m * 4)
            print(f"{d:>7} {m:>6} {c * scale:>9.2f} {p * scale:>9.2f} {p / c:>6.2f}",
                  flush=True)


def _products(X: np.ndarray, W: np.ndarray, A: np.ndarray, spans: list[tuple[int, int]], *,
              wide_pass: bool) -> None:
    """Margins and gradient sums over every block of samples, one way or the other."""
    from dpbounds.backend import rowwise_matmul
    from dpbounds.objectives import _wide_kernel as wide

    g = np.zeros((X.shape[0], A.shape[1]))
    for a, b in spans:
        if wide_pass:
            wide.margins(X, A, a, b)
            wide.add_weighted_rows(W[:, :b - a], A, a, b, g)
        else:
            rowwise_matmul(np, X, A[a:b].T)
            g += rowwise_matmul(np, W[:, :b - a], A[a:b])


def wide_table(args: argparse.Namespace) -> None:
    """Both products of a full-data pass, compiled column-blocked kernels vs BLAS (CPU s)."""
    from dpbounds.objectives import _wide_kernel as wide

    block = 2048  # MarginLossObjective.block_samples
    print(f"\nproducts with the data (margins + gradient sums), n*d = {int(args.elements)}, "
          f"WIDE_MIN_D = {wide.WIDE_MIN_D}\n{'d':>8} {'n':>7} {'trials':>6} {'compiled s':>10} "
          f"{'BLAS s':>8} {'ratio':>6}")
    rng = np.random.default_rng(2)

    def best(fn) -> float:
        fn()
        out = float("inf")
        for _ in range(args.repeat):
            t = time.process_time()
            fn()
            out = min(out, time.process_time() - t)
        return out

    for d in args.d:
        n = max(8, int(args.elements) // d)
        A = rng.standard_normal((n, d))
        for trials in args.trials:
            X = rng.standard_normal((trials, d))
            W = rng.standard_normal((trials, min(n, block)))
            spans = [(a, min(n, a + block)) for a in range(0, n, block)]
            args_ = (X, W, A, spans)
            c = best(functools.partial(_products, *args_, wide_pass=True))
            p = best(functools.partial(_products, *args_, wide_pass=False))
            print(f"{d:>8} {n:>7} {trials:>6} {c:>10.3f} {p:>8.3f} {p / c:>6.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--elements", type=float, default=2**21, help="n * d (default 2^21)")
    ap.add_argument("--d", type=int, nargs="+",
                    default=[4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144])
    ap.add_argument("--trials", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, nargs="+", default=[16, 256, 4096],
                    help="mini-batch sizes m of the mini-batch table")
    ap.add_argument("--minibatch-only", action="store_true")
    ap.add_argument("--wide", action="store_true",
                    help="time the large-d products instead (default d 1024..2^20, n*d 2^25)")
    args = ap.parse_args()
    if not kernel.AVAILABLE:
        raise SystemExit("needs numba (the fast extra)")
    if EMULATED:
        print(EMULATED)
    if args.wide:
        if args.elements == 2**21:
            args.elements = 2**25
        if args.d == ap.get_default("d"):
            args.d = [1024, 4096, 8192, 32768, 131072, 1 << 20]
        print(f"CPU: {cpu_model()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        wide_table(args)
        return
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"n*d = {int(args.elements)}; COMPILED_MAX_D = {kernel.COMPILED_MAX_D}")
    print(f"{'d':>7} {'n':>7} {'trials':>6} {'compiled':>9} {'numpy':>9} {'ratio':>6}  "
          "(ns per sample-trial; ratio = numpy / compiled, > 1: compiled faster)")
    rng = np.random.default_rng(0)
    for d in [] if args.minibatch_only else args.d:
        n = max(8, int(args.elements) // d)
        A = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        f = LogisticRegression(A, y, l2=0.01)
        for trials in args.trials:
            x = rng.standard_normal((trials, d))
            c = per_call(f, x, "numba", args.repeat)
            p = per_call(f, x, "numpy", args.repeat)
            scale = 1e9 / (n * trials)
            print(f"{d:>7} {n:>7} {trials:>6} {c * scale:>9.2f} {p * scale:>9.2f} "
                  f"{p / c:>6.2f}", flush=True)
    minibatch_table(args)
    os.environ.pop("DPBOUNDS_KERNELS", None)


if __name__ == "__main__":
    main()
