"""Benchmark: cost of the checked composition (``Bound.compose``'s monotonicity check).

Two measurements:

* the import time of ``dpbounds.bounds.registry`` (which builds every bound, so runs every
  composition check), each in a fresh interpreter, ``--repeats`` times; with ``--baseline DIR``
  (a checkout of the code before the check) both trees are measured alternately, side by
  side, and the ratio of the medians is printed;
* each composition of the library, re-run with the proof cache cleared (cold) and then warm,
  with the status of its check.

Run: ``python bench/bench_compose_checks.py [--repeats 15] [--baseline /path/to/old/checkout]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_IMPORT = ("import time; t, c = time.perf_counter(), time.process_time(); "
           "import dpbounds.bounds.registry; "
           "print(time.perf_counter() - t, time.process_time() - c)")


def import_seconds(tree: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to import the registry in a fresh interpreter, ``tree`` on the path.

    CPU time is the steadier number on a shared machine.
    """
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _IMPORT], cwd=tree, env=env, check=True,
                         capture_output=True, text=True)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def compositions() -> list[tuple[str, object]]:
    """Every ``compose`` call of the library, as a thunk."""
    from dpbounds.bounds.convex import noisy_projected_sgd as dp_erm
    from dpbounds.bounds.convex import output_perturbation as op
    from dpbounds.bounds.nonconvex import clipped_sgd, normalized_sgd
    from dpbounds.bounds.nonconvex import sensitivity_reduced as sr
    from dpbounds.bounds.nonconvex import tree_momentum as tc

    bst = dp_erm.bst14_excess_risk.steps[0][1]
    return [
        ("tran_cutkosky: lemma12 <- theorem4", lambda: tc.lemma12.compose(
            "n", {"sigma": tc.theorem4})),
        ("tran_cutkosky: error_split <- lemma11_average, noise", lambda: tc.error_split.compose(
            "e", {"momentum_err": tc.lemma11_average, "tree_err": tc._noise})),
        ("tran_cutkosky/sensitivity_reduced: lemma5 <- error", lambda: tc.lemma5.compose(
            "_", {"noise_err": tc._error})),
        ("sensitivity_reduced: lemma7 <- theorem8", lambda: sr.lemma7.compose(
            "n", {"sigma1": sr.theorem8_sigma1, "sigma2": sr.theorem8_sigma2})),
        ("yang: nsgd_inversion <- nsgd_descent, a", lambda: normalized_sgd.inversion_nsgd.compose(
            "t", {"Q": normalized_sgd.nsgd_descent.tuned(), "a": normalized_sgd._a},
            exact=("a",), assumptions=normalized_sgd.nsgd_theorem.assumptions,
            regime={"T": 1})),
        ("yang: sgd_inversion <- sgd_descent", lambda: clipped_sgd.inversion_sgd.compose(
            "t", {"Q": clipped_sgd.sgd_descent.tuned()},
            assumptions=clipped_sgd.sgd_theorem.assumptions, regime={"T": 1})),
        ("dp_erm: shamir_zhang <- noisy G", lambda: dp_erm.shamir_zhang.compose(
            "t", {"G": dp_erm._G_noisy}, assumptions=bst.assumptions, regime={"d": 1, "n": 1})),
        ("output_perturbation: noise excess risk <- sigma", lambda: op.excess_risk_of_noise.compose(
            "t", {"sigma": op._sigma_average}, regime={"d": 1, "n": 1})),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="checkout of the code before the check (measured alternately)")
    args = parser.parse_args(argv)

    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            times[name].append(import_seconds(tree))
    print(f"import dpbounds.bounds.registry, {args.repeats} fresh interpreters each "
          "(alternating):")
    for name, ts in times.items():
        wall, cpu = ([t[i] for t in ts] for i in (0, 1))
        print(f"  {name:10s} wall median {statistics.median(wall):.3f} s (min {min(wall):.3f})"
              f"  CPU median {statistics.median(cpu):.3f} s (min {min(cpu):.3f})")
    if args.baseline is not None:
        for i, kind in enumerate(("wall", "CPU")):
            ratio = (statistics.median(t[i] for t in times["this tree"])
                     / statistics.median(t[i] for t in times["baseline"]))
            print(f"  ratio of {kind} medians (this tree / baseline): {ratio:.3f}")

    from dpbounds.bounds.theorem import monotonicity

    print("\ncompositions of the library (check cold = proof cache cleared):")
    for label, build in compositions():
        monotonicity._check.cache_clear()
        t0 = time.perf_counter()
        thm = build()
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        build()
        warm = time.perf_counter() - t0
        status = ", ".join(f"{m.placeholder}: {m.status}" for m in thm.monotonicity)
        print(f"  {cold * 1e3:7.1f} ms cold {warm * 1e3:6.1f} ms warm  {label}  [{status}]")


if __name__ == "__main__":
    main()
