"""Benchmark: online tree aggregation vs COMPOSE-and-sum vs the direct reference.

Run ``python bench/bench_tree_aggregation.py`` (about two minutes on a 2-core machine;
``--quick`` for a smoke run). It prints

1. time per step of :class:`~dpbounds.algorithms.tree_aggregation.TreeAggregator` (binary
   counter, incremental release: O(d) amortised per step) as T grows 10^3 -> 10^6, side by side
   with :class:`~dpbounds.algorithms.tree_aggregation.ComposeAndSumAggregator` (node sums cached,
   release re-summed over COMPOSE(1, t): O(d log T) per step), with the vector operations each
   performs per step (counted, not timed);
2. the direct COMPOSE-and-sum-from-scratch reference
   (:func:`~dpbounds.algorithms.tree_aggregation.tree_momentum_reference`, O(T^2 d) in total)
   on the smaller T, with the ratio to the online tree;
3. the total run time of Algorithm 2 (:func:`dpbounds.algorithms.tree_momentum.
   sensitivity_reduced_nsgd`) as the number of epochs grows, with the fitted log-log slope
   (1 = linear in T; the authors state theirs is worse than quadratic), online release vs
   COMPOSE-and-sum release side by side;
4. the tree noise of Algorithm 2 (DERIVED reconstruction) against Algorithm 1 as E grows:
   Algorithm 1's grows like sqrt(E), Algorithm 2's sensitivity-reduced noise does not.

Timings on a shared machine are noisy: read the ratios measured side by side in one run.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpbounds.algorithms.tree_aggregation import (
    ComposeAndSumAggregator,
    TreeAggregator,
    tree_momentum_reference,
)


def _time_tree(cls: type, n_steps: int, values: np.ndarray, noises: np.ndarray,
               alpha: float) -> float:
    """Run ``n_steps`` steps cycling through a pool of pre-drawn inputs (memory stays small)."""
    tree = cls(values.shape[1:], alpha, xp=np)
    step = tree.step
    pool = values.shape[0]
    start = time.perf_counter()
    for t in range(n_steps):
        k = t % pool
        step(values[k], noises[k])
    return time.perf_counter() - start


def _vector_ops(n_steps: int, compose_each_step: bool) -> float:
    """Vector operations per step, counted from the algorithm (merges + release update)."""
    ops = 0
    for t in range(1, n_steps + 1):
        k = (t & -t).bit_length() - 1
        ops += 1 + 2 * k  # new node + (scale-add, remove) per merged node
        ops += bin(t).count("1") if compose_each_step else 2
    return ops / n_steps


def bench_scaling(horizons: list[int], d: int, trials: int, alpha: float) -> None:
    rng = np.random.default_rng(0)
    values = rng.standard_normal((257, trials, d))
    noises = rng.standard_normal((257, trials, d))
    print(f"\n[1] time per step, trials={trials}, d={d}, alpha={alpha}")
    print(f"{'T':>9} {'online us/step':>15} {'compose us/step':>16} {'ratio':>7} "
          f"{'ops online':>11} {'ops compose':>12}")
    for n in horizons:
        t_on = _time_tree(TreeAggregator, n, values, noises, alpha)
        t_cs = _time_tree(ComposeAndSumAggregator, n, values, noises, alpha)
        print(f"{n:>9} {1e6 * t_on / n:>15.2f} {1e6 * t_cs / n:>16.2f} {t_cs / t_on:>7.2f} "
              f"{_vector_ops(n, False):>11.2f} {_vector_ops(n, True):>12.2f}")


def bench_reference(horizons: list[int], d: int, trials: int, alpha: float) -> None:
    from dpbounds.privacy.tree import compose

    rng = np.random.default_rng(1)
    print(f"\n[2] direct COMPOSE-and-sum from scratch vs online, trials={trials}, d={d}")
    print(f"{'T':>7} {'online s':>10} {'direct s':>10} {'direct/online':>14} {'max |diff|':>11}")
    for n in horizons:
        values = rng.standard_normal((n, trials, d))
        noises = rng.standard_normal((n, trials, d))
        tree = TreeAggregator((trials, d), alpha, xp=np)
        start = time.perf_counter()
        online = np.stack([tree.step(values[t], noises[t]) for t in range(n)])
        t_on = time.perf_counter() - start
        start = time.perf_counter()
        direct = tree_momentum_reference(values, alpha, noises, xp=np, compose=compose)
        t_ref = time.perf_counter() - start
        diff = float(np.max(np.abs(online - direct)))
        print(f"{n:>7} {t_on:>10.3f} {t_ref:>10.3f} {t_ref / t_on:>14.1f} {diff:>11.2e}")


def _nonconvex_problem(n: int, d: int, seed: int = 0):
    from dpbounds.objectives import NonconvexLogisticRegression

    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.sign(A @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n))
    y[y == 0] = 1.0
    return NonconvexLogisticRegression(A, y, lam=0.1)


def bench_algorithm2(n: int, epochs: list[int], d: int, trials: int) -> None:
    from dpbounds.algorithms.tree_momentum import sensitivity_reduced_nsgd

    objective = _nonconvex_problem(n, d)
    print(f"\n[3] Algorithm 2 total run time, N={n}, trials={trials}, d={d} "
          "(two per-sample gradients per step after epoch 1, no trace)")
    print(f"{'epochs':>7} {'T':>9} {'online s':>9} {'us/step':>8} {'compose s':>10} "
          f"{'compose/online':>15}")
    steps, times = [], []
    for e in epochs:
        run = {}
        for release in ("online", "compose"):
            start = time.perf_counter()
            sensitivity_reduced_nsgd(
                objective, epsilon=1.0, delta=1e-6, epochs=e, step_size=1e-3,
                trials=trials, seed=0, trace=None, release=release,
            )
            run[release] = time.perf_counter() - start
        steps.append(n * e)
        times.append(run["online"])
        print(f"{e:>7} {n * e:>9} {run['online']:>9.2f} {1e6 * run['online'] / (n * e):>8.1f} "
              f"{run['compose']:>10.2f} {run['compose'] / run['online']:>15.2f}")
    slope = np.polyfit(np.log(steps), np.log(times), 1)[0]
    print(f"        log-log slope of the total time in T: {slope:.3f} "
          "(1 = linear, 2 = quadratic)")


def bench_noise_components(n: int, epochs: list[int], d: int, trials: int) -> None:
    """Tree noise ||m_hat - m|| of Algorithms 1 and 2 at growing E (same eps, u = eta N)."""
    from dpbounds.algorithms.tree_momentum import sensitivity_reduced_nsgd, tree_momentum_nsgd

    objective = _nonconvex_problem(n, d)
    print(f"\n[4] momentum noise and gradient norm, N={n}, d={d}, eps=1, delta=1e-6, "
          f"{trials} trials, u = eta*N = 0.2 (mean over the recorded epochs)")
    print(f"{'epochs':>7} {'alg1 noise':>11} {'alg2 noise':>11} {'ratio':>6} "
          f"{'alg1 |gradF|':>13} {'alg2 |gradF|':>13} {'gamma':>7}")
    for e in epochs:
        out = []
        for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
            res = alg(objective, epsilon=1.0, delta=1e-6, epochs=e, step_size=0.2 / n,
                      trials=trials, seed=0, trace_every=n)
            out.append((float(np.mean(res.diagnostics["noise_error"][:, 1:])),
                        float(np.mean(res.trace[:, -1])), res.params.get("mixing", math.nan)))
        (n1, g1, _), (n2, g2, gamma) = out
        print(f"{e:>7} {n1:>11.3f} {n2:>11.3f} {n2 / n1:>6.2f} {g1:>13.4f} {g2:>13.4f} "
              f"{gamma:>7.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = parser.parse_args()
    if args.quick:
        bench_scaling([10**3, 10**4], d=8, trials=1, alpha=1e-3)
        bench_reference([256, 512], d=8, trials=1, alpha=1e-2)
        bench_algorithm2(200, [2, 4], d=10, trials=2)
        bench_noise_components(200, [2, 4], d=10, trials=2)
        return
    bench_scaling([10**3, 10**4, 10**5, 10**6], d=8, trials=1, alpha=1e-3)
    bench_scaling([10**3, 10**4, 10**5], d=4096, trials=4, alpha=1e-3)
    bench_reference([1000, 2000, 4000], d=8, trials=1, alpha=1e-2)
    bench_algorithm2(1000, [4, 16, 64, 256], d=20, trials=4)
    bench_noise_components(1000, [4, 16, 64], d=20, trials=8)
    print(f"\nlog2(10^6) = {math.log2(1e6):.1f}: COMPOSE(1, t) has up to that many nodes")


if __name__ == "__main__":
    main()
