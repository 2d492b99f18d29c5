"""Benchmark: the cost of recording a run's transcript (issue 34 item 1).

Run ``python bench/bench_transcript.py`` (a few seconds). For DP-SGD (without replacement
and Poisson), DP-NSGD and Gaussian DP-GD on a logistic regression (N = 1000, d = 16, batch
10, 4 trials, 2000 steps; DP-GD 200 full-batch steps), it prints the CPU time
(``time.process_time``, best of ``--repeats``) without and with ``transcript=``, their ratio,
and the transcript's size (:attr:`~dpbounds.algorithms._transcript.Transcript.nbytes`) with
the peak memory the recorded run allocates beyond the plain run (``tracemalloc``).

On the verify problems' Huber well (rows ``huber_well``: DP-SGD without replacement, Tran &
Cutkosky's Algorithms 1 and 2 with N = 1000 and 2 epochs) the compiled per-step loops run
when the fast extra is installed, and they record the norms themselves. The logistic rows
and DP-GD run the NumPy path either way; there the recorded run computes the per-sample
gradients and their norms, which the plain run's fused mean does not.

Measured (2-core shared machine, best of 3): ratio 1.0-1.1 on the compiled loops (DP-SGD
was 13-14x while recording fell back to the NumPy path), 1.0-1.5 on the NumPy paths of
DP-SGD / DP-NSGD, 4-5x for full-batch DP-GD (per-sample gradients of all n samples per step);
the transcript holds 0.46-1.0 MB for 4 trials x 2000 steps.

The Laplace momentum loop (rows ``dp_heavy_ball`` / ``dp_nag`` / ``dp_gd laplace``, 200 steps
on the same data with Kuru et al.'s L1 ball; NumPy path) records each step's per-sample
gradients for their L1 spread. Measured (2026-12-02, same machine, best of 3): ratio 1.18
for DP heavy ball with batches of 10 (53 kB), 3.2 for full-batch DP-NAG and 1.9 for the
Laplace DP-GD (22 kB each; 1.4 MB extra peak: the (trials, n, d) per-sample gradients).

``--drawn``: the tree methods' record of their node noise (one sum of squares per node and
trial), CPU of the recorded run without it (before) and with it (after). Measured
(2026-12-03, same machine under a load of 6-7, best of 5): after/before 1.037 and 0.992 for
Algorithms 1 and 2 at N = 1000, d = 16, 4 trials, 2000 steps (0.011 and 0.016 CPU-s), 0.994
and 1.041 at the verify-sized run (150 trials, 0.93 and 1.03 CPU-s): within the noise of
the measurement; 62.5 kB and 2.3 MB of draws.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbounds.algorithms import (
    dp_gd,
    dp_heavy_ball,
    dp_nag,
    dp_nsgd,
    dp_sgd,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.algorithms._transcript import Transcript
from dpbounds.objectives import HuberWell, LogisticRegression


def _data(n: int = 1000, d: int = 16) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    A = rng.uniform(size=(n, d))
    return A, np.sign(A @ rng.standard_normal(d) + 1e-3)


def _objective(n: int = 1000, d: int = 16) -> LogisticRegression:
    return LogisticRegression(*_data(n, d), l2=1e-2)


def _runs(f: LogisticRegression, steps: int) -> dict[str, Callable[[Any], Any]]:
    sgd = dict(epsilon=1.0, delta=1e-5, steps=steps, batch_size=10, step_size=0.1, trials=4,
               seed=0, trace=None)
    h = HuberWell.random(1000, 16, G=1.0, L=1.0, spread=0.5, seed=0)
    k = LogisticRegression.kuru(*_data(), lam=0.01, l1_radius=16.0)  # rows in [0, 1]^16
    lap = dict(epsilon=1.0, steps=steps // 10, trials=4, seed=0, trace=None)
    tree = dict(epsilon=1.0, delta=1e-5, epochs=max(1, steps // 1000), step_size=0.01,
                trials=4, seed=0, trace=None, x0=np.full(16, 0.2))
    return {
        "alg1 huber_well": lambda tr: tree_momentum_nsgd(h, transcript=tr, **tree),
        "alg2 huber_well": lambda tr: sensitivity_reduced_nsgd(h, transcript=tr, **tree),
        "dp_sgd huber_well": lambda tr: dp_sgd(h, clip_threshold=0.5, transcript=tr, **sgd),
        "dp_sgd w/o repl.": lambda tr: dp_sgd(f, clip_threshold=0.5, transcript=tr, **sgd),
        "dp_sgd poisson": lambda tr: dp_sgd(f, clip_threshold=0.5, sampling="poisson",
                                            public_n=f.n, transcript=tr, **sgd),
        "dp_nsgd w/o repl.": lambda tr: dp_nsgd(f, regulariser=0.1, transcript=tr, **sgd),
        "dp_gd gaussian": lambda tr: dp_gd(f, epsilon=1.0, delta=1e-5, steps=steps // 10,
                                           mechanism="gaussian", clip_threshold=0.5,
                                           trials=4, seed=0, trace=None, transcript=tr),
        "dp_heavy_ball b=10": lambda tr: dp_heavy_ball(k, batch_size=10, transcript=tr, **lap),
        "dp_nag full batch": lambda tr: dp_nag(k, transcript=tr, **lap),
        "dp_gd laplace": lambda tr: dp_gd(k, transcript=tr, **lap),
    }


def _cpu(run: Callable[[Any], Any], record: bool, repeats: int,
         cls: type[Transcript] = Transcript) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        run(cls() if record else None)
        best = min(best, time.process_time() - t0)
    return best


class _NoDraws(Transcript):
    """A transcript that does not record the drawn noise (the record before it existed)."""

    def drawn_block(self, release: int, noise: Any) -> None:  # noqa: D102
        return None


def _tree_runs() -> dict[str, Callable[[Any], Any]]:
    """The tree methods: the rows of :func:`_runs` and a verify-sized run (150 trials, the
    quick studies' count; d = 4, N = 400, 5 epochs, the norm traced every 4 steps, so the
    compiled loop runs in chunks of 4 steps and the draws are recorded per chunk)."""
    h = HuberWell.random(1000, 16, G=1.0, L=1.0, spread=0.5, seed=0)
    v = HuberWell.random(400, 4, G=1.0, L=1.0, spread=0.5, seed=0)
    tree = dict(epsilon=1.0, delta=1e-5, epochs=2, step_size=0.01, trials=4, seed=0,
                trace=None, x0=np.full(16, 0.2))
    ver = dict(epsilon=1.0, delta=1e-5, epochs=5, step_size=0.01, trials=150, seed=0,
               trace="grad_norm", trace_every=4, x0=np.full(4, 0.2))
    return {
        "alg1 huber_well": lambda tr: tree_momentum_nsgd(h, transcript=tr, **tree),
        "alg2 huber_well": lambda tr: sensitivity_reduced_nsgd(h, transcript=tr, **tree),
        "alg1 verify-sized": lambda tr: tree_momentum_nsgd(v, transcript=tr, **ver),
        "alg2 verify-sized": lambda tr: sensitivity_reduced_nsgd(v, transcript=tr, **ver),
    }


def drawn_overhead(repeats: int) -> None:
    """CPU of the tree methods plain, recorded without the drawn noise (before) and with it
    (after); the draws' share of the transcript."""
    print(f"{'tree run':20s} {'plain s':>8s} {'no draws s':>10s} {'draws s':>8s} "
          f"{'after/before':>12s} {'draws kB':>9s}")
    for name, run in _tree_runs().items():
        run(None)
        plain = _cpu(run, False, repeats)
        before = _cpu(run, True, repeats, _NoDraws)
        after = _cpu(run, True, repeats)
        tr = Transcript()
        run(tr)
        kb = tr.as_dict()["noise_drawn"].nbytes / 1024
        print(f"{name:20s} {plain:8.3f} {before:10.3f} {after:8.3f} {after / before:12.3f} "
              f"{kb:9.1f}")


def _peak(run: Callable[[Any], Any], record: bool) -> int:
    tracemalloc.start()
    run(Transcript() if record else None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--drawn", action="store_true",
                    help="only the tree methods' drawn-noise record: CPU before / after")
    args = ap.parse_args(argv)
    if args.drawn:
        drawn_overhead(args.repeats)
        return
    f = _objective()
    print(f"{'algorithm':20s} {'plain s':>8s} {'recorded s':>10s} {'ratio':>6s} "
          f"{'transcript kB':>13s} {'extra peak kB':>13s}")
    for name, run in _runs(f, args.steps).items():
        run(None)  # warm: calibration cache, compiled loop
        plain = _cpu(run, False, args.repeats)
        rec = _cpu(run, True, args.repeats)
        tr = Transcript()
        run(tr)
        extra = _peak(run, True) - _peak(run, False)
        print(f"{name:20s} {plain:8.3f} {rec:10.3f} {rec / plain:6.2f} "
              f"{tr.nbytes / 1024:13.1f} {extra / 1024:13.1f}")


if __name__ == "__main__":
    main()
