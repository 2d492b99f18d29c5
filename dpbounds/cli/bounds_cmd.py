"""``dpbounds bound ...`` and ``dpbounds compare ...``: utility bounds from the command line.

Examples
--------
``dpbounds bound nonconvex.sensitivity_reduced_nsgd --dimension 100 --dataset-size 1e5
--epsilon 1 --delta 1e-5`` (or, with the papers' symbols and the 0.1 id, ``dpbounds bound
tran_cutkosky.alg2 --d 100 --N 1e5 --eps 1``) prints the bound, its closed-form and tuned
hyper-parameters, its scaling and its sources; ``dpbounds bound --list`` lists the ids, their
problem classes, kinds and aliases; ``dpbounds compare`` puts the bounds of the problem's class
side by side (defaults d=100, N=1e5, eps=1, delta=1e-5, G=L=R=1: the non-convex ones; with
``--mu``, ``--sensitivity`` the strongly convex ones), names the best and the crossovers.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dpbounds._discovery import unknown_name
from dpbounds.cli import _catalog, add_quantity, flag_used, real, strict_json

# from the catalog: the help imports no bound (the registry pulls in sympy and scipy)
DEFAULT_PROBLEM: dict[str, float] = _catalog.constant("default_problem")
PROBLEM_QUANTITIES: dict[str, str] = _catalog.constant("problem_quantities")

#: help of the problem keys where it says more than the notation table
_PROBLEM_HELP = {
    "d": "dimension d > 0",
    "N": "dataset size N > 0 (1e5 is fine)",
    "eps": "privacy budget epsilon > 0",
    "delta": "privacy parameter delta in (0, 1)",
    "G": "per-sample gradient bound G > 0: every loss is G-Lipschitz, ||grad f(x; z)|| <= G "
         "(the ERM bound's Lipschitz constant)",
    "L": "smoothness L > 0 of the loss (non-convex bounds; Yang et al.'s L0)",
    "R": "initial gap R >= F(x_1) - inf F > 0 (the strongly convex bounds' E0 = F(x0) - F*; "
         "the convex bound's diameter unless --diameter)",
}

_EXTRA = {
    "tau0": "gradient-noise level of Yang et al. (default 2G)",
    "L1": "(L0, L1)-smoothness constant L1 >= 0 of Yang et al. (default 0)",
    "c2": "Lemma 3.1 constant of Yang et al. (default: fitted by the RDP accountant)",
    "diam": "diameter of the constraint set, convex bounds (default R)",
    "mu": "strong convexity 0 < mu <= L: the problem is strongly convex (its bounds are "
          "compared instead of the non-convex ones)",
    "S1": "sensitivity S_1 > 0 of the per-step gradient sum (L1, Laplace noise; strongly convex "
          "bounds)",
    "m": "batch size 1 <= m <= N, without replacement (strongly convex bounds; default N)",
    "max_horizon": "largest horizon T searched by the strongly convex bounds (default 1000, "
                   "the largest T of Kuru et al.'s Section 5)",
}

_BOUND_OUTPUT = """\
output:
  bound         the bound with the closed-form hyper-parameter choices (the value the paper's
                theorem gives for this problem)
  closed form   those hyper-parameter choices
  tuned         the bound with its hyper-parameters tuned numerically, and their values
  gradients     the number of gradient evaluations the algorithm makes (closed-form choices)
  scaling       the leading-order exponents in d, N, eps (up to log factors) along d ~ N -> oo;
                n/a with the reason where the walk cannot order the bound (--json:
                scaling_failure)
  VACUOUS       printed when the bound is at or above what it must beat: G (a gradient norm
                never exceeds it) or sqrt(2 L R) (the start's gradient: doing nothing) for the
                non-convex bounds, G diam (convex), R = F(x0) - F* (strongly convex)
  label         provenance: VERBATIM (as printed in the paper), RECONSTRUCTED, or DERIVED (by
                dpbounds; constants of the math-stripped papers are all DERIVED)
  sources       the paper results the bound rests on (--audit: the whole lemma chain)
with --smallest VAR / --largest VAR: from which VAR (up to which) the bound is <= --target,
with the monotonicity checked on the bound over the searched range, e.g.
  dpbounds bound tran_cutkosky.alg2 --d 4 --eps 8 --smallest N --target 1"""

_COMPARE_OUTPUT = """\
output columns:
  bound                 registry name (dpbounds bound --list)
  closed form           the bound with the closed-form hyper-parameter choices; n/a when an
                        assumption of the bound fails at this problem (the reason is printed)
  tuned                 the bound with numerically tuned hyper-parameters ('-' with --no-tune)
  gradients             gradient evaluations of the algorithm (closed-form choices)
  scaling (up to logs)  leading-order exponents in d, N, eps along d ~ N -> oo
  label                 provenance: VERBATIM, RECONSTRUCTED or DERIVED (by dpbounds)
below the table: bounds that do not apply (and why), vacuous bounds (at or above G, which
every G-Lipschitz loss satisfies, or the do-nothing value sqrt(2 L R); G diam for the convex
bounds, R for the strongly convex ones), the best bound, and where one bound overtakes another
along --crossover-variable (only crossings where a bound says something; the others are
counted)."""


def _add_problem(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("problem (shared by all bounds)")
    for k, v in DEFAULT_PROBLEM.items():
        add_quantity(g, PROBLEM_QUANTITIES[k], default=v, help=_PROBLEM_HELP[k])
    e = p.add_argument_group("optional (the bounds that need them say so)")
    for k, h in _EXTRA.items():
        add_quantity(e, PROBLEM_QUANTITIES[k], help=h)
    add_quantity(e, "problem_class", choices=("nonconvex", "convex", "strongly_convex",
                                              "quadratic"))


#: problem keys the table's trivial bounds read whatever the bound reads (G; sqrt(2 L R), dropped
#: when L1 > 0; G diam; R): typed for a bound that does not, they still move its vacuity verdict
_READ_BY_TRIVIAL = ("G", "L", "R", "diam", "L1", "problem_class")


def refuse_unread(args: argparse.Namespace, entry: Any, problem: dict[str, Any],
                  also_read: tuple[str, ...] = ()) -> None:
    """A ``ValueError`` for the first typed problem flag that ``entry``'s bound does not read
    (``Entry.unread``): ``bound yang.nsgd --m 10`` printed the bound as without it.
    ``also_read``: keys something beside the bound reads (a method's calibration)."""
    typed = set(getattr(args, "_flags_typed", None) or {})
    keys = [k for k, dest in PROBLEM_QUANTITIES.items()
            if dest in typed and k not in (*_READ_BY_TRIVIAL, *also_read)]
    for k in entry.unread(problem, keys) if keys else ():
        raise ValueError(f"{flag_used(args, PROBLEM_QUANTITIES[k])} is not read by "
                         f"{entry.name}'s bound (another value changes none of its parameters): "
                         "leave it out")


def _outside_ranges(e: Any, params: Any, values: Any, which: str) -> list[str]:
    """Hyper-parameters printed outside their declared ``tunable`` range (a closed-form
    horizon T = 0.175 beside a range [1, 1e7] read as a runnable choice: walkthrough of stop
    77; the tuner keeps the closed form admissible, so the tuned value can be it too)."""
    notes = []
    for k, rng in (getattr(e, "tunable", None) or {}).items():
        if k not in values:
            continue
        try:
            lo, hi = rng(params) if callable(rng) else rng
            v = float(values[k])
        except Exception:  # noqa: BLE001 - a range that cannot be read is not reported
            continue
        if v < float(lo) or v > float(hi):
            side = "below" if v < float(lo) else "above"
            notes.append(f"{k} = {_fmt(v)} lies {side} its declared range [{_fmt(lo)}, "
                         f"{_fmt(hi)}] ({which}; a run cannot take it as "
                         f"is: verify rounds it into the range)")
    return notes


def _fractional_counts(hyper: Any) -> list[str]:
    """A closed-form count that is not whole (the theorem's formula gives E = 28.04 epochs):
    say that a run takes a neighbour (the tuned row holds whole counts already)."""
    from dpbounds.bounds.theorem.symbols import COUNT_SYMBOLS  # loaded with the bound

    notes = []
    for k, v in hyper.items():
        try:
            v = float(v)
        except (TypeError, ValueError):
            continue
        if k in COUNT_SYMBOLS and math.isfinite(v) and v >= 1 and v != math.floor(v):
            notes.append(f"the closed form's {k} = {_fmt(v)} is not a whole number: a run "
                         f"takes {math.floor(v)} or {math.ceil(v)} (the tuned row's counts "
                         "are whole)")
    return notes


def _problem(args: argparse.Namespace) -> dict[str, float]:
    from dpbounds.bounds.problem import check_problem  # not the registry: 0.25 of 0.8 CPU-s

    out: dict = {}
    flags = {}
    for k, name in PROBLEM_QUANTITIES.items():
        v = getattr(args, name, None)
        if v is not None:
            out[k] = v
            flags[k] = flag_used(args, name)
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # NoPrivacyWarning: one line each
        warnings.simplefilter("always")
        problem = check_problem(out, flags=flags)
    for w in caught:
        print(f"dpbounds: warning: {w.message}", file=sys.stderr)
    warnings.simplefilter("ignore")  # said once above; the library checks the problem again
    return problem


def refuse_missing(name: str, problem: dict[str, Any]) -> None:
    """The library's refusal of a problem without a key the bound ``name`` requires, read from
    the catalog before the registry's imports (``bound strongly_convex.heavy_ball --mu 0.1``
    took 0.9 CPU-s, ``tune bound ...`` 1.1, to say "needs S1"). It mirrors
    :meth:`~dpbounds.bounds.registry.Entry.mismatch`: a class that does not fit is the
    library's to say (it comes first there); ``tests/test_edges_fuzz6.py`` compares the two."""
    from dpbounds.bounds.problem import CLASSES, describe_key

    row = next((r for r in _catalog.rows("bound")
                if name == r["name"] or name in r.get("aliases", ())), None)
    if row is None:
        return
    given = problem.get("problem_class")
    if given is not None and CLASSES.index(given) < CLASSES.index(row["problem_class"]):
        return
    absent = [k for k in row.get("requires", ()) if problem.get(k) is None]
    if absent:
        raise ValueError(f"{row['name']} does not apply to this problem: needs "
                         + " and ".join(describe_key(k) for k in absent))


def refuse_early(args: argparse.Namespace, name: str, problem: dict[str, Any],
                 over: list[str] | None = None) -> None:
    """The library's refusals of a typed flag the bound ``name`` does not read
    (:func:`refuse_unread`) and, with ``over`` (``tune bound``'s ``--over`` and ``--range``
    names), of a name that is not one of its hyper-parameters (``search_bound``), read from
    the catalog before the registry's imports (``bound yang.sgd --mu 0.1`` took 1.0 CPU-s,
    ``tune bound yang.sgd --over zz`` 1.2, to say so). The catalog records the keys each
    bound's ``to_params`` asks for; ``tests/test_edges_stop76.py`` checks them against
    ``Entry.unread`` at random problems. Nothing is said where the library would first refuse
    something else: a required key missing (``to_params`` fails there) or, for the names, a
    class that does not fit."""
    if not _catalog.use_static("bound"):
        return
    from dpbounds.bounds.problem import CLASSES

    row = next((r for r in _catalog.rows("bound")
                if name == r["name"] or name in r.get("aliases", ())), None)
    if row is None or any(problem.get(k) is None for k in row.get("requires", ())):
        return
    reads = set(_catalog.constant("bound_reads")[row["name"]])
    typed = set(getattr(args, "_flags_typed", None) or {})
    for k, dest in PROBLEM_QUANTITIES.items():
        if dest in typed and k not in (*_READ_BY_TRIVIAL, *reads):
            raise ValueError(f"{flag_used(args, dest)} is not read by {row['name']}'s bound "
                             "(another value changes none of its parameters): leave it out")
    given = problem.get("problem_class")
    if over is None or (given is not None
                        and CLASSES.index(given) < CLASSES.index(row["problem_class"])):
        return
    known = _catalog.constant("bound_hyperparameters")[row["name"]]
    for k in dict.fromkeys(over):
        if known and k not in known:
            raise ValueError(f"{k!r} is not a hyper-parameter of {row['name']} (its "
                             f"hyper-parameters: {', '.join(known)})")


def _fmt(v: Any) -> str:
    from dpbounds._numfmt import shown

    v = float(v)
    return f"{v:.4e}" if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3) else shown(v)


def _bound(args: argparse.Namespace) -> int:
    if args.list or not args.name:
        rows = _catalog.rows("bound")
        if args.json:
            print(strict_json([{k: v for k, v in r.items() if k != "numeric"} for r in rows],
                              indent=2))
            return 0
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            kind = "numeric" if r["numeric"] else "symbolic"
            alias = f"  (alias: {', '.join(r['aliases'])})" if r["aliases"] else ""
            where = (f"  [from {r['origin']}]" if r.get("origin", "dpbounds") != "dpbounds"
                     else "")
            print(f"{r['name']:{width}s}  [{r['problem_class']}] {kind:8s} {r['title']}{alias}"
                  f"{where}")
        print("\nsymbolic: a sympy theorem object (exponents, LaTeX, lemma chain); numeric: "
              "computed (recursion, horizon search, LMI), no closed form; 'dpbounds bound NAME' "
              "shows how")
        return 0
    known = _catalog.names("bound")
    if known is not None and args.name not in known:  # before seconds of imports
        raise ValueError(unknown_name("bound", args.name, known, "dpbounds bound --list"))
    _check_regime_flags(args)  # before the registry's imports (0.8 CPU-s)
    problem = _problem(args)
    refuse_missing(args.name, problem)
    refuse_early(args, args.name, problem)
    from dpbounds.bounds import registry
    from dpbounds.bounds.compare import trivial_bounds, vacuous_reason

    e = registry.get(args.name)
    refuse_unread(args, e, problem)
    if args.smallest or args.largest:
        return _regime(args, e, problem)
    why = e.applicability(problem)
    if why is not None:
        raise ValueError(f"{e.name} does not apply to this problem: {why}")
    value = e.value(problem)  # ValueError in words if an assumption still fails numerically
    params = e.params(problem)
    hyper = e.hyperparameters(problem)
    tuned = e.optimize(problem) if (e.tunable and not args.no_tune) else None
    scaling = e.scaling()
    trivial = trivial_bounds(e, problem)
    vacuous = {"bound": vacuous_reason(e, problem, float(value))}
    if tuned is not None:
        vacuous["tuned"] = vacuous_reason(e, problem, float(tuned.value))
    if args.json:
        print(strict_json({
            "name": e.name, "title": e.title, "parameters": params, "bound": value,
            "hyperparameters": hyper,
            "tuned": None if tuned is None else {"bound": tuned.value,
                                                 "hyperparameters": tuned.hyperparameters},
            "gradients": e.gradients(problem),
            "kind": e.kind,
            "scaling": None if scaling is None else {k: str(v)
                                                     for k, v in scaling.powers.items()},
            # why the scaling is null for a symbolic bound (the walk could not order it)
            "scaling_failure": e.scaling_failure(),
            "scaling_of": e.scaling_label or "whole bound",
            "whole_bound_scaling": None if (whole := e.whole_scaling()) is None else {
                k: str(v) for k, v in whole.powers.items()},
            "sources": [str(s) for s in e.tuned.sources],
            "trivial_bounds": [{"value": b.value, "reason": b.reason} for b in trivial],
            "vacuous": all(v is not None for v in vacuous.values()),
            "vacuous_reasons": {k: v for k, v in vacuous.items() if v is not None},
        }, indent=2))
        return 0
    print(f"{e.name}: {e.title}" + (f"  [alias {args.name}]" if args.name != e.name else ""))
    print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in params.items()))
    if hyper:
        print(f"  bound: {_fmt(value)}   (closed-form hyper-parameters)")
        print("  closed form: " + ", ".join(f"{k}={_fmt(v)}" for k, v in hyper.items()))
    else:
        print(f"  bound: {_fmt(value)}   (no free hyper-parameters)")
    if tuned is not None:
        print(f"  tuned:       bound {_fmt(tuned.value)} with "
              + ", ".join(f"{k}={_fmt(v)}" for k, v in tuned.hyperparameters.items()))
    notes = _outside_ranges(e, params, hyper, "the theorem's closed form")
    if tuned is not None:  # each row on its own: the tuned T = 1 hid a closed form T = 0.1
        notes += [n for n in _outside_ranges(e, params, tuned.hyperparameters,
                                             "the tuned value, the closed form kept admissible")
                  if n not in notes]
    for note in notes:
        print(f"  note: {note}")
    for note in _fractional_counts(hyper):
        print(f"  note: {note}")
    for which, why in vacuous.items():
        if why is not None:
            print(f"  VACUOUS ({which}): {why}: it says nothing at this problem")
    if all(why is not None for why in vacuous.values()):
        print(f"  informative below {_fmt(trivial[0].value)}; from which N: dpbounds bound "
              f"{e.name} --smallest N --target {_fmt(trivial[0].value)}")
    g = e.gradients(problem)
    if g is not None:
        print(f"  gradient evaluations: {_fmt(g)}")
    if scaling is None and e.scaling_failure() is not None:
        print(f"  scaling: {e.scaling_text()}")
    elif scaling is None:
        print(f"  numeric bound: {getattr(e.tuned, 'method', '?')}")
    else:
        path = ", ".join(f"{k} ~ s^{v}" for k, v in scaling.regime.items())
        print(f"  scaling: {e.scaling_text()}  (up to log factors; along {path}, s -> oo)")
    print(f"  label: {e.tuned.provenance}" + (f"  ({e.notes})" if e.notes else ""))
    if args.latex:
        print("  LaTeX: " + e.tuned.latex())
    if args.audit:
        if scaling is not None:
            print("  log factors: " + " | ".join(str(f) for f in scaling.log_factors))
        print(e.theorem.audit())
    else:
        print("  sources:")
        for s in e.tuned.sources[:3]:
            print(f"    {s}")
        if len(e.tuned.sources) > 3:
            print(f"    ... {len(e.tuned.sources) - 3} more (use --audit for the lemma chain)")
    return 0


