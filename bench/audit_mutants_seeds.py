"""The audit's mutants over seeds 1-5 (issue 34 item 7): exit status and estimates per run.

Each row runs ``dpbounds audit ALG --quick --mutant NAME --seed S --json`` in this process
(the CLI's own ``main``; 2000 runs per data set) for one algorithm the mutant applies to
(the batched pairs for the mutants that only a pair with n, B > 1 can see), and the correct
algorithms (``none``) as the control. Usage::

    PYTHONPATH=$PWD python bench/audit_mutants_seeds.py [--seeds 1 2 3 4 5] > out.jsonl
    PYTHONPATH=$PWD python bench/audit_mutants_seeds.py --default-runs --only \
        wrong_sampling_rate:dp_sgd_batched > full.jsonl     # the default run count
    python bench/audit_mutants_seeds.py --table out.jsonl        # the markdown table

Exit status: 0 PASS, 1 FAIL (caught: eps_lower above the claim), 3 INCONCLUSIVE.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time

#: (mutant, algorithm, neighbouring); mutant None: the correct algorithm (control)
CASES: tuple[tuple[str | None, str, str], ...] = (
    (None, "dp_sgd", "replace_one"), (None, "dp_sgd", "add_remove"),
    (None, "dp_sgd_batched", "replace_one"), (None, "dp_nsgd", "replace_one"),
    (None, "dp_heavy_ball", "replace_one"),
    ("sigma/2", "dp_sgd", "replace_one"), ("nsgd_sigma_r", "dp_nsgd", "replace_one"),
    ("realised_batch", "dp_sgd", "add_remove"), ("replace_one_as_C", "dp_sgd", "replace_one"),
    ("laplace_std", "dp_heavy_ball", "replace_one"), ("data_dependent", "dp_sgd", "replace_one"),
    ("data_dependent", "dp_sgd_batched", "replace_one"),
    ("data_dependent", "dp_gd_gaussian", "replace_one"),
    # the batched pairs at n = 40, B = 20 (replace-one: the offset records b, issue 34)
    (None, "dp_sgd_batched", "add_remove"), (None, "dp_nsgd_batched", "replace_one"),
    ("data_dependent", "dp_sgd_batched", "add_remove"),
    ("data_dependent", "dp_nsgd_batched", "replace_one"),
    ("wrong_sampling_rate", "dp_sgd_batched", "add_remove"),
    ("wrong_sampling_rate", "dp_nsgd_batched", "replace_one"),
    ("reused_noise", "dp_sgd", "replace_one"),
    ("wrong_sampling_rate", "dp_sgd_batched", "replace_one"),
    ("parameter_noise", "dp_sgd_batched", "replace_one"),
    ("coordinate_noise", "dp_sgd_batched", "replace_one"),
    ("trial_noise", "dp_sgd", "replace_one"),
    # the full-batch pair at n = 9, step 3 (issue 34): no longer the correct run
    ("wrong_sampling_rate", "dp_sgd", "replace_one"),
    ("parameter_noise", "dp_sgd", "replace_one"),
)
STATUS = {0: "pass", 1: "CAUGHT", 3: "INCONCL."}


def run(seeds: list[int], quick: bool = True, only: list[str] | None = None) -> None:
    from dpbounds.cli import main

    for mutant, alg, rel in CASES:
        key = f"{mutant or 'none'}:{alg}"
        if only and key not in only and f"{key}:{rel}" not in only:
            continue
        for seed in seeds:
            argv = ["audit", alg, "--seed", str(seed), "--json", "--neighbouring", rel]
            argv += ["--quick"] if quick else []
            if mutant:
                argv += ["--mutant", mutant]
            out, err = io.StringIO(), io.StringIO()
            t0 = time.process_time()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
            cpu = time.process_time() - t0
            try:
                res = json.loads(out.getvalue())
            except json.JSONDecodeError:
                res = {}
            keys = ("claimed_epsilon", "epsilon_lower", "null_epsilon_lower", "mu_hat",
                    "mu_low", "mu_high", "mu_claim")
            print(json.dumps(dict(mutant=mutant or "none", algorithm=alg, neighbouring=rel,
                                  seed=seed, quick=quick, exit=rc, cpu=round(cpu, 2),
                                  **{k: res.get(k) for k in keys},
                                  err=err.getvalue().strip()[-200:])), flush=True)


def table(path: str) -> None:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    seeds = sorted({r["seed"] for r in rows})
    print("| mutant | audit | " + " | ".join(f"seed {s}" for s in seeds)
          + " | eps_lower / claim (min-max) | mu_hat CI excludes mu_claim | CPU s |")
    print("|---|---|" + "---|" * len(seeds) + "---|---|---|")
    keys: dict[tuple[str, str, str, str], list[dict]] = {}
    for r in rows:
        runs = "quick" if r.get("quick", True) else "default runs"
        keys.setdefault((r["mutant"], r["algorithm"], r["neighbouring"], runs), []).append(r)
    for (mut, alg, rel, runs), rs in keys.items():
        by = {r["seed"]: r for r in rs}
        cells = [STATUS.get(by[s]["exit"], f"exit {by[s]['exit']}") if s in by else "-"
                 for s in seeds]
        ratio = [r["epsilon_lower"] / r["claimed_epsilon"] for r in rs
                 if r.get("epsilon_lower") is not None and r.get("claimed_epsilon")]
        excl = sum(1 for r in rs if r.get("mu_low") is not None and r.get("mu_claim") is not None
                   and (r["mu_low"] > r["mu_claim"] or r["mu_high"] < r["mu_claim"]))
        span = f"{min(ratio):.3f}-{max(ratio):.3f}" if ratio else "-"
        print(f"| {mut} | {alg} ({rel}, {runs}) | " + " | ".join(cells)
              + f" | {span} | {excl}/{len(rs)} | {sum(r['cpu'] for r in rs):.1f} |")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--table", metavar="JSONL")
    p.add_argument("--default-runs", action="store_true",
                   help="the audit's default run count instead of --quick")
    p.add_argument("--only", nargs="+", metavar="MUTANT:ALG[:REL]",
                   help="only these cases (e.g. none:dp_sgd_batched wrong_sampling_rate:"
                        "dp_sgd_batched:replace_one)")
    a = p.parse_args()
    if a.table:
        table(a.table)
    else:
        run(a.seeds, quick=not a.default_runs, only=a.only)
    sys.exit(0)
