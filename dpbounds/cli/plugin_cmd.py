"""``dpbounds calibrate NAME``, ``dpbounds tune bound NAME`` and ``dpbounds --plugin FILE tune
NAME``: a registered method's noise for a target, a search over a bound's declared
hyper-parameters (a plug-in's or the package's), and a plug-in's method tuned by its name.

Examples::

    dpbounds --plugin examples/dp_gd_smooth.py calibrate dp_gd_smooth --epsilon 1 \\
        --delta 1e-5 --steps 156 --G 1 --N 1e4
    dpbounds --plugin examples/dp_gd_smooth.py tune bound nonconvex.dp_gd_smooth --d 8 \\
        --N 1e4 --R 0.18
    dpbounds --plugin examples/dp_gd_strongly_convex.py tune dp_gd_linear --mu 0.1 \\
        --S1 0.5 --R 2 --max-horizon 300
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from dpbounds._discovery import unknown_name
from dpbounds.cli import (
    _catalog,
    add_quantity,
    flag_used,
    integer,
    progress_enabled,
    strict_json,
    warn_no_privacy,
)

__all__ = ["BUILT_IN_TUNERS", "register", "register_tune_bound", "register_tune_named"]

_CALIBRATE_OUTPUT = """\
output:
  the method's mechanism, relation and per-release sensitivity (its declaration evaluated at
  the problem constants given), the noise it draws for STEPS releases at the
  target (Gaussian sigma: zCDP, standard conversion; Laplace scale: pure DP, even split; a
  sampled method: RDP of the subsampled Gaussian, as the built-in dp_sgd, the noise on the
  clipped sum divided by B) -- the calibration its runs use -- and the epsilon that accountant
  certifies (never above the target)"""

_TUNE_OUTPUT = """\
output columns (--objective error: one row per choice with the searched hyper-parameters,
  alpha, beta, gamma, T, the noise variance per coordinate, the worst case attained on a
  quadratic and its certified upper end):
  choice       closed form: the theorem's own choice; grid: the best point of a log grid over
               the declared ranges (counts such as T: integers); tuned: a bounded refine of it
               inside its neighbouring cells (counts rounded to the better integer; never
               worse than the grid)
  bound        the bound at that choice (the theorem's provenance label below)
  <name>       the hyper-parameters searched
  steps        (a method runs the theorem) the integer number of releases of that row
  noise_scale  the noise the method calibrates for those steps at --eps, --delta
  optimum bracketed (proven), --objective error: no choice of the family named (any linear
               method: linear-MMSE and Chebyshev bounds; gamma = 0: every heavy ball, by branch
               and bound; a coefficient fixed, e.g. gradient descent: that slice of heavy ball,
               by branch and bound) with the method's own noise per horizon has a worst case
               below the lower bound; the tuned row's certified upper end is within the gap printed
               (--json: lower_bound and certified_gap on the tuned row) [DERIVED]"""


#: ``dpbounds.extend.method_named``'s message when no method is registered: methods live in
#: ``dpbounds.extend``'s registry, so while no plug-in has imported that module no name can be
#: known and ``calibrate NAME`` says so before importing it (and sympy: 2 CPU-s against 0.15)
NO_METHODS = ("unknown method {name!r}; registered methods: none (a Method counts once a plug-in "
              "passes it to extend.study or extend.audit_setting; load one with --plugin FILE); "
              "a built-in algorithm's noise for a target: 'dpbounds privacy --steps T "
              "[--sampling-rate q]' (each mechanism and accountant)")


def _calibrate(args: argparse.Namespace) -> int:
    if "dpbounds.extend" not in sys.modules:
        raise ValueError(NO_METHODS.format(name=args.name))
    from dpbounds.extend import method_named

    problem = {k: getattr(args, dest) for k, dest in _CONSTANTS.items()
               if getattr(args, dest, None) is not None}
    params = {}
    m = method_named(args.name)
    if args.batch_size is not None:  # a sampled method's (expected) batch size
        if m.sampling is None:
            raise ValueError(f"--batch-size: {m.name} declares no sampling (its oracle is the "
                             "full-batch mean)")
        if not isinstance(m.batch_size, str):
            raise ValueError(f"--batch-size: {m.name} fixes its batch size to {m.batch_size}")
        params[m.batch_size] = args.batch_size
    c, reads = _calibrate_declared(m, problem, args.epsilon, args.delta, args.steps, params)
    typed = getattr(args, "_flags_typed", None) or {}
    if c.mechanism != "gaussian" and "delta" in typed:
        raise ValueError(f"{flag_used(args, 'delta')} is not read by {c.method}: its "
                         f"{c.mechanism} noise is calibrated to pure epsilon-DP")
    # a constant the calibration does not read is refused (`calibrate dp_gd_smooth --mu 5
    # --L 3 --S1 9` printed the calibration of N and G alone)
    read = _keys_read(lambda prob: _calibrate_declared(m, prob, args.epsilon, args.delta,
                                                       args.steps, params)[0],
                      problem, c, reads, [k for k, dest in _CONSTANTS.items() if dest in typed])
    for key, dest in _CONSTANTS.items():
        if dest in typed and key not in read:
            raise ValueError(f"{flag_used(args, dest)} is not read by {c.method}'s "
                             "calibration (its sensitivity and sampling never ask for it): "
                             "leave it out")
    warn_no_privacy(args.epsilon, args.delta if c.mechanism == "gaussian" else None,
                    problem.get("N"))
    print(strict_json(c.as_dict(), indent=2) if args.json else c.describe())
    return 0


#: the declared constants a method's calibration may read -> their flags' dests
_CONSTANTS = {"N": "dataset_size", "d": "dimension", "G": "lipschitz", "S1": "sensitivity",
              "L": "smoothness", "mu": "strong_convexity"}


def _calibrate_declared(m: Any, problem: dict[str, Any], epsilon: float, delta: Any,
                        steps: int, params: dict[str, Any] | None = None
                        ) -> tuple[Any, frozenset[str]]:
    """``(calibration, keys read)`` of method ``m`` at ``problem``'s constants: calibrated
    through a :class:`~dpbounds.extend.DeclaredProblem` given here, which records the
    constants asked for (a Poisson method's public size passed as calibrate derives it)."""
    from dpbounds.extend import DeclaredProblem, calibrate

    declared = DeclaredProblem.of(problem)
    public_n = int(declared.n) if m.sampling == "poisson" and "N" in problem else None
    c = calibrate(m, epsilon=epsilon, delta=delta, steps=steps, objective=declared,
                  public_n=public_n, params=params or {})
    return c, declared.reads


def _keys_read(run: Callable[[dict[str, Any]], Any], problem: dict[str, Any], base: Any,
               reads: frozenset[str], keys: Sequence[str]) -> set[str]:
    """The ``keys`` a calibration reads: those in ``reads`` (asked for through attribute
    access; kept even where a capped sensitivity, ``min(G, 2)``, does not move) and those
    whose halving or doubling moves the sensitivity or the noise, or is refused (a read
    through ``vars(f)`` escapes ``reads``)."""
    out = {k for k in keys if k in reads}
    for key in keys:
        if key in out or key not in problem:
            continue
        v = problem[key]
        for f in (0.5, 2.0):
            try:
                alt = run(dict(problem, **{key: max(1, int(v * f)) if key in ("N", "d")
                                           else float(v) * f}))
            except Exception:  # noqa: BLE001 -- refused at the other value: checked, so read
                out.add(key)
                break
            if (alt.sensitivity, alt.noise_scale) != (base.sensitivity, base.noise_scale):
                out.add(key)
                break
    return out


def _calibration_reads(method: str, problem: dict[str, Any]) -> tuple[str, ...]:
    """The problem keys ``method``'s calibration reads at ``problem`` (what `tune bound`'s
    noise column reads beside the theorem; delta for a Gaussian method). Where it cannot be
    calibrated here (a hyper-parameter it needs is searched), every key it may read."""
    from dpbounds.extend import method_named

    m = method_named(method)
    eps, delta = float(problem.get("eps", 1.0)), problem.get("delta")
    try:
        base, reads = _calibrate_declared(m, problem, eps, delta, 1)
    except Exception:  # noqa: BLE001 -- not calibratable without the search's values
        return ("delta", *_CONSTANTS)
    read = _keys_read(lambda prob: _calibrate_declared(m, prob, eps, delta, 1)[0], problem,
                      base, reads, list(_CONSTANTS))
    return tuple(sorted(read | ({"delta"} if m.mechanism == "gaussian" else set())))


def _tune_bound(args: argparse.Namespace) -> int:
    return _tune(args, args.name, args.objective)


def _tune_named(args: argparse.Namespace) -> int:
    """``tune NAME``: a registered method (or a plug-in's theorem) by name; the objective by
    default the worst case of the method's run where it declares its linear form, else the
    bound (said on stderr)."""
    from dpbounds.extend import _METHODS, method_named

    name = args.tune_what
    objective = args.objective
    if objective is None:
        m = method_named(name) if (name in _METHODS or _has_method(name)) else None
        if m is not None and m.linear is not None and m.sampling is None:
            objective = "error"
        else:
            objective = "bound"
            why = (f"{m.name} samples mini-batches (the worst case of a run models full "
                   "batches)" if m is not None and m.sampling is not None
                   else f"{m.name} declares no linear form (linear=LinearMomentum(...); "
                        "--objective error needs one)"
                   if m is not None else f"{name} is a theorem without a method")
            print(f"dpbounds: note: {why}: tuned by its bound", file=sys.stderr)
    return _tune(args, name, objective)


def _has_method(name: str) -> bool:
    from dpbounds.extend import _METHOD_THEOREM, _METHODS

    return name in _METHOD_THEOREM and _METHOD_THEOREM[name] in _METHODS


def _tune(args: argparse.Namespace, name: str, objective: str) -> int:
    ranges = {}
    for hp, lo, hi in args.range or ():
        if hp in ranges:  # the last one silently won, while --over T T is refused
            raise ValueError(f"--range {hp} is given more than once")
        try:
            ranges[hp] = (float(lo), float(hi))
        except ValueError:
            raise ValueError(f"--range {hp} {lo} {hi}: LOW and HIGH must be numbers") from None
    _early_tune_checks(args, name, objective, ranges)
    from dpbounds.cli.bounds_cmd import _problem, refuse_early, refuse_missing
    problem = _problem(args)
    if objective == "bound" and args.tune_what == "bound":  # before extend's imports
        refuse_missing(name, problem)
        refuse_early(args, name, problem, over=[*(args.over or ()), *ranges])
    from dpbounds.extend import tune
    if objective == "error":
        from dpbounds.bounds import registry
        from dpbounds.extend import _METHODS

        if name not in _METHODS and name in {*registry.names(), *registry.aliases()}:
            # it read "unknown method 'yang.sgd'" (fuzz round 13)
            raise ValueError(f"--objective error tunes a plug-in method by the worst case of "
                             f"its run; {name} is a bound: tune it by its value (--objective "
                             "bound, the default)")
        if ranges or args.over:
            raise ValueError("--over/--range: --objective error searches the coefficients the "
                             "method's linear declaration names")
        if "batch_size" in (getattr(args, "_flags_typed", None) or {}):  # was ignored
            raise ValueError(f"{flag_used(args, 'batch_size')} is not read when tuning by the "
                             "worst case of the run (the noise is the method's own "
                             "calibration: full batch, or its declared sampling's batch)")
        horizon = problem.pop("max_horizon", None)
        res = tune(name, problem, by="error", grid=args.grid_size,
                   max_horizon=1000 if horizon is None else int(horizon),
                   progress=progress_enabled(args))  # minutes, silent before (stop 75)
    else:
        _check_bound_target(name)
        from dpbounds.bounds import registry
        from dpbounds.cli.bounds_cmd import refuse_unread
        from dpbounds.extend import _METHOD_THEOREM, _METHODS

        # a method's name stands for the theorem its study checks (as extend.tune reads it)
        target = _METHOD_THEOREM[name] if name in _METHODS and name in _METHOD_THEOREM else name
        # where a method runs the theorem, its noise column reads the method's calibration:
        # delta and the declared constants (a sensitivity of S1, d, ...) are read there
        ran = _METHOD_THEOREM.get(registry.get(target).name)
        refuse_unread(args, registry.get(target), problem,
                      also_read=_calibration_reads(ran, problem) if ran else ())
        res = tune(name, problem, over=args.over, ranges=ranges or None,
                   grid=args.grid_size)
    from dpbounds.cli._paths import print_result

    return print_result("tune", strict_json(res.rows(), indent=2) if args.json
                        else res.table())


def _early_tune_checks(args: argparse.Namespace, name: str, objective: str,
                       ranges: dict[str, tuple[float, float]]) -> None:
    """The library's refusals of an unknown bound, ``--grid-size``, ``--range`` and a
    repeated ``--over`` name, in its words, before its imports (1.2-1.4 CPU-s each before;
    ``tests/test_edges_fuzz4.py`` compares them with this switched off)."""
    known = _catalog.names("bound")
    if (known is not None and args.tune_what == "bound" and name not in known
            and objective == "bound"):
        raise ValueError(unknown_name("bound", name, known, "dpbounds bound --list"))
    if objective != "bound":
        return  # the method's own checks come first there
    over = list(args.over or ())
    twice = sorted({k for k in over if over.count(k) > 1})
    if twice:
        raise ValueError(f"over names {', '.join(twice)} more than once")
    grid = args.grid_size
    if grid is not None and not 2 <= grid <= 100_000:
        raise ValueError(f"grid must be an integer in [2, 100000], got {grid}")
    for hp, (lo, hi) in ranges.items():
        # the search checks the ranges of the names it searches: --over's, else all given
        if (not over or hp in over) and not (0 < lo < hi < math.inf):
            raise ValueError(f"range of {hp} must satisfy 0 < low < high < inf, got "
                             f"({lo!r}, {hi!r})")


def _check_bound_target(name: str) -> None:
    """A method tuned by its bound needs the theorem its study checks: say so, not 'unknown
    bound'."""
    from dpbounds.bounds import registry
    from dpbounds.extend import _METHOD_THEOREM, _METHODS

    if name not in _METHODS or name in _METHOD_THEOREM:
        return
    try:
        registry.get(name)
        return  # a theorem of that name
    except ValueError:
        pass
    lin = _METHODS[name].linear is not None
    sampled = _METHODS[name].sampling is not None
    raise ValueError(f"{name} has no theorem to tune by its bound (register one with "
                     "ex.study(method, theorem))"
                     # a linear form does not help a sampled method: the worst case over
                     # quadratics does not model mini-batches (walkthrough of stop 76)
                     + ("; it samples mini-batches, which the worst case of a run does not "
                        "model: tune it by its runs on an objective in Python "
                        "(dpbounds.tuning.tune_by_runs)" if sampled
                        else "; tune it by the worst case of its run: --objective error" if lin
                        else "; nor a linear form (linear=LinearMomentum(...)) to tune it by "
                             "the worst case of its run"))


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` sub-command."""
    p = sub.add_parser("calibrate", help="a registered method's noise for a target (epsilon, "
                                         "delta), through its declared privacy",
                       description="Calibrate a registered method's noise (a plug-in's: "
                                   "--plugin FILE) to a target (epsilon, delta) over STEPS "
                                   "releases, through the mechanism, sensitivity and relation "
                                   "it declares: the calibration its runs use.",
                       epilog=_CALIBRATE_OUTPUT)
    p.add_argument("name", help="the method's name (or the theorem its study checks)")
    add_quantity(p, "epsilon", default=1.0, help="target epsilon")
    add_quantity(p, "delta", default=1e-5, help="target delta (Gaussian methods)")
    add_quantity(p, "steps", required=True, help="number of releases T")
    g = p.add_argument_group("constants the method's declared sensitivity may read")
    add_quantity(g, "dataset_size", help="dataset size N")
    add_quantity(g, "dimension", help="dimension d")
    add_quantity(g, "lipschitz", help="per-sample gradient bound G")
    add_quantity(g, "sensitivity", help="S_1: how far replacing one record moves the sum of "
                                        "gradients (L1)")
    add_quantity(g, "smoothness", help="smoothness L")
    add_quantity(g, "strong_convexity", help="strong convexity mu")
    add_quantity(g, "batch_size", help="(expected) batch size B of a sampled method (its rate "
                                       "is B/N, N the public size)")
    p.add_argument("--json", action="store_true", help="print the calibration as JSON")
    p.set_defaults(func=_calibrate)


#: the words ``tune`` reads itself (its built-in sub-commands); any other is a registered name
BUILT_IN_TUNERS = ("hb", "nag", "bound", "runs")


def _tune_options(b: argparse.ArgumentParser, objective_default: str | None) -> None:
    """The options of ``tune bound NAME`` and ``tune NAME``."""
    from dpbounds.cli.bounds_cmd import _add_problem

    b.add_argument("--over", nargs="+", metavar="NAME",
                   help="hyper-parameters searched (default: those declared tunable and those "
                        "given a --range)")
    b.add_argument("--range", nargs=3, action="append", metavar=("NAME", "LOW", "HIGH"),
                   help="search NAME in [LOW, HIGH] (0 < LOW < HIGH; overrides the declared "
                        "range; may be repeated)")
    b.add_argument("--grid-size", type=integer, default=None, metavar="K",
                   help="grid points per hyper-parameter, in [2, 100000] (default 257, fewer "
                        "for several hyper-parameters: at most 2,000,000 points in all); "
                        "--objective error: the largest nested grid, in [3, 1000] (default 30)")
    default = ("bound (default): the bound" if objective_default == "bound" else
               "default: error where the method declares its linear form, else bound (said "
               "on stderr); bound: the bound")
    b.add_argument("--objective", choices=["bound", "error"], default=objective_default,
                   help=f"{default}; error: the worst-case E[F(x_T)] - F* of "
                        "the method's run over quadratics with spectrum in [mu, L] from "
                        "F(x0) - F* <= R (the method must declare linear=LinearMomentum(...), "
                        "checked against its step; needs --mu, --L, --R), with a proven lower "
                        "bound of the best choice where one applies")
    b.add_argument("--json", action="store_true", help="print the rows as JSON")
    _add_problem(b)


def _registered_names() -> dict[str, str]:
    """The names ``tune NAME`` offers as sub-commands: the methods and theorems the loaded
    plug-ins registered -> where each comes from (empty when no plug-in is loaded: the
    extension module, which imports sympy, is then not imported here)."""
    mod = sys.modules.get("dpbounds.extend")
    if mod is None:
        return {}
    out: dict[str, str] = {}
    for name, m in mod._METHODS.items():
        how = "worst case of its run" if m.linear is not None else "its bound"
        out[name] = f"a method: tuned by the {how} [{mod.origin(m.name)}]"
    for name, origin in mod._ORIGINS.items():
        if name in out or ":" in name or not _is_bound(name):
            continue
        meth = mod._METHOD_THEOREM.get(name)
        if meth in mod._METHODS:  # the theorem a method's study checks: tuned as the method
            out[name] = f"the theorem {meth} checks: tuned as {meth} [{origin}]"
        else:
            out[name] = f"a theorem: tuned by its bound [{origin}]"
    return {k: v for k, v in out.items() if k not in BUILT_IN_TUNERS}


def _is_bound(name: str) -> bool:
    from dpbounds.bounds import registry

    return name in registry.BOUND_REGISTRY.entries


def _unknown_tuner(names: Sequence[str]) -> Callable[[str], str]:
    def message(value: str) -> str:
        from dpbounds._suggest import did_you_mean

        # a plug-in that declared a Method without passing it on was told to load a plug-in
        # (walkthrough of stop 75): say when a Method counts, as calibrate does
        loaded = ", ".join(names) if names else (
            "none (a Method counts once a plug-in passes it to extend.study or "
            "extend.audit_setting; load one with --plugin FILE)")
        near = did_you_mean(value, ("hb", "nag", "bound", *names))
        return (f"unknown method {value!r} to tune{near}: the built-in tuners are hb and nag, "
                "any registered bound is 'tune bound NAME' (see 'dpbounds bound --list'); the "
                f"registered methods and plug-in theorems: {loaded}")
    return message


def register_tune_named(tsub: argparse._SubParsersAction) -> None:
    """Add ``tune NAME`` for each method and theorem the loaded plug-ins registered, and make
    an unknown ``tune NAME`` a one-line error listing the known ones."""
    names = _registered_names()
    for name, what in names.items():
        b = tsub.add_parser(name, help=what,
                            description=f"Tune {name} ({what}): --objective error minimises "
                                        "the worst case of its run, --objective bound its "
                                        "bound.",
                            epilog=_TUNE_OUTPUT)
        _tune_options(b, None)
        b.set_defaults(func=_tune_named)
    tsub.unknown_hint = _unknown_tuner(list(names))  # type: ignore[attr-defined]


def register_tune_bound(tsub: argparse._SubParsersAction) -> None:
    """Add ``tune bound`` under ``tune`` (the bound's declared hyper-parameters)."""
    b = tsub.add_parser("bound", help="search a registered bound's declared hyper-parameters "
                                      "(a plug-in's too) for its smallest value",
                        description="Minimise a registered bound (a plug-in's: --plugin FILE) "
                                    "over the hyper-parameters it declares (tunable ranges, "
                                    "or --range): a log grid, then a bounded refine; with the "
                                    "noise its method calibrates at each row's horizon.",
                        epilog=_TUNE_OUTPUT)
    b.add_argument("name", help="bound name (see 'dpbounds bound --list') or a method's name")
    _tune_options(b, "bound")
    b.set_defaults(func=_tune_bound)