def _check_regime_flags(args: argparse.Namespace) -> None:
    """The regime flags' consistency (stdlib only): one of --smallest / --largest; --target
    and --search-range only with one; a search range ``0 < low < high < inf``."""
    if args.smallest and args.largest:
        raise ValueError("give one of --smallest and --largest, not both")
    for flag, given in (("--latex", getattr(args, "latex", False)),
                        ("--audit", getattr(args, "audit", False))):
        if given and (args.smallest or args.largest):  # they were ignored
            raise ValueError(f"{flag} is read by the bound's own page, not by a regime query "
                             f"(--{'smallest' if args.smallest else 'largest'})")
        if given and args.json:
            raise ValueError(f"{flag} adds to the text page; the --json record holds no "
                             "LaTeX or lemma chain")
    if not (args.smallest or args.largest):
        given = [flag for flag, v in (("--target", args.target), ("--search-range",
                                                                  args.search_range))
                 if v is not None]
        if given:  # ignored before: the bound was printed as if they were not there
            raise ValueError(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} "
                             "--smallest VAR or --largest VAR (a regime query)")
    else:
        var = args.smallest or args.largest
        dest = PROBLEM_QUANTITIES.get(var)
        if dest is not None and dest in (getattr(args, "_flags_typed", None) or {}):
            # `--smallest N --N 5` ignored the 5 (fuzz round 10)
            which = "--smallest" if args.smallest else "--largest"
            raise ValueError(f"{flag_used(args, dest)} is what {which} {var} searches: leave "
                             "it out (--search-range gives the range)")
    if (args.smallest or args.largest) and args.search_range is not None:  # as regime's
        low, high = (float(v) for v in args.search_range)
        if not 0 < low < high < math.inf:
            raise ValueError(f"need 0 < low < high < inf for the "
                             f"{args.smallest or args.largest} range, got ({low}, {high})")


