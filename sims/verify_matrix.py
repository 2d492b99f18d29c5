"""Correct algorithms against mutants: every quick ``verify`` study, several seeds.

``python -m sims.verify_matrix [--seeds 6] [--mutants] [--theorems ...] [--mutations ...]
[--mutant-seed S]`` runs each theorem's
quick study (its default grid over ``d``) for the correct algorithm with seeds ``0..S-1`` and,
with ``--mutants``, every mutant of :data:`dpbounds.verify.MUTATIONS` (or those of
``--mutations``; seed ``--mutant-seed``, default 0), then prints

* per theorem: exit status (0 PASS, 1 FAIL: a gating verdict failed, 3 INCONCLUSIVE: none
  failed and nothing was shown) per seed, CPU seconds per study;
* the mutant x theorem table: ``caught`` (by which verdicts) / ``INCONCLUSIVE`` / ``passes``
  / ``n/a``.

Not part of ``python -m sims`` (about 20 CPU-minutes with ``--mutants``): the issue-18 check
that correct code passes and broken code fails.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from dpbounds.verify import MUTATIONS, STUDIES, scaling_study

ALIASES = {
    "nonconvex.tree_momentum_nsgd": "TC Alg. 1",
    "nonconvex.sensitivity_reduced_nsgd": "TC Alg. 2",
    "nonconvex.normalized_sgd": "Yang NSGD",
    "nonconvex.clipped_sgd": "Yang SGD",
    "convex.noisy_projected_sgd": "BST14",
    "strongly_convex.nag": "DP-NAG",
    "strongly_convex.heavy_ball": "DP-SHB",
    "strongly_convex.masg": "DP-MASG",
}


def one(theorem: str, seed: int, mutation: str | None) -> tuple[str, list[str], float]:
    """``(status, failing verdicts, CPU seconds)``; status ``0``, ``1``, ``3`` or ``n/a``."""
    t0 = time.process_time()
    try:
        res = scaling_study(theorem, quick=True, seed=seed, mutation=mutation,
                            replicates=300)
    except ValueError as exc:
        if mutation is not None and "does not apply" in str(exc):
            return "n/a", [], time.process_time() - t0
        raise
    bad = [f"{v.case.split(' (')[0]}: {v.claim}" for v in res.verdicts if v.failed]
    code = {"PASS": "0", "FAIL": "1", "INCONCLUSIVE": "3"}[res.status]
    return code, bad, time.process_time() - t0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--mutants", action="store_true")
    p.add_argument("--only-mutants", action="store_true")
    p.add_argument("--theorems", nargs="+", default=list(STUDIES))
    p.add_argument("--mutations", nargs="+", default=list(MUTATIONS), choices=MUTATIONS,
                   help="the mutants to run (default all)")
    p.add_argument("--mutant-seed", type=int, default=0, help="seed of the mutant studies")
    args = p.parse_args(argv)
    ok = True
    if not args.only_mutants:
        print(f"| theorem | exit status, seeds 0..{args.seeds - 1} | CPU s per quick study |")
        print("|---|---|---|")
        for th in args.theorems:
            runs = [one(th, s, None) for s in range(args.seeds)]
            ok &= all(r[0] != "1" for r in runs)  # correct code never fails
            cpu = [r[2] for r in runs]
            fails = sorted({b for r in runs for b in r[1]})
            print(f"| {ALIASES.get(th, th)} | {' '.join(r[0] for r in runs)} "
                  f"| {min(cpu):.1f}-{max(cpu):.1f} |" + (f" {fails}" if fails else ""),
                  flush=True)
    if args.mutants or args.only_mutants:
        print("\n| mutant | " + " | ".join(ALIASES.get(t, t) for t in args.theorems) + " |")
        print("|---|" + "---|" * len(args.theorems))
        for m in args.mutations:
            cells = []
            caught = False
            for th in args.theorems:
                status, bad, _ = one(th, args.mutant_seed, m)
                caught |= status == "1"
                cells.append("n/a" if status == "n/a" else
                             ("caught: " + "; ".join(bad) if status == "1" else
                              "INCONCLUSIVE" if status == "3" else "passes"))
            ok &= caught
            print(f"| {m} | " + " | ".join(cells) + " |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
