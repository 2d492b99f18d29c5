"""``dpbounds audit``: an empirical ε lower bound for an algorithm, next to its claim.

Examples::

    dpbounds audit --list
    dpbounds audit --list-mutants
    dpbounds audit dp_gd_gaussian --neighbouring add_remove --quick
    dpbounds audit dp_sgd --trials 20000 --json
    dpbounds audit tree_momentum_nsgd --mutant      # sigma halved: flagged
    dpbounds audit dp_nsgd --mutant nsgd_sigma_r    # a bug that shipped
    dpbounds audit dp_sgd --neighbouring add_remove --mutant realised_batch --plan
    dpbounds audit plan dp_gd_gaussian --target-ratio 0.9
    dpbounds audit all --quick                      # every algorithm and relation: a table
    dpbounds audit dp_sgd --replay                  # D vs D', one seed, noise off: sensitivity
    dpbounds audit dp_sgd --replay --mutant scaled_contribution    # exit 1
    dpbounds audit dp_sgd --replay --neighbouring add_remove         # null record, Poisson

Exit status: 0 PASS (consistent), 1 FAIL (an audit refutes a claim: ε lower bound above the
claimed ε), 2 bad input, 3 INCONCLUSIVE (none refuted, but the null control fired, so the
estimator cannot vouch for a pass, or the GDP estimate exceeds the claim by more than 3 standard
errors: a finding, labelled an estimate, printed beside the rigorous bound), 4 on an internal
error (a bug). With --replay: 0 when every release moves by at most its declared sensitivity
and the control flow is the same on D and D', 1 otherwise.
"""

from __future__ import annotations

import argparse
import math
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dpbounds._discovery import unknown_name
from dpbounds.cli import (
    EXIT_USAGE,
    DpParser,
    _catalog,
    add_quantity,
    real,
    strict_json,
    warn_no_privacy,
)

if TYPE_CHECKING:
    from dpbounds.privacy import Neighbouring

__all__ = ["register", "run"]

#: Printed under the table of ``audit all``.
SHARED_NOTE = (
    "Audits that share a transcript statistic print identical numbers: the Laplace methods "
    "(DP-GD, heavy ball, NAG, MASG) run on the same pair with the same per-step noise scale and "
    "the same seeds, and the audit inverts each method's momentum update to recover the "
    "released noisy gradients, which are then the very same numbers; likewise DP-SGD and "
    "DP-NSGD with a batch of one clipped (or normalised) record of norm above the bound; and a "
    "Gaussian method under its two relations (add/remove halves both the sensitivity the noise "
    "is calibrated to and the signal). The audit sees what is released, not the code path.")
COLUMNS_NOTE = (
    "eps_lower: certified at the claim's delta (Clopper-Pearson, held-out split); @0.05: at "
    "delta = 0.05; tight: what exact accounting of the same noise gives (mu_claim-GDP), the "
    "most any audit can certify for a correct algorithm; mu_hat [CI]: GDP estimate of the "
    "linear statistic (an estimate, p: Gaussian-shape fit); null: the same estimator on "
    "D = D (ok: certified 0). claim: the run's ledger read by the tightest accountant that "
    "applies (acct; gdp = exact composition of full-batch Gaussian noise), the algorithm asked "
    "for the epsilon that makes it the target; own: what the algorithm's own accountant says "
    "of the same run (--ledger-claim audits against that instead).")


class _Help(argparse.Action):
    """``-h``: the ``audit`` page, or after ``plan`` the page of ``audit plan``."""

    def __init__(self, option_strings: list[str], plan: argparse.ArgumentParser,
                 **kwargs: Any) -> None:
        # dest "help", as argparse's own help action: one flag reads into one name everywhere
        super().__init__(option_strings, dest="help", default=argparse.SUPPRESS,
                         nargs=0, help=kwargs.get("help"))
        self.plan = plan

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        (self.plan if getattr(namespace, "algorithm", None) == "plan" else parser).print_help()
        parser.exit()