def _regime(args: argparse.Namespace, e: Any, problem: dict[str, float]) -> int:
    """``--smallest VAR`` / ``--largest VAR``: where the bound is at most ``--target``."""
    from dpbounds.bounds.compare import regime, trivial_bounds

    variable, side = ((args.smallest, "smallest") if args.smallest
                      else (args.largest, "largest"))
    low, high = args.search_range or (None, None)
    rest = {k: v for k, v in problem.items() if k != variable}
    r = regime(e.name, variable, args.target, rest, side=side, low=low, high=high,
               progress=not getattr(args, "quiet", False))
    trivial = trivial_bounds(e, problem)
    if args.json:
        print(strict_json({"name": e.name, "variable": variable, "side": side,
                          "target": r.target, "value": r.value, "at_edge": r.at_edge,
                          "range": [r.low, r.high], "checked": r.checked,
                          "problem": rest,
                          "trivial_bounds": [{"value": b.value, "reason": b.reason}
                                             for b in trivial]}, indent=2))
        return 0
    word = "from" if side == "smallest" else "up to"
    print(f"{e.name}: {e.title}")
    print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in rest.items()))
    how = "numeric bound, its own search" if e.numeric else "closed-form hyper-parameters"
    shown = _fmt(r.value)
    if variable in ("N", "d", "m") and math.isfinite(r.value) and not float(r.value).is_integer():
        # a count answers with a count, rounded into the regime (the bound is monotone
        # there, so it still meets the target): 'from N = 42187.9' (fuzz round 9)
        whole = math.ceil(r.value) if side == "smallest" else math.floor(r.value)
        if whole < 1 or not r.low <= whole <= r.high:  # 'up to d = 1' where d = 1 fails
            shown = (f"{_fmt(r.value)} (continuous; no whole {variable} in "
                     f"[{_fmt(r.low)}, {_fmt(r.high)}] meets the target)")
        else:
            shown = f"{whole} (the continuous edge is {_fmt(r.value)})"
    print(f"  bound <= {_fmt(r.target)} {word} {variable} = {shown}   ({how})")
    if not r.at_edge and math.isfinite(r.value):
        # the edge may be the theorem's domain, not the target: `--target 1e300` answered
        # N = 2549, where E >= 1 starts to hold, as if the bound crossed 1e300 there (fuzz 14)
        try:
            at = float(e.value({**rest, variable: float(r.value)}, invalid="nan"))
        except Exception:  # noqa: BLE001 -- a diagnostic: the answer above stands
            at = math.nan
        if math.isfinite(at) and at < 0.5 * float(r.target):
            beyond = "below" if side == "smallest" else "above"
            print(f"  {beyond} it the theorem does not apply (an assumption fails), not the "
                  f"target: the bound there is already {_fmt(at)}")
    if r.at_edge:
        print(f"  the target is met already at the end of the range [{_fmt(r.low)}, "
              f"{_fmt(r.high)}]: the regime extends beyond it (--search-range)")
    print(f"  checked: {r.checked}")
    if r.target > trivial[0].value:
        print(f"  note: the target is above {trivial[0]}: there the bound still says nothing")
    elif r.target == trivial[0].value:
        print(f"  beyond this point the bound is below {trivial[0]}: it says something")
    print(f"  label: {e.tuned.provenance}" + (f"  ({e.notes})" if e.notes else ""))
    return 0


