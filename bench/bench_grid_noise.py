"""Benchmark: the cost of ``noise="grid"`` (exact integer noise on a grid, safe to release)
against ``noise="float"`` (float64 noise, for simulation). A few seconds.

Run ``python bench/bench_grid_noise.py``. It prints, each the minimum CPU time over 3 runs
(``time.process_time``; the machine is shared):

* the samplers alone, nanoseconds per number: NumPy's ``laplace`` / ``standard_normal``
  against :func:`~dpbounds.privacy.discrete.discrete_laplace_array` /
  :func:`~dpbounds.privacy.discrete.discrete_gaussian_array` (exact, int64, one rejection
  round per Python iteration), at 10^5 numbers from one generator;
* the audit's shape (many trials, few numbers each): per-trial float draws against one
  pooled grid batch over all trials (:class:`~dpbounds.privacy.discrete.RawPool`);
* whole runs of DP-GD (Laplace and Gaussian), DP heavy ball, DP-SGD and DP-NSGD (both
  samplings), and noisy projected SGD (Kamath Algorithm 3, ``calibration="rdp"``, one
  example per step; its noise is on ``n * grad``) (the grid run takes the NumPy loop, not
  the compiled one) on a logistic regression (n = 1000, d = 20, 20 trials, 200 steps),
  float vs grid, and their ratio (objective perturbation has no grid option: see its
  docstring);
* the privacy cost: the noise std (on the released mean, or the output) that meets the same
  target with each option, per algorithm (the grid mechanisms' own accounting: generic
  amplification bounds for the subsampled discrete Gaussian, zCDP for one release).
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from dpbounds.algorithms import (
    dp_gd,
    dp_heavy_ball,
    dp_nsgd,
    dp_sgd,
    noisy_projected_sgd,
    output_perturbation,
)
from dpbounds.data import kuru_synthetic
from dpbounds.objectives import LogisticRegression
from dpbounds.privacy.discrete import RawPool, discrete_gaussian_array, discrete_laplace_array

REPEATS = 3


def cpu(fn) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    n = 100_000
    rng = np.random.default_rng(0)
    rows = [
        ("float Laplace (numpy)", lambda: rng.laplace(0.0, 1.0, n)),
        ("grid Laplace, b = 2^20 units", lambda: discrete_laplace_array(Fraction(2**20), n, rng)),
        ("float Gaussian (numpy)", lambda: rng.standard_normal(n)),
        ("grid Gaussian, sigma = 2^20 units",
         lambda: discrete_gaussian_array(2**20, 2**20, n, rng)),
    ]
    print(f"samplers, ns per number ({n} numbers, min of {REPEATS} CPU times)")
    for name, fn in rows:
        print(f"  {name:36s} {cpu(fn) / n * 1e9:9.1f}")

    trials, per = 20_000, 3
    gens = [np.random.default_rng(k) for k in range(trials)]
    print(f"the audit's shape: {trials} trials x {per} numbers, one generator each, CPU s")
    print(f"  {'float Laplace (per-trial laplace calls)':44s} "
          f"{cpu(lambda: [g.laplace(0.0, 1.0, per) for g in gens]):7.3f}")
    print(f"  {'grid Laplace (one pooled batch), b = 2^20':44s} "
          f"{cpu(lambda: discrete_laplace_array(Fraction(2**20), per, RawPool(gens))):7.3f}")
    print(f"  {'float Gaussian (per-trial normal calls)':44s} "
          f"{cpu(lambda: [g.standard_normal(per) for g in gens]):7.3f}")
    print(f"  {'grid Gaussian (one pooled batch), sigma = 2^20':44s} "
          f"{cpu(lambda: discrete_gaussian_array(2**20, 2**20, per, RawPool(gens))):7.3f}")

    A, y = kuru_synthetic(n=1000, d=20, seed=0)
    f = LogisticRegression(A, y, l2=0.02, l1_radius=float(np.abs(A).sum(axis=1).max()))
    runs = {
        "DP-GD Laplace": dict(fn=dp_gd, kw=dict(epsilon=1.0)),
        "DP-GD Gaussian": dict(fn=dp_gd, kw=dict(epsilon=1.0, delta=1e-6, mechanism="gaussian",
                                                 clip_threshold=1.0)),
        "DP heavy ball (m = 100)": dict(fn=dp_heavy_ball, kw=dict(epsilon=1.0, batch_size=100)),
        "DP-SGD (B = 50, w/o repl.)": dict(fn=dp_sgd, kw=dict(
            epsilon=1.0, delta=1e-6, batch_size=50, step_size=0.5, clip_threshold=1.0)),
        "DP-SGD (B = 50, Poisson)": dict(fn=dp_sgd, kw=dict(
            epsilon=1.0, delta=1e-6, batch_size=50, step_size=0.5, clip_threshold=1.0,
            sampling="poisson", public_n=1000)),
        "DP-NSGD (B = 50, w/o repl.)": dict(fn=dp_nsgd, kw=dict(
            epsilon=1.0, delta=1e-6, batch_size=50, step_size=0.5, regulariser=0.1)),
        "DP-NSGD (B = 50, Poisson)": dict(fn=dp_nsgd, kw=dict(
            epsilon=1.0, delta=1e-6, batch_size=50, step_size=0.5, regulariser=0.1,
            sampling="poisson", public_n=1000)),
        "noisy projected SGD (B = 1)": dict(fn=noisy_projected_sgd, kw=dict(
            epsilon=1.0, delta=1e-6, radius=5.0, calibration="rdp")),
    }
    print("whole runs, CPU s (n = 1000, d = 20, 20 trials, 200 steps, trace=None)")
    print(f"  {'algorithm':26s} {'float':>8s} {'grid':>8s} {'ratio':>6s}")
    for name, spec in runs.items():
        times = {}
        for noise in ("float", "grid"):
            times[noise] = cpu(lambda noise=noise, spec=spec: spec["fn"](
                f, steps=200, trials=20, seed=0, trace=None, noise=noise, **spec["kw"]))
        print(f"  {name:26s} {times['float']:8.3f} {times['grid']:8.3f} "
              f"{times['grid'] / times['float']:6.1f}")
    print("noise std for the same target (eps = 1, delta = 1e-6), float vs grid")
    for name, spec in runs.items():
        if "delta" not in spec["kw"]:
            continue  # the Laplace grid costs ppm (docs/audit.md)
        std = {}
        for noise in ("float", "grid"):
            p = spec["fn"](f, steps=200, trials=1, seed=0, trace=None, noise=noise,
                           **spec["kw"]).params
            std[noise] = p.get("noise_std_mean", p.get("sigma", p.get("noise_std_sum", 0.0)
                                                       / spec["kw"].get("batch_size", 1)))
        print(f"  {name:26s} {std['float']:8.4f} {std['grid']:8.4f} "
              f"{std['grid'] / std['float']:6.2f}")
    std = {noise: output_perturbation(f, epsilon=1.0, delta=1e-6, seed=0, trace=None,
                                      noise=noise).params["sigma"] for noise in ("float", "grid")}
    print(f"  {'output perturbation':26s} {std['float']:8.4f} {std['grid']:8.4f} "
          f"{std['grid'] / std['float']:6.2f}")


if __name__ == "__main__":
    main()
