"""``dpbounds audit``: an empirical ε lower bound for an algorithm, next to its claim.

Examples::

    dpbounds audit --list
    dpbounds audit dp_gd_gaussian --neighbouring add/remove --quick
    dpbounds audit dp_sgd --trials 20000 --json
    dpbounds audit tree_momentum_nsgd --mutant      # a copy with sigma halved: flagged
    dpbounds audit all --quick                      # every algorithm and relation

The exit status is 1 when an audit refutes a claim (ε lower bound above the claimed ε), 0
otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json

from dpbounds.audit import AUDITS, audit
from dpbounds.cli import add_quantity

__all__ = ["register", "run"]

_RELATIONS = ("replace-one", "add/remove", "replace_one", "add_remove")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` sub-command."""
    p = sub.add_parser(
        "audit",
        help="empirical privacy audit: an epsilon lower bound next to the claimed epsilon",
        description=(
            "Run ALGORITHM many times on a worst-case pair of neighbouring data sets, fit a "
            "distinguishing statistic on half of the runs and certify a Clopper-Pearson lower "
            "bound on epsilon on the other half. A bound above the claimed epsilon refutes "
            "the claim (exit status 1). ALGORITHM 'all' audits every algorithm and relation."
        ),
    )
    p.add_argument("algorithm", nargs="?", metavar="ALGORITHM",
                   help="audit name (see --list), or 'all'")
    p.add_argument("--list", action="store_true", help="list the algorithms that can be audited")
    p.add_argument("--neighbouring", choices=_RELATIONS, default=None,
                   help="neighbouring relation (default: the algorithm's first declared one)")
    p.add_argument("--trials", type=_count, default=None,
                   help="runs per data set, half to select the test, half to evaluate it "
                        "(default 10000; at least 200)")
    p.add_argument("--quick", action="store_true", help="2000 runs per data set")
    add_quantity(p, "epsilon", help="target epsilon passed to the algorithm (default: the audit's)")
    add_quantity(p, "delta", help="target delta passed to the algorithm (default: the audit's)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of the lower bound (default 0.95)")
    p.add_argument("--seed", type=_count0, default=0, help="seed of the runs (default 0)")
    p.add_argument("--noise-factor", type=float, default=1.0,
                   help="multiply every noise scale by this (mutation testing; default 1)")
    p.add_argument("--mutant", action="store_true",
                   help="audit the under-noised copy (sigma / 2, Laplace scale / sqrt 2)")
    p.add_argument("--json", action="store_true", help="print the result(s) as JSON")
    p.set_defaults(func=run)


def _count(text: str) -> int:
    """A positive integer; ``1e4`` is accepted when it is a whole number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(value)


def _count0(text: str) -> int:
    return 0 if text.strip() in ("0", "0.0") else _count(text)


def _list(as_json: bool) -> int:
    rows = [dict(algorithm=s.name, relations=list(s.relations), epsilon=s.epsilon,
                 delta=s.delta, mutant_noise_factor=s.mutant_factor, trials=s.trials,
                 description=s.description) for s in AUDITS.values()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["algorithm"]) for r in rows)
    print(f"{'algorithm':{width}s}  {'relations':23s}  {'claim (eps, delta)':18s}  "
          f"{'runs':>6s}  description")
    for r in rows:
        claim = f"({r['epsilon']:g}, {r['delta']:g})"
        print(f"{r['algorithm']:{width}s}  {', '.join(r['relations']):23s}  {claim:18s}  "
              f"{r['trials']:>6d}  {r['description']}")
    print("runs: per data set by default; the claim is where an under-noised copy (sigma / 2, "
          "Laplace scale / sqrt 2) is caught at that many runs.")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the audit(s) and print them."""
    if args.list:
        return _list(args.json)
    if not args.algorithm:
        raise ValueError("ALGORITHM is required (or --list); 'all' audits every algorithm")
    if args.algorithm == "all":
        jobs = [(name, rel) for name, spec in AUDITS.items() for rel in spec.relations
                if args.neighbouring is None or rel == _norm(args.neighbouring)]
    else:
        jobs = [(args.algorithm, args.neighbouring)]
    results = []
    for name, relation in jobs:
        factor = args.noise_factor
        if args.mutant:
            factor *= AUDITS[name].mutant_factor if name in AUDITS else 1.0
        r = audit(name, relation, epsilon=args.epsilon, delta=args.delta, trials=args.trials,
                  quick=args.quick, confidence=args.confidence, seed=args.seed,
                  noise_factor=factor, progress=not args.json)
        results.append(r)
        if not args.json:
            print(r, flush=True)
    if args.json:
        rows = [r.to_dict() for r in results]
        print(json.dumps(rows[0] if args.algorithm != "all" else rows, indent=2))
    return 1 if any(r.violation for r in results) else 0


def _norm(relation: str) -> str:
    return relation.replace("_", "-").replace("add-remove", "add/remove")