def _compare_skips(problem: dict[str, Any]) -> tuple[str, ...]:
    """The typed keys ``compare`` never refuses as unread: the trivial bounds' and mu, which
    sets the class, unless ``--problem-class`` does (then ``compare --mu 0.1 --problem-class
    nonconvex`` printed mu = 0.1 and read it nowhere: fuzz round 10)."""
    return (*_READ_BY_TRIVIAL, *(("mu",) if problem.get("problem_class") is None else ()))


def _refuse_nothing_compared(args: argparse.Namespace, problem: dict[str, Any]) -> None:
    """A typed flag no compared bound reads (as :func:`_compare` refuses it), and ``compare``
    where every bound of the problem's class lacks a quantity it requires
    (``compare --mu 0.02`` without ``--sensitivity``): refused in one line before the
    registry's imports (1.25 CPU-s, then a table of n/a rows), from the catalog; the library
    answers everything else (``tests/test_edges_stop76.py`` checks that it finds no bound to
    compare wherever this refuses)."""
    if not _catalog.use_static("bound"):
        return
    from dpbounds.bounds.problem import DEFAULT_PROBLEM, describe_key, problem_class

    p = {**DEFAULT_PROBLEM, **problem}
    cls = problem_class(p)
    compared = _catalog.constant("compared_classes")[cls]
    rows = [r for r in _catalog.rows("bound") if r["problem_class"] in compared]
    needs = {r["name"]: [k for k in r["requires"] if p.get(k) is None] for r in rows}
    reads = _catalog.constant("bound_reads")
    typed = set(getattr(args, "_flags_typed", None) or {})
    for k, dest in PROBLEM_QUANTITIES.items():  # as _compare's check (Entry.unread)
        if (dest in typed and k not in _compare_skips(problem) and rows
                and all(not needs[r["name"]] and k not in reads[r["name"]] for r in rows)):
            raise ValueError(f"{flag_used(args, dest)} is not read by any bound compared for "
                             f"this {cls} problem: leave it out")
    if not rows or not all(needs.values()):
        return
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, absent in needs.items():
        groups.setdefault(tuple(absent), []).append(name)
    why = "; ".join(
        f"{', '.join(names)} {'needs' if len(names) == 1 else 'need'} "
        + " and ".join(describe_key(k) for k in absent) for absent, names in groups.items())
    raise ValueError(f"no bound applies to this {cls.replace('_', ' ')} problem: {why}")