def _plan_page(relations: tuple[str, ...]) -> argparse.ArgumentParser:
    """The help page of ``audit plan`` (its options are the ``audit`` parser's: a test checks
    that each one is accepted there)."""
    p = DpParser(prog="dpbounds audit plan", usage="dpbounds audit plan ALGORITHM [options]",
                 description="Print the runs each estimator needs (95% power) to certify "
                             "eps_lower / claim >= --target-ratio for ALGORITHM ('all': every "
                             "algorithm and relation), without running the audit. Same as "
                             "'dpbounds audit ALGORITHM --plan'.")
    p.add_argument("algorithm", metavar="ALGORITHM", help="audit name (see 'dpbounds audit "
                                                          "--list') or 'all'")
    add_quantity(p, "neighbouring", choices=relations,
                 help="neighbouring relation (default: the algorithm's first declared one)")
    p.add_argument("--target-ratio", type=real, default=0.9,
                   help="the goal eps_lower / claim (default 0.9)")
    p.add_argument("--mutant", nargs="?", const="sigma/2", default=None, metavar="NAME",
                   help="plan for a copy with a known bug (default sigma/2)")
    add_quantity(p, "epsilon", help="target epsilon passed to the algorithm (default: the audit's)")
    add_quantity(p, "delta", help="target delta passed to the algorithm (default: the audit's)")
    p.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the lower bound (default 0.95)")
    p.add_argument("--seed", type=_count0, default=0, help="seed of the probe run (default 0)")
    p.add_argument("--json", action="store_true", help="print the plan(s) as JSON")
    return p


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` sub-command (no import of the audits: :mod:`._catalog`)."""
    relations = tuple(_catalog.constant("relations"))
    MEMORY_BUDGET_GB = _catalog.constant("audit_memory_budget_gb")
    p = sub.add_parser(
        "audit", add_help=False,
        help="empirical privacy audit: an epsilon lower bound next to the claimed epsilon",
        description=(
            "Run ALGORITHM many times on a worst-case pair of neighbouring data sets (and once "
            "more on D alone, the null control), fit a distinguishing statistic on half of the "
            "runs and certify a Clopper-Pearson lower bound on epsilon on the other half. A "
            "bound above the claimed epsilon refutes the claim (exit status 1). ALGORITHM "
            "'all' audits every algorithm and relation; 'plan ALGORITHM' prints the runs each "
            "estimator needs (see 'dpbounds audit plan --help')."),
    )
    p.add_argument("-h", "--help", action=_Help, plan=_plan_page(relations),
                   help="show this help message and exit ('audit plan --help': the plan page)")
    p.add_argument("algorithm", nargs="?", metavar="ALGORITHM",
                   help="audit name (see --list), 'all', or 'plan'")
    p.add_argument("planned", nargs="?", metavar="PLANNED",
                   help="with ALGORITHM = plan: the algorithm to plan for")
    p.add_argument("--list", action="store_true", help="list the algorithms that can be audited")
    p.add_argument("--list-mutants", action="store_true", help="list the mutants (--mutant NAME)")
    add_quantity(p, "neighbouring", choices=relations,
                 help="neighbouring relation (default: the algorithm's first declared one)")
    p.add_argument("--trials", type=_trials, default=None,
                   help="runs per data set, half to select the test, half to evaluate it "
                        "(default the audit's, see --list; at least 200)")
    p.add_argument("--quick", action="store_true", help="2000 runs per data set")
    add_quantity(p, "epsilon", help="target epsilon passed to the algorithm (default: the audit's)")
    add_quantity(p, "delta", help="target delta passed to the algorithm (default: the audit's)")
    p.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the lower bound (default 0.95)")
    p.add_argument("--seed", type=_count0, default=0, help="seed of the runs (default 0)")
    p.add_argument("--noise-factor", type=real, default=1.0,
                   help="multiply every noise scale by this (mutation testing; default 1)")
    p.add_argument("--mutant", nargs="?", const="sigma/2", default=None, metavar="NAME",
                   help="audit a copy with a known bug (default sigma/2; see --list-mutants)")
    p.add_argument("--low-bits", action="store_true",
                   help="audit the floating-point side channel: a statistic of the raw "
                        "released iterates' last mantissa bits (Mironov 2012)")
    add_quantity(p, "noise", choices=("float", "grid", "both"),
                 help="the algorithm's noise: float (float64, for simulation), grid (exact "
                      "integer noise on a grid, safe to release) or both (default: both with "
                      "--low-bits where the algorithm has a grid option, else float)")
    p.add_argument("--ledger-claim", action="store_true",
                   help="audit against the algorithm's own accountant's epsilon for the target "
                        "(default: the tightest accountant's reading of the run's ledger, the "
                        "algorithm asked for the epsilon that makes it the target)")
    p.add_argument("--tradeoff", action="store_true",
                   help="also print the statistic's empirical trade-off curve (FPR, FNR) beside "
                        "the least FNR the claim allows (and mu_claim-GDP's)")
    p.add_argument("--plan", action="store_true",
                   help="print the runs needed (95%% power) instead of running the audit")
    p.add_argument("--replay", action="store_true",
                   help="instead of the audit, replay ALGORITHM on D and D' (replace-one; "
                        "--neighbouring add_remove: D' holds a null record, same n, for "
                        "dp_sgd / dp_nsgd with Poisson sampling and dp_gd_gaussian) with "
                        "one seed and the noise off: each release's difference against its "
                        "declared sensitivity and the control flow (exit 1 on a violation); "
                        "--mutant NAME takes a verify mutation here "
                        f"({', '.join(_catalog.constant('replay_mutations'))}); algorithms: "
                        f"{', '.join(_catalog.constant('replay_algorithms'))}")
    p.add_argument("--target-ratio", type=real, default=0.9,
                   help="plan: the goal eps_lower / claim (default 0.9)")
    p.add_argument("--max-memory-gb", type=real, default=MEMORY_BUDGET_GB,
                   help=f"refuse an audit estimated above this (default {MEMORY_BUDGET_GB:g})")
    p.add_argument("--allow-large", action="store_true",
                   help="run an audit above the memory budget")
    p.add_argument("--json", action="store_true", help="print the result(s) as JSON")
    p.set_defaults(func=run)


def _count(text: str, minimum: int = 1) -> int:
    """An integer >= ``minimum``; ``1e4`` is accepted when it is a whole number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not value.is_integer() or value < minimum:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
    return int(value)


def _count0(text: str) -> int:
    """A seed: a whole number >= 0 (the message said >= 1 and 0 was accepted)."""
    return _count(text, 0)


def _trials(text: str) -> int:
    """--trials: the runner's range starts at 200 (``audit``'s check_int), said here."""
    return _count(text, 200)


def _dumps(obj: Any) -> str:
    """Strict JSON (``NaN``/``Infinity`` refused: the writer must have mapped them)."""
    return strict_json(obj)


def _list(as_json: bool) -> int:
    rows = _catalog.rows("audit")
    if as_json:
        print(_dumps(rows))
        return 0
    width = max(len(r["algorithm"]) for r in rows)
    print(f"{'algorithm':{width}s}  {'relations':23s}  {'claim (eps, delta)':18s}  "
          f"{'runs':>6s}  description")
    for r in rows:
        claim = f"({r['epsilon']:g}, {r['delta']:g})"
        star = "" if r["in_all"] else "*"
        where = f"  [from {r['origin']}]" if r.get("origin", "dpbounds") != "dpbounds" else ""
        print(f"{r['algorithm'] + star:{width + 1}s} {', '.join(r['relations']):23s}  "
              f"{claim:18s}  {r['trials']:>6d}  {r['description']}{where}")
    print("runs: per data set by default; the claim is where an under-noised copy (sigma / 2, "
          "Laplace scale / sqrt 2) is caught at that many runs.")
    if not all(r["in_all"] for r in rows):
        print("*: a release audit (a recipe, not an algorithm): audited by name, not by "
              "'audit all'.")
    return 0


def _list_mutants(as_json: bool) -> int:
    rows = _catalog.rows("mutants")
    if as_json:
        print(_dumps(rows))
        return 0
    for r in rows:
        print(f"{r['name']}: {r['description']} [{r['source']}]\n    applies to: "
              f"{', '.join(r['applies_to'])}")
    return 0


def _jobs(args: argparse.Namespace) -> Sequence[tuple[str, Neighbouring | None]]:
    from dpbounds.audit import AUDITS
    from dpbounds.audit.mutation import MUTANTS
    from dpbounds.privacy import Neighbouring

    # the CLI boundary: the relation becomes the enum here, once
    relation = None if args.neighbouring is None else Neighbouring.coerce(args.neighbouring)
    if args.algorithm != "all":
        return [(args.algorithm, relation)]
    jobs: list[tuple[str, Neighbouring | None]] = [
        (name, rel) for name, spec in AUDITS.items() for rel in spec.relations
        if relation is None or rel is relation]
    if args.mutant is not None:  # only where the bug applies
        mut = MUTANTS.get(args.mutant)
        if mut is None:
            from dpbounds._validation import did_you_mean

            raise ValueError(f"mutant must be one of {sorted(MUTANTS)}, got {args.mutant!r}"
                             f"{did_you_mean(args.mutant, MUTANTS)}")
        jobs = [(n, r) for n, r in jobs if r is not None and mut.applies(AUDITS[n], r)]
    return jobs


def _plan(args: argparse.Namespace, name: str, relation: Neighbouring | None) -> Any:
    from dpbounds.audit.planner import plan

    return plan(name, relation, target_ratio=args.target_ratio, mutant=args.mutant,
                epsilon=args.epsilon, delta=args.delta, confidence=args.confidence,
                seed=args.seed)


#: the options of ``audit`` with their defaults, and the modes that read each (an option a
#: mode does not read was accepted and dropped: ``--replay --noise-factor 3`` printed the
#: replay unchanged, ``--plan --trials 5000`` the same plan)
_READ_BY = {
    "trials": (None, ("audit",)), "quick": (False, ("audit",)),
    "noise_factor": (1.0, ("audit",)), "low_bits": (False, ("audit",)),
    "ledger_claim": (False, ("audit",)), "tradeoff": (False, ("audit",)),
    "max_memory_gb": (None, ("audit",)), "allow_large": (False, ("audit",)),
    "confidence": (0.95, ("audit", "--plan")), "target_ratio": (0.9, ("--plan",)),
    "plan": (False, ("--plan",)),
}


def _refuse_unread(args: argparse.Namespace) -> None:
    """A ``ValueError`` naming the first option given that the chosen mode does not read."""
    mode = "--replay" if args.replay else "--plan" if args.plan else "audit"
    for name, (default, modes) in _READ_BY.items():
        if name == "max_memory_gb":
            default = _catalog.constant("audit_memory_budget_gb")
        value = getattr(args, name, default)
        if mode not in modes and value != default:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} is not read with {mode}" if mode != "audit" else
                             f"{flag} is read by --plan only")
    if args.quick and args.trials is not None:
        raise ValueError("give --quick (2000 runs per data set) or --trials, not both")


def _early_checks(args: argparse.Namespace, known: dict[str, str] | None) -> None:
    """The library's refusals of --neighbouring, --trials, --noise-factor's top and --mutant
    (in :func:`dpbounds.audit.runner.audit`'s order), said before its imports from the catalog
    (each took 1.1-1.2 CPU-s; the words are the library's, which
    ``tests/test_edges_fuzz4.py`` checks with this switched off). Not for ``--replay``,
    whose mutants and relations are the replay's own."""
    if args.replay:
        return
    row = None
    if known is not None and args.algorithm != "all":
        name = known.get(str(args.algorithm).replace("-", "_"))
        row = next((r for r in _catalog.rows("audit") if r["algorithm"] == name), None)
    if row is not None and args.neighbouring is not None and \
            args.neighbouring not in row["relations"]:
        raise ValueError(f"neighbouring must be one of {tuple(row['relations'])} for "
                         f"{row['algorithm']}, got {args.neighbouring!r}")
    low, high = _catalog.constant("audit_trials")  # (the parser refuses below 200)
    if args.trials is not None and args.trials > high:
        raise ValueError(f"trials must be an integer in [{low}, {high}], got {args.trials}")
    most = _catalog.constant("audit_max_noise_factor")
    if args.noise_factor > most:  # (below 0 and NaN: dpbounds.cli._ranges)
        raise ValueError(f"noise_factor must lie in [0, {most:g}], got {args.noise_factor:g}")
    if known is None:  # a plug-in's audits: the live registries answer
        return
    mutants = sorted(r["name"] for r in _catalog.rows("mutants"))
    if args.mutant is not None and args.mutant not in mutants:
        from dpbounds._suggest import did_you_mean

        raise ValueError(f"mutant must be one of {mutants}, got {args.mutant!r}"
                         f"{did_you_mean(args.mutant, mutants)}")
    # a mutant that does not apply, in get_mutant's words (1.4-1.5 CPU-s before; fuzz round
    # 5), where nothing the library checks first (a grid noise it refuses) is in the way
    if (args.mutant is not None and row is not None
            and getattr(args, "noise", "float") in (None, "float")):
        relation = args.neighbouring or row["relations"][0]
        mut = next(r for r in _catalog.rows("mutants") if r["name"] == args.mutant)
        if f"{row['algorithm']} ({relation})" not in mut["applies_to"]:
            raise ValueError(f"mutant {args.mutant!r} does not apply to {row['algorithm']} "
                             f"({relation}): {mut['description']}")
    confidence = getattr(args, "confidence", 0.95)
    if not 0.0 < confidence < 1.0:  # NaN too: 2.2 CPU-s of imports before (fuzz 17)
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    _early_memory(args, row)


def _early_memory(args: argparse.Namespace, row: dict[str, Any] | None) -> None:
    """:func:`dpbounds.audit.runner.audit`'s memory refusal of ``--trials`` (1.0-1.2 CPU-s of
    imports and a probe run before; issue 36), from the catalog's features per run, where
    nothing the library checks first can differ: one audit and one noise option, no mutant,
    no low-bits run, no plan, the audit's own δ and an ε inside the range over which the
    catalog found the count constant (else the library says it)."""
    if (row is None or args.trials is None or args.plan or args.allow_large
            or args.mutant is not None or args.low_bits or args.noise == "both"
            or args.delta is not None):
        return
    name, noise = row["algorithm"], args.noise or "float"
    relation = args.neighbouring or row["relations"][0]
    k = _catalog.constant("audit_features").get(name, {}).get(relation, {}).get(noise)
    if k is None or (args.epsilon is not None
                     and not 1e-3 <= args.epsilon / row["epsilon"] <= 1e3):
        return
    base, per_value = _catalog.constant("audit_memory_model")
    need = base + per_value * float(args.trials) * k * 3  # D, D' and the null runs on D
    budget = args.max_memory_gb
    if need > budget * 1e9:
        raise ValueError(
            f"trials = {args.trials:.3g} would need about {need / 1e9:.3g} GB (over "
            f"max_memory_gb = {budget:g}: 3 sets x {k} features per run); use fewer trials "
            "or raise max_memory_gb (CLI: --max-memory-gb, or --allow-large)")


def run(args: argparse.Namespace) -> int:
    """Run the audit(s) (or their plans) and print them."""
    if (args.list or args.list_mutants) and args.algorithm:
        raise ValueError(f"--list and --list-mutants take no ALGORITHM, got "
                         f"{args.algorithm!r}")
    if args.list:
        return _list(args.json)
    if args.list_mutants:
        return _list_mutants(args.json)
    if not args.algorithm:
        raise ValueError("ALGORITHM is required (or --list); 'all' audits every algorithm")
    if args.algorithm == "plan":
        if not args.planned:
            raise ValueError("'audit plan' needs an ALGORITHM to plan for (see --list)")
        args.algorithm, args.plan = args.planned, True
    elif args.planned:
        raise ValueError(f"unexpected argument {args.planned!r} (only 'plan' takes a second "
                         "name)")
    if not 0.0 < args.target_ratio:
        raise ValueError(f"target_ratio must be > 0, got {args.target_ratio!r}")
    if args.target_ratio > 1.0:  # the planner's words, before its imports (0.71 CPU-s)
        raise ValueError(f"target_ratio must lie in (0, 1] (eps_lower / claim; a correct "
                         f"algorithm's eps_lower never exceeds its claim), got "
                         f"{args.target_ratio!r}")
    known = _catalog.names("audit")
    if (known is not None and args.algorithm != "all"
            and str(args.algorithm).replace("-", "_") not in known):  # before the imports
        raise ValueError(unknown_name("audit", args.algorithm, known, "dpbounds audit --list"))
    _refuse_unread(args)
    _early_checks(args, known)
    # the audit's data set size is its own: the threshold without n (delta > 0.1)
    warn_no_privacy(args.epsilon, args.delta)
    if args.replay:
        return _replay(args)
    from dpbounds.audit import audit

    jobs = _jobs(args)
    if args.plan:
        plans = [_plan(args, name, rel) for name, rel in jobs]
        if args.json:
            rows = [p.to_dict() for p in plans]
            print(_dumps(rows[0] if len(rows) == 1 and args.algorithm != "all" else rows))
        else:
            print("\n".join(str(p) for p in plans))
        return 0
    from dpbounds.audit.registry import grid_audit_names

    grid_names = grid_audit_names()

    def one(name: str, relation: Neighbouring | None, noise: str, low_bits: bool) -> Any:
        return audit(name, relation, epsilon=args.epsilon, delta=args.delta,
                     trials=args.trials, quick=args.quick, confidence=args.confidence,
                     seed=args.seed, noise_factor=args.noise_factor, progress=not args.json,
                     mutant=args.mutant,
                     max_memory_gb=None if args.allow_large else args.max_memory_gb,
                     low_bits=low_bits, tight=not args.ledger_claim, noise=noise)

    def pair(name: str, relation: Neighbouring | None, low_bits: bool,
             side: bool = False) -> list[Any]:
        """Float and grid runs; only the float one where the algorithm refuses the grid for
        this setting (noted on stderr), none at all for a side-channel row of ``audit all``
        (a float leak is shown only beside its grid twin)."""
        try:
            grid = one(name, relation, "grid", low_bits)
        except ValueError as err:
            print(f"dpbounds: note: no grid run of {name}: {err}", file=sys.stderr)
            return [] if side else [one(name, relation, "float", low_bits)]
        return [one(name, relation, "float", low_bits), grid]

    from dpbounds.cli._paths import ResultWriter

    out = ResultWriter("audit")  # a full stdout keeps the results in a named file
    results = []
    for name, relation in jobs:
        noises = _noises(args, name in grid_names)
        if args.noise == "both" and noises == ("float",):  # asked for both: say why one
            print(f"dpbounds: note: {name} has no grid noise option: --noise both audits its "
                  "float noise only", file=sys.stderr)
        runs = (pair(name, relation, args.low_bits) if noises == ("float", "grid")
                and args.noise in (None, "both") else [one(name, relation, n, args.low_bits)
                                             for n in noises])
        for r in runs:
            results.append(r)
            if not args.json and args.algorithm != "all":
                out.print(str(r))
                if args.tradeoff:
                    out.print(tradeoff_table(r))
    side: list[Any] = []
    if args.algorithm == "all" and not args.low_bits and args.mutant is None:
        # the floating-point side channel of every algorithm with a grid option, float vs
        # grid (its first relation, or the one asked for): float is expected to be refuted
        from dpbounds.audit.registry import AUDITS

        tried: set[str] = set()
        for name, relation in jobs:
            if name in grid_names and name not in tried and AUDITS[name].side_channel:
                tried.add(name)
                side += pair(name, relation, True, side=True)
    if args.json:
        rows = [r.to_dict() for r in results + side]
        out.print(_dumps(rows[0] if args.algorithm != "all" and len(rows) == 1 else rows))
    elif args.algorithm == "all":
        out.print(table(results))
        if side:
            out.print("\n" + low_bits_table(side))

    # a float run refuted by its last bits is the known side channel of simulation noise
    # (reported, not a failure) when its grid twin was audited beside it
    counted = [r for r in results + side if not _expected_float_leak(r, results + side)]
    # a refuted claim exits 1 even on runs that failed the independence check (the status
    # reads INCONCLUSIVE there); the white-box facts are certain
    if any(r.violation or r.not_post_processing or r.seed_ignored or r.overshoots_target
           for r in counted):
        status = 1
    else:
        status = 3 if any(r.status == "INCONCLUSIVE" for r in counted) else 0
    if out.error is not None:  # every result kept in the named file; a verdict outranks it
        print(f"dpbounds: error: {out.error}", file=sys.stderr)
        return status if status else EXIT_USAGE
    return status


def _noises(args: argparse.Namespace, has_grid: bool) -> tuple[str, ...]:
    """The noise options to audit for one algorithm."""
    choice = args.noise if args.noise is not None else ("both" if args.low_bits else "float")
    if choice == "both":
        return ("float", "grid") if has_grid else ("float",)
    return (choice,)


def _expected_float_leak(r: Any, results: list[Any]) -> bool:
    """A low-bits audit of float noise whose grid twin (same algorithm and relation) was
    audited in the same command."""
    return (r.low_bits and r.noise == "float"
            and any(o.low_bits and o.noise == "grid" and o.algorithm == r.algorithm
                    and o.neighbouring is r.neighbouring for o in results))


#: What the side-channel table of ``audit all`` says under it.
LOW_BITS_NOTE = (
    "Floating-point side channel (Mironov 2012): the low-bits statistic reads each raw "
    "released iterate's sign, exponent and last 3 significand bits (2 full-batch steps). "
    "noise=float (the default, for simulation) releases float64 sums whose last bits carry "
    "the gradient: REFUTED is expected (at the default runs; --quick may not certify "
    "it) and does not set the exit status. noise=grid releases "
    "k * 2^-j with exact integer noise (dpbounds.algorithms._grid): it must be consistent; "
    "use it for any run whose iterates are published.")


def low_bits_table(results: list[Any]) -> str:
    """The float vs grid low-bits audits of ``audit all`` as a table, with its note."""
    head = (f"{'algorithm (relation)':38s} {'noise':>5s} {'claim':>6s} {'eps_lower':>9s} "
            f"{'null':>4s} {'runs':>6s} {'CPU s':>5s}  verdict")
    lines = ["floating-point side channel (--low-bits), float vs grid noise", head,
             "-" * len(head)]
    for r in results:
        label = f"{r.algorithm} ({r.neighbouring.value})"
        null = "-" if not math.isfinite(r.null_epsilon_lower) else (
            "FP" if r.null_false_positive else "ok")
        verdict = ("REFUTED (expected: float64 noise is not release-safe)"
                   if r.violation and _expected_float_leak(r, results)
                   else {"FAIL": "VIOLATION", "PASS": "not refuted"}.get(r.status,
                                                                          "INCONCLUSIVE"))
        lines.append(f"{label:38s} {r.noise:>5s} {r.claimed_epsilon:6.3g} "
                     f"{r.epsilon_lower:9.3f} {null:>4s} {r.trials:6d} {r.cpu_seconds:5.1f}  "
                     f"{verdict}")
    return "\n".join([*lines, "", *textwrap.wrap(LOW_BITS_NOTE, 100)])


def _replay(args: argparse.Namespace) -> int:
    """``--replay``: the replay verdicts of ALGORITHM (``all``: of every replayable one)."""
    algorithms = tuple(_catalog.constant("replay_algorithms"))
    mutations = tuple(_catalog.constant("replay_mutations"))
    if args.algorithm != "all" and args.algorithm not in algorithms:
        raise ValueError(f"algorithm must be one of {', '.join(algorithms)} (or all) for "
                         f"--replay, got {args.algorithm!r}")
    from dpbounds.privacy import Neighbouring

    relation = (Neighbouring.REPLACE_ONE if args.neighbouring is None
                else Neighbouring.coerce(args.neighbouring))
    if args.mutant is not None and args.mutant not in mutations:
        raise ValueError(f"mutant must be one of {', '.join(mutations)} with --replay, got "
                         f"{args.mutant!r}")
    from dpbounds.verify.replay import ADD_REMOVE_REPLAYS, replay

    names = algorithms if args.algorithm == "all" else (args.algorithm,)
    if relation is not Neighbouring.REPLACE_ONE and args.algorithm == "all":
        names = tuple(n for n in names if n in ADD_REMOVE_REPLAYS)
    if args.mutant is not None and args.algorithm == "all":
        fits = {"cyclic_batches": ("dp_sgd", "dp_nsgd"),
                "unshuffled": ("tree_momentum_nsgd", "sensitivity_reduced_nsgd")}
        names = tuple(n for n in names if n in fits.get(args.mutant, ("dp_sgd",)))
    verdicts = [v for n in names for v in replay(n, seed=args.seed, mutation=args.mutant,
                                                 neighbouring=relation.value)]
    if args.json:
        print(_dumps([v.as_dict() for v in verdicts]))
    else:
        for v in verdicts:
            print(f"{v.study}: {v.case}: {v.claim}: measured {v.measured:.6g} vs "
                  f"{v.predicted:.6g} -> {v.status}")
    return 1 if any(v.failed for v in verdicts) else 0


def _num(v: float, fmt: str = ".3f") -> str:
    return format(v, fmt) if math.isfinite(v) else "-"


def tradeoff_table(r: Any) -> str:
    """The empirical trade-off curve of one audit beside the claim's (an estimate)."""
    lines = ["empirical trade-off (estimate; evaluation runs) beside the claim's: a correct "
             "algorithm has fnr >= claim_fnr",
             f"{'alpha':>7s} {'fpr':>8s} {'fnr':>8s} {'fnr CI':>19s} {'claim_fnr':>9s} "
             f"{'gdp_fnr':>8s}"]
    for row in r.tradeoff:
        gdp = "-" if row.get("gdp_fnr") is None else f"{row['gdp_fnr']:.4f}"
        lines.append(f"{row['alpha']:7.3g} {row['fpr']:8.4f} {row['fnr']:8.4f} "
                     f"[{row['fnr_low']:.4f}, {row['fnr_high']:.4f}] {row['claim_fnr']:9.4f} "
                     f"{gdp:>8s}")
    return "\n".join(lines)


def table(results: list[Any]) -> str:
    """The results of ``audit all`` as a fixed-width table, with its notes."""
    head = (f"{'algorithm (relation)':38s} {'claim':>5s} {'acct':>5s} {'own':>5s} "
            f"{'delta':>6s} {'eps_lower':>9s} {'ratio':>5s} {'@0.05':>6s} {'tight':>6s} "
            f"{'mu_hat [CI]':>18s} {'mu_claim':>8s} {'fit p':>6s} {'null':>4s} "
            f"{'runs':>6s} {'CPU s':>5s}  verdict")
    lines = [head, "-" * len(head)]
    for r in results:
        label = f"{r.algorithm} ({r.neighbouring.value})" + (f" [{r.mutant}]" if r.mutant else "")
        mu = (f"{r.mu_hat:.2f} [{r.mu_low:.2f}, {r.mu_high:.2f}]" if math.isfinite(r.mu_hat)
              else "-")
        null = "-" if not math.isfinite(r.null_epsilon_lower) else (
            "FP" if r.null_false_positive else "ok")
        lines.append(
            f"{label:38s} {r.claimed_epsilon:5.3g} {r.claim_accountant:>5s} "
            f"{_num(r.ledger_epsilon, '.2f'):>5s} {r.delta:6.2g} {r.epsilon_lower:9.3f} "
            f"{_num(r.ratio, '.2f'):>5s} {r.epsilon_lower_reference:6.3f} "
            f"{_num(r.epsilon_tight):>6s} {mu:>18s} {_num(r.mu_claim):>8s} "
            f"{_num(r.mu_gof_pvalue, '.2g'):>6s} {null:>4s} {r.trials:6d} "
            f"{r.cpu_seconds:5.1f}  "
            + {"FAIL": "VIOLATION", "PASS": "consistent"}.get(r.status, "INCONCLUSIVE")
            + (" (estimate > claim)" if r.estimate_exceeds_claim else "")
            + (" (null fired)" if r.null_false_positive and not r.violation else "")
            + (" (runs dependent)" if r.runs_dependent else ""))
    lines += ["", *textwrap.wrap(COLUMNS_NOTE, 100), "", *textwrap.wrap(SHARED_NOTE, 100)]
    return "\n".join(lines)
