"""Seeding N trials: one SeedSequence + PCG64 object per trial (the old path) against
``dpbounds._seeds.TrialSeeds`` (NumPy's hash vectorised over the trials), same streams.

Run: ``python bench/bench_trial_seeding.py`` (prints a Markdown table; CPU-s by
``time.process_time``, best of 3). Checks the first draw of every trial is the same on both.
"""

from __future__ import annotations

import platform
import subprocess
import time

import numpy as np

from dpbounds._seeds import TrialSeeds


def old(entropy: int, trials: int) -> list[np.random.Generator]:
    seqs = [np.random.SeedSequence(entropy, spawn_key=(k,)) for k in range(trials)]
    split = [np.random.SeedSequence(s.entropy, spawn_key=(*s.spawn_key, 1_000_003, 0))
             for s in seqs]
    return [np.random.Generator(np.random.PCG64(s)) for s in split]


def new(entropy: int, trials: int) -> list[np.random.Generator]:
    return TrialSeeds(entropy, (), (), trials).child(1_000_003, 0).generators()


def best(f, *args) -> tuple[float, list]:
    times, out = [], None
    for _ in range(3):
        c = time.process_time()
        out = f(*args)
        times.append(time.process_time() - c)
    return min(times), out


def main() -> None:
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                  if ln.startswith("Model name")), platform.processor())
    print(f"CPU: {model}; numpy {np.__version__}\n")
    print("| trials | old CPU-s | new CPU-s | ratio | same first draws |")
    print("|---|---|---|---|---|")
    for trials in (1_000, 10_000, 100_000):
        t_old, g_old = best(old, 12345, trials)
        t_new, g_new = best(new, 12345, trials)
        same = all(a.integers(2**62) == b.integers(2**62) for a, b in zip(g_old, g_new))
        print(f"| {trials:,} | {t_old:.3f} | {t_new:.3f} | {t_old / t_new:.1f}x | {same} |")


if __name__ == "__main__":
    main()
