"""``dpbounds bound ...`` and ``dpbounds compare ...``: utility bounds from the command line.

Examples
--------
``dpbounds bound tran_cutkosky.alg2 --d 100 --N 1e5 --eps 1 --delta 1e-5`` prints the bound,
its closed-form and tuned hyper-parameters, its scaling and its sources;
``dpbounds bound --list`` lists the names; ``dpbounds compare`` puts the non-convex bounds side
by side (defaults d=100, N=1e5, eps=1, delta=1e-5, G=L=R=1), names the best and the crossovers.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dpbounds.bounds.registry import DEFAULT_PROBLEM, check_problem

_PROBLEM_HELP = {
    "d": "dimension d > 0",
    "N": "dataset size N > 0 (1e5 is fine)",
    "eps": "privacy budget epsilon > 0",
    "delta": "privacy parameter delta in (0, 1)",
    "G": "per-sample gradient bound G > 0: every loss is G-Lipschitz, ||grad f(x; z)|| <= G "
         "(the ERM bound's Lipschitz constant)",
    "L": "smoothness L > 0 of the loss (non-convex bounds; Yang et al.'s L0)",
    "R": "initial gap R >= F(x_1) - inf F > 0 (non-convex bounds; the convex bound's diameter "
         "unless --diam)",
}

_EXTRA = {
    "tau0": "gradient-noise level of Yang et al. (default 2G)",
    "L1": "(L0, L1)-smoothness constant L1 >= 0 of Yang et al. (default 0)",
    "c2": "Lemma 3.1 constant of Yang et al. (default: fitted by the RDP accountant)",
    "diam": "diameter of the constraint set, convex bounds (default R)",
}

_BOUND_OUTPUT = """\
output:
  bound         the bound with the closed-form hyper-parameter choices (the value the paper's
                theorem gives for this problem)
  closed form   those hyper-parameter choices
  tuned         the bound with its hyper-parameters tuned numerically, and their values
  gradients     the number of gradient evaluations the algorithm makes (closed-form choices)
  scaling       the leading-order exponents in d, N, eps (up to log factors) along d ~ N -> oo
  label         provenance: VERBATIM (as printed in the paper), RECONSTRUCTED, or DERIVED (by
                dpbounds; constants of the math-stripped papers are all DERIVED)
  sources       the paper results the bound rests on (--audit: the whole lemma chain)"""

_COMPARE_OUTPUT = """\
output columns:
  bound                 registry name (dpbounds bound --list)
  closed form           the bound with the closed-form hyper-parameter choices; n/a when an
                        assumption of the bound fails at this problem (the reason is printed)
  tuned                 the bound with numerically tuned hyper-parameters ('-' with --no-tune)
  gradients             gradient evaluations of the algorithm (closed-form choices)
  scaling (up to logs)  leading-order exponents in d, N, eps along d ~ N -> oo
  label                 provenance: VERBATIM, RECONSTRUCTED or DERIVED (by dpbounds)
