"""Issue 34 item 5/7: can the full-batch add/remove DP-SGD audit pair see ``wrong_sampling_rate``?

Today ``dp_sgd``'s add/remove pair is one record (public n = 1, Poisson at q = B / n = 1 with
B = 1), so the mutant (the accountant fed q = 1/n: the batch size forgotten) is the correct run
bit for bit. This script measures, without changing the registered audit, a candidate pair
with a full batch of B = n = 8 (q = 1 still): D = {+r e1, 7 records (C/8) e1}, D' = D + {-r e1}
(public n = 8: the size of the smaller set; the clipped sums are C + 7C/8 and 7C/8, a change
of C as before; C/8 and the step size 4 are exact in binary). The candidate replaces the
``dp_sgd`` spec's add/remove setting in this process only. Usage::

    PYTHONPATH=$PWD python bench/audit_full_batch_add_remove.py [--seeds 0 1 2] [--n 8] \
        [--private-n] [--trials RUNS]

Per seed and mutant (``none`` = correct): exit status, eps_lower, the claim it is held to.
The pair is registered since as the audit ``dp_sgd_full_batch`` (beside the one-record pair,
which ``--private-n`` shows is still needed).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from dpbounds.audit import runner
from dpbounds.audit.neighbours import LinearObjective
from dpbounds.audit.settings._common import ADD_REMOVE, CLIP, RECORD_NORM


def candidate(n: int) -> None:
    """Swap ``dp_sgd``'s add/remove setting for the full batch of ``n`` (this process)."""
    spec = runner.AUDITS["dp_sgd"]
    inner = spec.build

    def build(relation, epsilon, delta):  # type: ignore[no-untyped-def]
        s = inner(relation, epsilon, delta)
        if relation is not ADD_REMOVE:
            return s
        e = np.array([1.0])
        rest = np.tile((CLIP / n) * e, (n - 1, 1))
        d = np.vstack([RECORD_NORM * e, rest])
        pair = (LinearObjective(d), LinearObjective(np.vstack([d, -RECORD_NORM * e])))
        kw = dict(s.kwargs, batch_size=n, public_n=n)
        return dataclasses.replace(s, pair=pair, kwargs=kw,
                                   pair_description=f"full batch of {n} (candidate)")

    runner.AUDITS["dp_sgd"] = dataclasses.replace(spec, build=build)


def private_n(on: bool) -> None:
    """Issue 8 item 1's pre-fix defect on ``dp_sgd`` (this process): each data set's own,
    private size passed as ``public_n`` (as ``tests/audit/test_mutation.py`` re-creates it)."""
    spec = runner.AUDITS["dp_sgd"]
    inner = getattr(spec.function, "inner", spec.function)
    if not on:
        runner.AUDITS["dp_sgd"] = dataclasses.replace(spec, function=inner)
        return

    def run(objective, **kwargs):  # type: ignore[no-untyped-def]
        kwargs["public_n"] = objective.n
        return inner(objective, **kwargs)

    run.inner = inner  # type: ignore[attr-defined]
    runner.AUDITS["dp_sgd"] = dataclasses.replace(spec, function=run)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--trials", type=int, default=None, help="runs per set (default --quick)")
    ap.add_argument("--private-n", action="store_true",
                    help="also issue 8's private-n defect (at its claim eps = 2, delta = 1e-5)")
    args = ap.parse_args()
    for n in (1, args.n):
        if n > 1:
            candidate(n)
        for mutant in (None, "wrong_sampling_rate", "private_n"):
            if mutant == "private_n" and not args.private_n:
                continue
            private_n(mutant == "private_n")
            for seed in args.seeds:
                t0 = time.process_time()
                kw = dict(quick=True) if args.trials is None else dict(trials=args.trials)
                kw.update(dict(epsilon=2.0, delta=1e-5) if mutant == "private_n" else {})
                r = runner.audit("dp_sgd", "add_remove", null=False, seed=seed, **kw,
                                 mutant=None if mutant == "private_n" else mutant)
                print(f"n = {n:2d} {mutant or 'none':20s} seed {seed}: {r.status:12s} "
                      f"eps_lower {r.epsilon_lower:.3f} claim {r.claimed_epsilon:.3f} "
                      f"({time.process_time() - t0:.1f} CPU-s)", flush=True)


if __name__ == "__main__":
    main()
