"""``dpbounds calibrate NAME`` and ``dpbounds tune bound NAME``: a registered method's noise for
a target, and a search over a bound's declared hyper-parameters (a plug-in's or the package's).

Examples::

    dpbounds --plugin examples/dp_gd_smooth.py calibrate dp_gd_smooth --epsilon 1 \\
        --delta 1e-5 --steps 156 --G 1 --N 1e4
    dpbounds --plugin examples/dp_gd_smooth.py tune bound nonconvex.dp_gd_smooth --d 8 \\
        --N 1e4 --R 0.18
"""

from __future__ import annotations

import argparse

from dpbounds.cli import add_quantity, integer, strict_json

__all__ = ["register", "register_tune_bound"]

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
  noise_scale  the noise the method calibrates for those steps at --eps, --delta"""


def _calibrate(args: argparse.Namespace) -> int:
    from dpbounds.extend import calibrate, method_named

    problem = {k: getattr(args, n) for k, n in (("N", "dataset_size"), ("d", "dimension"),
                                                 ("G", "lipschitz"), ("S1", "sensitivity"),
                                                 ("L", "smoothness"),
                                                 ("mu", "strong_convexity"))
               if getattr(args, n, None) is not None}
    params = {}
    if args.batch_size is not None:  # a sampled method's (expected) batch size
        m = method_named(args.name)
        if m.sampling is None:
            raise ValueError(f"--batch-size: {m.name} declares no sampling (its oracle is the "
                             "full-batch mean)")
        if not isinstance(m.batch_size, str):
            raise ValueError(f"--batch-size: {m.name} fixes its batch size to {m.batch_size}")
        params[m.batch_size] = args.batch_size
    c = calibrate(args.name, epsilon=args.epsilon, delta=args.delta, steps=args.steps,
                  problem=problem, params=params)
    print(strict_json(c.as_dict(), indent=2) if args.json else c.describe())
    return 0


def _tune_bound(args: argparse.Namespace) -> int:
    from dpbounds.cli.bounds_cmd import _problem
    from dpbounds.extend import tune

    ranges = {}
    for name, lo, hi in args.range or ():
        try:
            ranges[name] = (float(lo), float(hi))
        except ValueError:
            raise ValueError(f"--range {name} {lo} {hi}: LOW and HIGH must be numbers") from None
    problem = _problem(args)
    if args.objective == "error":
        if ranges or args.over:
            raise ValueError("--over/--range: --objective error searches the coefficients the "
                             "method's linear declaration names")
        horizon = problem.pop("max_horizon", None)
        res = tune(args.name, problem, by="error", grid=args.grid_size,
                   max_horizon=1000 if horizon is None else int(horizon))
    else:
        res = tune(args.name, problem, over=args.over, ranges=ranges or None,
                   grid=args.grid_size)
    print(strict_json(res.rows(), indent=2) if args.json else res.table())
    return 0


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


def register_tune_bound(tsub: argparse._SubParsersAction) -> None:
    """Add ``tune bound`` under ``tune`` (the bound's declared hyper-parameters)."""
    from dpbounds.cli.bounds_cmd import _add_problem

    b = tsub.add_parser("bound", help="search a registered bound's declared hyper-parameters "
                                      "(a plug-in's too) for its smallest value",
                        description="Minimise a registered bound (a plug-in's: --plugin FILE) "
                                    "over the hyper-parameters it declares (tunable ranges, "
                                    "or --range): a log grid, then a bounded refine; with the "
                                    "noise its method calibrates at each row's horizon.",
                        epilog=_TUNE_OUTPUT)
    b.add_argument("name", help="bound name (see 'dpbounds bound --list') or a method's name")
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
    b.add_argument("--objective", choices=["bound", "error"], default="bound",
                   help="bound (default): the bound; error: the worst-case E[F(x_T)] - F* of "
                        "the method's run over quadratics with spectrum in [mu, L] from "
                        "F(x0) - F* <= R (the method must declare linear=LinearMomentum(...), "
                        "checked against its step; needs --mu, --L, --R)")
    b.add_argument("--json", action="store_true", help="print the rows as JSON")
    _add_problem(b)
    b.set_defaults(func=_tune_bound)