below the table: bounds that do not apply (and why), vacuous bounds (>= G, which every
G-Lipschitz loss satisfies), the best bound, and where one bound overtakes another along
--crossover-variable."""


def _add_problem(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("problem (shared by all bounds)")
    for k, v in DEFAULT_PROBLEM.items():
        g.add_argument(f"--{k}", type=float, default=v, help=f"{_PROBLEM_HELP[k]} (default {v:g})")
    e = p.add_argument_group("family-specific (optional)")
    for k, h in _EXTRA.items():
        e.add_argument(f"--{k}", type=float, default=None, help=h)


def _problem(args: argparse.Namespace) -> dict[str, float]:
    out = {k: getattr(args, k) for k in DEFAULT_PROBLEM}
    out.update({k: getattr(args, k) for k in _EXTRA if getattr(args, k) is not None})
    return check_problem(out, prefix="--")


def _fmt(v: Any) -> str:
    v = float(v)
    return f"{v:.4e}" if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3) else f"{v:.6g}"


def _bound(args: argparse.Namespace) -> int:
    from dpbounds.bounds import registry

    if args.list or not args.name:
        for n in registry.names():
            e = registry.get(n)
            print(f"{n:24s} [{e.family}] {e.title}")
        return 0
    e = registry.get(args.name)
    problem = _problem(args)
    why = e.applicability(problem)
    if why is not None:
        raise ValueError(f"{e.name} does not apply to this problem: {why}")
    value = e.value(problem)  # ValueError in words if an assumption still fails numerically
    params = e.params(problem)
    hyper = e.hyperparameters(problem)
    tuned = e.optimize(problem) if (e.tunable and not args.no_tune) else None
    scaling = e.scaling()
    if args.json:
        print(json.dumps({
            "name": e.name, "title": e.title, "parameters": params, "bound": value,
            "hyperparameters": hyper,
            "tuned": None if tuned is None else {"bound": tuned.value,
                                                 "hyperparameters": tuned.hyperparameters},
            "gradients": e.gradients(problem),
            "scaling": {k: str(v) for k, v in scaling.powers.items()},
            "scaling_of": e.scaling_label or "whole bound",
            "whole_bound_scaling": {k: str(v) for k, v in e.whole_scaling().powers.items()},
            "sources": [str(s) for s in e.tuned.sources],
        }, indent=2))
        return 0
    print(f"{e.name}: {e.title}")
    print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in params.items()))
    if hyper:
        print(f"  bound: {_fmt(value)}   (closed-form hyper-parameters)")
        print("  closed form: " + ", ".join(f"{k}={_fmt(v)}" for k, v in hyper.items()))
    else:
        print(f"  bound: {_fmt(value)}   (no free hyper-parameters)")
    if tuned is not None:
        print(f"  tuned:       bound {_fmt(tuned.value)} with "
              + ", ".join(f"{k}={_fmt(v)}" for k, v in tuned.hyperparameters.items()))
    g = e.gradients(problem)
    if g is not None:
        print(f"  gradient evaluations: {_fmt(g)}")
    path = ", ".join(f"{k} ~ s^{v}" for k, v in scaling.regime.items())
    print(f"  scaling: {e.scaling_text()}  (up to log factors; along {path}, s -> oo)")
    print(f"  label: {e.tuned.provenance}" + (f"  ({e.notes})" if e.notes else ""))
    if args.latex:
        print("  LaTeX: " + e.tuned.latex())
    if args.audit:
        print("  log factors: " + " | ".join(str(f) for f in scaling.log_factors))
        print(e.theorem.audit())
    else:
        print("  sources:")
        for s in e.tuned.sources[:3]:
            print(f"    {s}")
        if len(e.tuned.sources) > 3:
            print(f"    ... {len(e.tuned.sources) - 3} more (use --audit for the lemma chain)")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from dpbounds.bounds.compare import compare

    result = compare(_problem(args), tune=not args.no_tune,
                     crossover_variable=args.crossover_variable)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        print(result.to_text())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bound`` and ``compare`` sub-commands."""
    p = sub.add_parser("bound", help="evaluate one utility bound (hyper-parameters, scaling)",
                       description="Evaluate one utility bound: value, closed-form and tuned "
                                   "hyper-parameters, leading-order scaling, sources.",
                       epilog=_BOUND_OUTPUT)
    p.add_argument("name", nargs="?", help="bound name (see --list)")
    p.add_argument("--list", action="store_true", help="list the bound names")
    p.add_argument("--no-tune", action="store_true", help="skip the numeric tuning")
    p.add_argument("--latex", action="store_true", help="print the bound in LaTeX")
    p.add_argument("--audit", action="store_true", help="print the whole lemma chain")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_problem(p)
    p.set_defaults(func=_bound)

    c = sub.add_parser("compare", help="compare the non-convex bounds for one problem",
                       description="Put the non-convex bounds side by side, name the best, "
                                   "and find where one overtakes another.",
                       epilog=_COMPARE_OUTPUT)
    c.add_argument("--no-tune", action="store_true", help="skip the numeric tuning")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument("--crossover-variable", default="N", choices=("N", "d", "eps"),
                   help="variable along which crossovers are searched (default N)")
    _add_problem(c)
    c.set_defaults(func=_compare)