def _compare(args: argparse.Namespace) -> int:
    problem = _problem(args)
    _refuse_nothing_compared(args, problem)
    from dpbounds.bounds import registry
    from dpbounds.bounds.compare import _COMPARED, compare
    from dpbounds.bounds.problem import DEFAULT_PROBLEM, problem_class

    # a flag no compared bound reads is refused (`compare --max-horizon 5` on a non-convex
    # problem, `--c2 3` on a strongly convex one); mu also sets the class where no
    # --problem-class does, so it is read there
    cls = problem_class({**DEFAULT_PROBLEM, **problem})
    typed = set(getattr(args, "_flags_typed", None) or {})
    keys = [k for k, dest in PROBLEM_QUANTITIES.items()
            if dest in typed and k not in _compare_skips(problem)]
    entries = [e for e in registry.entries() if e.problem_class in _COMPARED[cls]]
    for k in keys:
        if entries and all(k in e.unread(problem, [k]) for e in entries):
            raise ValueError(f"{flag_used(args, PROBLEM_QUANTITIES[k])} is not read by any "
                             f"bound compared for this {cls} problem: leave it out")
    result = compare(problem, tune=not args.no_tune,
                     crossover_variable=args.crossover_variable,
                     progress=not getattr(args, "quiet", False))
    if args.json:
        print(strict_json(result.to_dict(), indent=2, default=str))
    else:
        print(result.to_text())
    if result.best is None and any(r.applicable for r in result.rows):
        return 0  # a result: every bound that applies is vacuous here (the table says so)
    if result.best is None:  # nothing compared: not a result (fuzz round 7: exit 0)
        from dpbounds.cli import EXIT_USAGE

        print("dpbounds: error: no bound applies to this problem (the reasons are above); "
              "give the quantities they name", file=sys.stderr)
        return EXIT_USAGE
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bound`` and ``compare`` sub-commands."""
    p = sub.add_parser("bound", help="evaluate one utility bound (hyper-parameters, scaling)",
                       description="Evaluate one utility bound: value, closed-form and tuned "
                                   "hyper-parameters, leading-order scaling, sources.",
                       epilog=_BOUND_OUTPUT)
    p.add_argument("name", nargs="?", help="bound name (see --list)")
    p.add_argument("--list", action="store_true",
                   help="list the bound names, problem classes, kinds and aliases")
    p.add_argument("--no-tune", action="store_true", help="skip the numeric tuning")
    p.add_argument("--latex", action="store_true", help="print the bound in LaTeX")
    p.add_argument("--audit", action="store_true", help="print the whole lemma chain")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    q = p.add_argument_group("regime query (where is the bound <= --target?)")
    q.add_argument("--smallest", choices=("N", "d", "eps"),
                   help="the smallest value of this problem key from which the bound is <= "
                        "--target (the bound must fall in it; checked)")
    q.add_argument("--largest", choices=("N", "d", "eps"),
                   help="the largest value of this problem key up to which the bound is <= "
                        "--target (the bound must rise in it; checked)")
    q.add_argument("--target", type=real, default=None,
                   help="value to reach (default: what the bound must beat to say anything: "
                        "G or sqrt(2 L R) non-convex, G diam convex, R strongly convex)")
    q.add_argument("--search-range", type=real, nargs=2, metavar=("LOW", "HIGH"),
                   help="range searched (default N in [2, 1e16], d in [1, 1e12], eps in "
                        "[1e-4, log(1/delta)])")
    _add_problem(p)
    p.set_defaults(func=_bound)

    c = sub.add_parser("compare", help="compare the bounds that fit one problem",
                       description="Put the bounds of the problem's class side by side (the "
                                   "non-convex ones by default; the strongly convex ones with "
                                   "--mu), name the best, and find where one overtakes "
                                   "another.",
                       epilog=_COMPARE_OUTPUT)
    c.add_argument("--no-tune", action="store_true", help="skip the numeric tuning")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    add_quantity(c, "crossover_variable", default="N", choices=("N", "d", "eps"),
                 help="problem key along which crossovers are searched")
    _add_problem(c)
    c.set_defaults(func=_compare)
