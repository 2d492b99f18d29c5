"""``dpbounds tune runs ALGORITHM``: tune by the mean error of the algorithm's real runs.

Examples::

    dpbounds tune runs hb                      # ridge logistic regression, a default grid
    dpbounds tune runs hb --search alpha=0.1:6:14 --search beta=0,0.5,0.8 --search T=2,4,8
    dpbounds tune runs nag --problem quadratic --d 10 --N 1000 --mu 0.05 --L 1
    dpbounds tune runs hb --store tune-store --workers 2   # resumable, on 2 processes
    dpbounds tune runs sgd --delta 1e-6 --private --loss-bound 4 --selection-delta 1e-5

The library's :func:`dpbounds.tuning.tune_by_runs` does the work; this module parses the grid
and builds the objective. Input errors are refused before the library's imports.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dpbounds.cli import add_quantity, integer, progress_enabled, real, strict_json

#: the built-in algorithms ``tune runs`` knows -> (module, function)
ALGORITHMS = {"hb": ("dpbounds.algorithms", "dp_heavy_ball"),
              "nag": ("dpbounds.algorithms", "dp_nag"),
              "gd": ("dpbounds.algorithms", "dp_gd"),
              "sgd": ("dpbounds.algorithms", "dp_sgd")}
#: the built-ins with Gaussian noise (they need --delta; the others are Laplace, pure DP)
GAUSSIAN = ("sgd",)
#: the numeric keywords of each built-in algorithm a grid may search (its others are strings,
#: arrays, or the sensitivity, which a search must not lower); checked against the
#: functions' signatures in tests/tuning/test_by_runs.py
SEARCHABLE = {"hb": ("step_size", "momentum", "steps", "c", "batch_size"),
              "nag": ("step_size", "momentum", "steps", "c", "batch_size"),
              "gd": ("step_size", "steps", "c", "batch_size"),
              "sgd": ("step_size", "steps", "batch_size", "clip_threshold")}
#: not searchable though the functions take them: gd's clip_threshold applies to its Gaussian
#: mechanism only (tune runs gd is Laplace), nag's initial_error only to a horizon re-selection
#: that tune runs does not ask for (both were searched with no effect, and charged: fuzz 11)
#: the problem's constants a plug-in's step reads from its params (filled from --problem's
#: objective): a search of one changed the noise its sensitivity declares (N = 1e6 at n = 200
#: gave 5000x less noise for the same reported eps: fuzz round 11)
CONSTANTS = {"mu": "--mu", "L": "--L", "d": "--d", "N": "--N", "R": "--start"}
#: the most grid points a run takes (:data:`dpbounds.tuning.by_runs.MAX_POINTS`; checked
#: here before the imports: a grid of 10^9 points was built in memory: fuzz round 11)
MAX_POINTS = 10_000
#: the objectives built from the shell
PROBLEMS = ("logistic", "quadratic")
#: a search name's spellings -> the algorithms' keyword (the notation table's symbols)
_NAMES = {"alpha": "step_size", "eta": "step_size", "step_size": "step_size",
          "beta": "momentum", "momentum": "momentum", "T": "steps", "steps": "steps",
          "c": "c", "C": "clip_threshold", "clip": "clip_threshold",
          "clip_threshold": "clip_threshold", "m": "batch_size", "batch_size": "batch_size"}
#: the keywords that are counts (a log-spaced range is rounded to distinct integers)
_COUNTS = ("steps", "batch_size")
#: the flags of fixed (not searched) values -> the algorithms' keyword
_FIXED = ("step_size", "momentum", "steps", "batch_size", "clip_threshold")
#: sgd's defaults where --steps / --batch-size are not given (public: --N is the shell's)
SGD_STEPS = 200
SGD_BATCH_FRACTION = 40  # m = max(1, N // 40)
MAX_VALUES = 1000  # per searched name

_EPILOG = """\
grid (--search NAME=SPEC, repeatable): NAME is alpha (step size), beta (momentum) or T
(steps), or another keyword of the algorithm; SPEC is V1,V2,... or LOW:HIGH:K (K log-spaced
values; T rounded to distinct integers). Default grid (hb, nag): alpha = (0.1 .. 6) / L (14
values), beta in 0, 0.3, 0.5, 0.7, 0.8, 0.9, T in 2, 3, 4, 6, 8, 11, 16, 32, 64; gd: alpha and
T; sgd (DP-SGD, Gaussian, needs --delta): alpha = 0.05 .. 8 (10 values), C in 0.1, 0.3, 1,
3, at T = 200 and m = N // 40 (--steps, --batch-size; --sampling poisson for add/remove).
Names: alpha (step size), beta (momentum), T (steps), C (clip threshold), m (batch size).

output: every grid point runs --trials times on the selection seeds (paired: the same seeds
at every point); the pick is re-measured --eval-trials times on fresh seeds (the grid's own
minimum is biased low), mean F(x_T) - F* with a 95% interval; and the privacy the tuning
spends: every run reads the objective's data, so publishing the pick costs all of them
composed (nothing of a private data set's budget where the objective is a public or
synthetic proxy).

resume: with --store DIR every finished grid point is kept; after a kill the same command
computes only the points missing. --workers N (local processes), --dask or --scheduler run
the points elsewhere; the numbers are the same wherever they run."""


def parse_search(specs: list[str] | None, builtin: bool = True) -> dict[str, list[float]]:
    """``["alpha=0.1:6:14", "T=2,4"]`` -> ``{"step_size": [...], "steps": [2, 4]}``;
    ``ValueError`` naming the flag and the valid form. ``builtin=False`` (a plug-in's
    method): the names are its own hyper-parameters (``T`` is still the horizon)."""
    out: dict[str, list[float]] = {}
    for spec in specs or ():
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise ValueError(f"--search {spec!r}: give NAME=V1,V2,... or NAME=LOW:HIGH:K")
        key = _NAMES.get(name, name) if builtin else ("steps" if name in ("T", "steps")
                                                      else name)
        if not key.isidentifier():
            raise ValueError(f"--search {spec!r}: {name!r} is not a name")
        if key in out:
            raise ValueError(f"--search {name} is given more than once")
        try:
            if not values.isascii():
                raise ValueError
            if ":" in values:
                parts = values.split(":")
                if len(parts) != 3:
                    raise ValueError
                lo, hi = float(parts[0]), float(parts[1])
                kf = float(parts[2])  # 1e9 is a number, out of range (fuzz round 12)
                k = int(kf) if math.isfinite(kf) and kf == int(kf) else 0
                if not (0 < lo < hi < math.inf) or not 2 <= k <= MAX_VALUES:
                    raise ValueError(f"--search {spec!r}: LOW:HIGH:K needs 0 < LOW < HIGH < "
                                     f"inf and K in [2, {MAX_VALUES}]")
                grid = [lo * (hi / lo) ** (i / (k - 1)) for i in range(k)]
            else:
                if "_" in values or not values.isascii():  # float('1_0') is 10, float('３')
                    raise ValueError  # is 3 (refused elsewhere: fuzz rounds 11 and 13)
                grid = [float(v) for v in values.split(",")]
        except ValueError as exc:
            if str(exc).startswith("--search"):
                raise
            raise ValueError(f"--search {spec!r}: the values must be numbers (V1,V2,... or "
                             "LOW:HIGH:K)") from None
        if not all(math.isfinite(v) for v in grid) or len(grid) > MAX_VALUES:
            raise ValueError(f"--search {spec!r}: at most {MAX_VALUES} finite values")
        if len(set(grid)) < len(grid):  # the same point run twice, charged twice (fuzz 11)
            twice = next(v for i, v in enumerate(grid) if v in grid[:i])
            raise ValueError(f"--search {spec!r}: {twice:g} is listed more than once")
        if key in _COUNTS:
            # a listed T must be whole and >= 1 (T=0 was read as 1); a range is rounded
            if ":" not in values and any(v < 1 or v != int(v) for v in grid):
                raise ValueError(f"--search {spec!r}: {name} must list whole numbers >= 1")
            grid = sorted({round(v) for v in grid})
            if grid[0] < 1:
                raise ValueError(f"--search {spec!r}: {name} must be at least 1 (LOW >= "
                                 "0.5)")
        out[key] = grid
    return out


def _default_grid(algorithm: str, L: float) -> dict[str, list[float]]:
    if algorithm == "sgd":  # public: neither reads the data (its clip bounds the gradient)
        return {"step_size": [0.05 * 160 ** (i / 9) for i in range(10)],
                "clip_threshold": [0.1, 0.3, 1.0, 3.0]}
    alpha = [x / L for x in (0.1 * 60 ** (i / 13) for i in range(14))]
    steps = [2, 3, 4, 6, 8, 11, 16, 32, 64]
    if algorithm == "gd":
        return {"step_size": alpha, "steps": steps}
    return {"step_size": alpha, "momentum": [0.0, 0.3, 0.5, 0.7, 0.8, 0.9], "steps": steps}


def build_problem(problem: str, n: int, d: int, mu: float | None, L: float | None,
                  seed: int) -> Any:
    """The objective of ``--problem`` (module-level: worker processes build it by name).

    ``logistic`` and ``quadratic`` are built here; any other name is a verification problem
    (``dpbounds verify --list``: ``huber_well`` ..., or a plug-in's
    :func:`dpbounds.extend.verify_problem`, its own data), built as ``verify`` builds it, with
    its declared F* and its start (kept as the objective's ``tune_start``).
    """
    if problem not in PROBLEMS:
        import numpy as np

        from dpbounds.verify.problems import problem as verify_problem

        overrides = {k: v for k, v in (("mu", mu), ("L", L)) if v is not None}
        inst = verify_problem(problem, **overrides).build(n, d, seed)
        inst.objective.__dict__["tune_start"] = np.asarray(inst.x0, dtype=float)
        return inst.objective
    assert mu is not None
    if problem == "logistic":
        from dpbounds.data import kuru_synthetic
        from dpbounds.objectives import LogisticRegression

        ds = kuru_synthetic(n=n, d=d, seed=seed)
        # Kuru et al.'s (35): F = mean loss + lambda ||x||^2, so mu = 2 lambda
        return LogisticRegression.kuru(ds.features, ds.labels, lam=mu / 2,
                                       l1_radius=ds.l1_radius, l2_radius=ds.l2_radius)
    from dpbounds.objectives import QuadraticObjective

    return QuadraticObjective.random(d=d, mu=mu, L=float(L or 1.0), n=n, offset_scale=1.0,
                                     seed=seed)


def _objective(args: argparse.Namespace) -> Any:
    """The problem's recipe (stored points are keyed by it; workers build from it)."""
    from dpbounds.tuning import ObjectiveRecipe

    typed = getattr(args, "_flags_typed", None) or {}
    return ObjectiveRecipe(build_problem, {
        "problem": args.problem, "n": int(args.dataset_size), "d": int(args.dimension),
        "mu": float(args.strong_convexity) if args.problem in PROBLEMS
        or "strong_convexity" in typed else None,
        "L": float(args.smoothness) if args.problem == "quadratic"
        or (args.problem not in PROBLEMS and args.smoothness_given) else None,
        "seed": int(args.seed)})


def _algorithm(name: str) -> Any:
    if name in ALGORITHMS:
        import importlib

        module, func = ALGORITHMS[name]
        return getattr(importlib.import_module(module), func)
    from dpbounds.extend import method_named, run_method

    method_named(name)  # a plug-in's method (ValueError in the registry's words)
    return run_method  # module-level, given method=NAME: workers find it by name


def _check(args: argparse.Namespace) -> dict[str, list[float]]:
    """The refusals that need no library (before seconds of imports)."""
    builtin = args.algorithm in ALGORITHMS
    search = parse_search(args.search, builtin)
    points = math.prod(len(v) for v in search.values()) if search else 0
    if points > MAX_POINTS:
        raise ValueError(f"--search: {points:,} grid points; at most {MAX_POINTS:,} (each "
                         f"costs --trials runs): search fewer values")
    if not builtin:
        for k in search:
            if k in CONSTANTS:
                raise ValueError(f"--search {k}: a constant of the problem, which the runs "
                                 f"read from its objective (set it with {CONSTANTS[k]}); a "
                                 "searched one would not match the data the noise is "
                                 "calibrated for")
    if builtin and args.algorithm not in GAUSSIAN and args.delta is not None:
        raise ValueError(f"--delta is not read by {args.algorithm}: its Laplace noise is "
                         "calibrated to pure epsilon-DP")
    if args.algorithm in GAUSSIAN and args.delta is None:
        raise ValueError(f"{args.algorithm} adds Gaussian noise: give its delta (--delta, "
                         "e.g. 1e-6, well below 1/N)")
    if args.delta is not None and not 0 < args.delta < 1:
        raise ValueError(f"--delta must lie in (0, 1), got {args.delta:g}")
    if args.sensitivity is not None and args.algorithm not in ("hb", "nag", "gd"):
        raise ValueError(f"--sensitivity is read by hb, nag and gd (their Laplace noise's S_1); "
                         f"{args.algorithm}'s " + ("clip bounds its sensitivity"
                                                   if args.algorithm == "sgd" else
                                                   "method declares its own"))
    if args.sensitivity is not None and not (math.isfinite(args.sensitivity)
                                             and args.sensitivity > 0):
        raise ValueError(f"--sensitivity must be a finite number > 0, got {args.sensitivity:g}")
    if args.sampling is not None and args.algorithm != "sgd":
        raise ValueError(f"--sampling is read by sgd only ({args.algorithm} takes its batches "
                         "without replacement)")
    if not builtin and not search:
        raise ValueError(f"tune runs {args.algorithm}: give the grid of a plug-in's method "
                         "(--search NAME=V1,V2,... for its hyper-parameters, and T)")
    if args.problem == "quadratic" and args.strong_convexity > args.smoothness:
        raise ValueError(f"--mu must lie in (0, L={args.smoothness:g}] (a quadratic's spectrum "
                         f"is [mu, L]), got {args.strong_convexity:g}")
    if args.problem == "logistic" and args.smoothness_given:
        raise ValueError("--L is not read by --problem logistic (its smoothness is the data's)")
    if args.seed < 0:  # numpy's "expected non-negative integer" named nothing (review)
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    if args.workers is not None and not 1 <= args.workers <= 1024:
        raise ValueError(f"--workers must be an integer in [1, 1024], got {args.workers}")
    if args.scheduler is not None and "://" not in args.scheduler:
        raise ValueError(f"--scheduler must be an address like tcp://HOST:PORT, got "
                         f"{args.scheduler!r}")
    if args.private:
        _check_private(args)
    elif any(getattr(args, k) is not None for k in ("score_eps", "loss_bound",
                                                     "stop_probability", "selection_delta",
                                                     "trials_shape", "total_epsilon")):
        raise ValueError("--score-eps, --loss-bound, --stop-probability, --selection-delta, "
                         "--trials-shape and --total-epsilon are read by --private only")
    if args.fresh and args.store is None:
        raise ValueError("--fresh overwrites a store's points: give --store DIR")
    if args.trials > 1_000_000 or (args.eval_trials is None and 4 * args.trials > 1_000_000):
        raise ValueError(f"--trials must be at most 250000 (the pick is re-measured 4 x "
                         f"--trials times; or give --eval-trials up to 1000000), got "
                         f"{args.trials}")
    if args.eval_trials is not None and args.eval_trials > 1_000_000:
        raise ValueError(f"--eval-trials must be at most 1000000, got {args.eval_trials}")
    if not args.strong_convexity > 0 and args.problem == "quadratic":
        raise ValueError(f"--mu must lie in (0, L={args.smoothness:g}] (a quadratic's spectrum "
                         f"is [mu, L]), got {args.strong_convexity:g}")
    if args.strong_convexity < 0:
        raise ValueError(f"--mu must be >= 0 (the ridge's strong convexity), got "
                         f"{args.strong_convexity:g}")
    if args.start_distance is not None and not (math.isfinite(args.start_distance)
                                                and args.start_distance >= 0):
        raise ValueError(f"--start must be a finite number >= 0, got "
                         f"{args.start_distance:g}")
    if args.trials < 2 or (args.eval_trials is not None and args.eval_trials < 2):
        raise ValueError("--trials and --eval-trials must be at least 2 (an interval needs two "
                         "runs)")
    fixed = {k: getattr(args, k) for k in _FIXED if getattr(args, k) is not None}
    if builtin:  # before the imports (a TypeError after 1.1 CPU-s: review of stop 76)
        takes = SEARCHABLE[args.algorithm]
        for k in (*search, *fixed):
            if k not in takes:
                flag = f"--{k.replace('_', '-')}" if k in fixed else f"--search {k}"
                raise ValueError(f"{flag}: {args.algorithm} takes none (it searches "
                                 f"{', '.join(takes)}; alpha = step_size, beta = momentum, "
                                 "T = steps)")
        # a public value out of range ran, was refused, and was charged as spent (fuzz round
        # 12: --search alpha=-1,1 reported eps = 6 for 4 runs that released anything)
        n = args.dataset_size
        ranges = {"step_size": ("> 0", lambda v: v > 0), "c": ("> 0", lambda v: v > 0),
                  "clip_threshold": ("> 0 and finite", lambda v: 0 < v < math.inf),
                  "momentum": ("in [0, 1)", lambda v: 0 <= v < 1),
                  "batch_size": (f"a whole number in [1, N = {n:g}]",
                                 lambda v: 1 <= v <= n and v == int(v))}
        for k, (words, ok) in ranges.items():
            for v in (*search.get(k, ()), *((fixed[k],) if k in fixed else ())):
                if not ok(v):
                    flag = f"--{k.replace('_', '-')}" if k in fixed else f"--search {k}"
                    raise ValueError(f"{flag}: {k} must be {words}, got {v:g}")
    both = sorted(set(fixed) & set(search))
    if both:
        raise ValueError(f"{', '.join('--' + k.replace('_', '-') for k in both)}: both "
                         "searched (--search) and fixed")
    return search


def _sgd_fixed(args: argparse.Namespace, search: dict[str, list[float]], n: int
               ) -> dict[str, Any]:
    """sgd's keywords besides the grid: delta, the sampling, its defaults for T and m, and a
    Poisson run's public N (the shell's data set has the size given by --N: public)."""
    out: dict[str, Any] = {"delta": args.delta,
                           "sampling": args.sampling or "without_replacement"}
    if "steps" not in search and args.steps is None:
        out["steps"] = SGD_STEPS
    if "batch_size" not in search and args.batch_size is None:
        out["batch_size"] = max(1, n // SGD_BATCH_FRACTION)
    if out["sampling"] == "poisson":
        out["public_n"] = n
    return out


def _check_private(args: argparse.Namespace) -> None:
    """--private's refusals (before any import)."""
    typed = getattr(args, "_flags_typed", None) or {}
    for flag, given in (("--fresh", args.fresh),
                        ("--workers", args.workers is not None), ("--dask", args.dask),
                        ("--scheduler", args.scheduler is not None),
                        ("--trials", "trials" in typed),
                        ("--eval-trials", args.eval_trials is not None)):
        if given:
            raise ValueError(f"{flag} is not read by --private (one sequential selection: a "
                             "trial per random grid point, stopped at random)")
    if args.loss_bound is None:
        raise ValueError("--private needs --loss-bound B > 0: the per-sample losses are "
                         "clipped to [0, B] in the released score (a public choice)")
    if args.total_epsilon is not None and "epsilon" in typed:
        raise ValueError("--total-epsilon plans each run's epsilon: leave --eps out")
    for flag, v in (("--loss-bound", args.loss_bound), ("--score-eps", args.score_eps),
                    ("--total-epsilon", args.total_epsilon)):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise ValueError(f"{flag} must be a finite number > 0, got {v:g}")
    gamma = args.stop_probability
    renyi = args.selection_delta is not None
    if gamma is not None and not (0 < gamma < 1 if renyi else 0 < gamma <= 1):
        raise ValueError(f"--stop-probability must lie in {'(0, 1)' if renyi else '(0, 1]'}"
                         f", got {gamma:g}")
    if args.algorithm in GAUSSIAN and not renyi:
        # random stopping composes pure runs only: every trial was refused after it ran,
        # and the error named no cause without a known seed
        raise ValueError(f"--private with {args.algorithm} (Gaussian, (eps, delta)-DP runs) "
                         "needs --selection-delta DELTA: the Renyi-DP selection; random "
                         "stopping alone composes pure-DP runs")
    if renyi and not 0 < args.selection_delta < 1:
        raise ValueError(f"--selection-delta must lie in (0, 1), got {args.selection_delta:g}")
    if args.trials_shape is not None:
        if not renyi:
            raise ValueError("--trials-shape is read with --selection-delta only (Renyi "
                             "accounting; random stopping's law is geometric)")
        if not (math.isfinite(args.trials_shape) and args.trials_shape > -1):
            raise ValueError(f"--trials-shape must be a finite number > -1, got "
                             f"{args.trials_shape:g}")
    # everything a private selection is given besides the data must be public (review of
    # stop 77: --start placed x0 at the data's exact optimum, which the released iterate
    # then carried; the default grid is alpha = k/L with L read from the data)
    if args.start_distance is not None:
        raise ValueError("--start is not read by --private: it places x0 by the data's own "
                         "minimiser (the runs start at x0 = 0)")
    if args.problem != "logistic" and args.algorithm != "sgd" and args.sensitivity is None:
        # sgd's clip bounds its sensitivity on any data; hb, nag and gd read the radii
        raise ValueError(f"--private runs on --problem logistic (its radii, hence its "
                         f"sensitivity, are declared by the data's domain), with sgd (its clip "
                         f"bounds its sensitivity), or with --sensitivity S1, a public bound on "
                         f"the data's domain; {args.problem}'s are read from its data")
    search = {_NAMES.get(sp.partition("=")[0].strip(), sp.partition("=")[0].strip())
              for sp in (args.search or ())}
    for needed, flag in (("step_size", "--step-size"), ("steps", "--steps")):
        if needed not in search and getattr(args, needed) is None \
                and args.algorithm in ALGORITHMS and args.algorithm != "sgd":
            raise ValueError(f"--private needs the grid given (--search alpha=..., T=... or "
                             f"{flag}): the default grid's step sizes are k/L with L read "
                             "from the data")


def _run_private(args: argparse.Namespace, alg: Any, f: Any, grid: dict[str, list[float]],
                 fixed: dict[str, Any]) -> int:
    from dpbounds.cli._paths import print_result
    from dpbounds.tuning import select_privately

    name = args.algorithm if args.algorithm not in ALGORITHMS else alg.__name__
    # the selection's noise: a seed anyone knows reproduces it, so without --seed it comes
    # from fresh entropy (walkthrough of stop 79: --private used the default seed 0 silently,
    # on a plug-in's own data too); --seed still seeds a synthetic problem's data
    typed = getattr(args, "_flags_typed", None) or {}
    seed = int(args.seed) if "seed" in typed else None
    seed_note = (f"the selection's noise came from --seed {seed}: anyone who knows it "
                 "reproduces the noise (leave --seed out for a release on real data)"
                 if seed is not None else
                 "the selection's noise came from fresh entropy, kept nowhere but in "
                 "--store's file, for a resume (keep it private; --seed S reproduces a "
                 "simulation study)"
                 if args.store is not None else
                 "the selection's noise came from fresh entropy, kept nowhere (--seed S "
                 "reproduces a simulation study)")
    # logistic and quadratic data are synthetic: a public twin (another seed, the same n, d,
    # mu, L and domain) takes the reference run, whose curve is then not composed into the
    # guarantee. A verification problem (a plug-in's own data) may ignore the seed: its twin
    # could be the private data itself (review of stop 79), so its reference run is made on
    # the data and composed
    twin = None
    if args.problem in PROBLEMS:
        recipe = _objective(args)
        twin = build_problem(**{**recipe.params, "seed": int(args.seed) + 1})
    law = {"score_epsilon": 0.1 if args.score_eps is None else args.score_eps,
           "loss_bound": args.loss_bound,
           "stop_probability": 0.02 if args.stop_probability is None else args.stop_probability,
           "target_delta": args.selection_delta,
           "shape": 1.0 if args.trials_shape is None else args.trials_shape}
    plan = None
    epsilon = args.epsilon
    if args.total_epsilon is not None:  # on public inputs only: before the private data
        from dpbounds.tuning import plan_selection

        if twin is None and args.selection_delta is not None:
            raise ValueError(f"--total-epsilon plans on a public twin of the data, which "
                             f"--problem {args.problem} (its own data) has none of: give "
                             "--eps per run (the selection reports its total)")
        # with --total-epsilon, --selection-delta is the whole selection's delta: the plan
        # budgets the cap's share inside it (walkthrough of stop 80: 1e-6 released 1.003e-6)
        total = ({} if args.selection_delta is None else
                 {"target_delta": None, "total_delta": args.selection_delta})
        plan = plan_selection(alg, twin, grid, total_epsilon=args.total_epsilon, name=name,
                              reference_composed=False, progress=progress_enabled(args),
                              **{**law, **total}, **fixed)  # the twin's run
        epsilon = plan.epsilon
        if plan.target_delta is not None:
            law["target_delta"] = plan.target_delta
    curve_keys = [k for k in grid if k in ("steps", "batch_size", "sampling")]
    if args.selection_delta is not None and twin is not None and curve_keys:
        # a searched T or m changes a run's Renyi curve: a point above grid point 0's never
        # wins (fuzz round 14: --search T=5,50 chose T = 5 every time); public, on the twin
        from dpbounds.cli import _say
        from dpbounds.tuning import costlier_points

        never = costlier_points(alg, twin, grid, epsilon=epsilon, keys=curve_keys, name=name,
                                **fixed)
        if never:
            shown_ = ", ".join(",".join(f"{k}={v}" for k, v in p.items()) for p in never)
            _say(f"dpbounds: warning: {shown_} spend(s) more than grid point 0 "
                 f"({', '.join(f'{k}={grid[k][0]}' for k in curve_keys)}) at some Renyi "
                 "order, so the selection never chooses them (their trials are bottom): "
                 "search them in a selection of their own")
    sel = select_privately(alg, f, grid, epsilon=epsilon, **law,
                           reference_objective=None if args.selection_delta is None else twin,
                           seed=seed, progress=progress_enabled(args), store=args.store,
                           **fixed)
    from dpbounds.cli import warn_no_privacy

    warn_no_privacy(sel.epsilon, sel.delta, sel.size)  # delta above 1/n: no privacy
    if plan is not None and not (sel.epsilon <= args.total_epsilon * (1 + 1e-12) and (
            args.selection_delta is None or sel.delta <= args.selection_delta)):
        raise ValueError(f"internal: the planned selection reports eps = {sel.epsilon:.6g}, "
                         f"delta = {sel.delta:.6g} above --total-epsilon "
                         f"{args.total_epsilon:g} (--selection-delta "
                         f"{args.selection_delta})")
    if args.json:
        return print_result("tune", strict_json(
            {"problem": args.problem, "algorithm": name, "best": sel.best,
             "x": sel.x.tolist(), "score": sel.score, "epsilon": sel.epsilon,
             "delta": sel.delta, "trial_epsilon": sel.trial_epsilon,
             "accountant": sel.accountant, "selection_seed": seed,
             "epsilon_per_run": epsilon, "flags": sel.flags,
             # measured, not released: with the pick they reveal more than the guarantee
             "not_released": {"trials_run": sel.trials_run,
                              "suboptimality": sel.suboptimality}}, indent=2))
    # the header names public inputs only (L, read from the data, is not printed; nor a
    # verification problem's mu, which its objective may compute from its data)
    mu = f", mu = {f.strong_convexity:.4g}" if args.problem in PROBLEMS else ""
    return print_result("tune", f"{args.problem}: n = {f.n}, d = {f.d}{mu}, eps = "
                                f"{epsilon:.6g} per run\n"
                                + (f"{plan}\n" if plan is not None else "")
                                + f"{sel.table()}\n{seed_note}")


def _probe_plugin_step(args: argparse.Namespace, f: Any, grid: dict[str, list[float]],
                       fixed: dict[str, Any]) -> None:
    """The post-processing probe of ``verify`` on one short run at the grid's first point,
    before the grid: a plug-in step that is not a function of its release grad + noise (one
    that scales or drops the noise) runs with less noise than its ledger's epsilon says, and
    ``tune runs`` printed that epsilon as the tuning's spend (walkthrough of stop 78: a step
    scaling the noise by 0.25 read "eps = 7.02568", exit 0)."""
    import numpy as np

    from dpbounds.audit.runner import POST_PROCESSING_TOL
    from dpbounds.extend import _post_processing_probe, _sensitivity_witness, method_named

    m = method_named(args.algorithm)
    kw = {k: v for k, v in fixed.items() if k != "method"}
    kw.update({k: v[0] for k, v in grid.items()})
    steps = int(kw.pop("steps", 0) or args.steps or 8)
    x0 = kw.get("x0")
    try:
        with _post_processing_probe() as probe:
            res = m.run(f, epsilon=args.epsilon, steps=min(steps, 12), trials=2, seed=(0, 77),
                        trace=None, **kw)
    except ValueError:
        return  # the point's own refusal is the grid's to report (its failures are named)
    # verify's sensitivity row on the same run: a declaration below what the release moves on
    # neighbours within the data (or below the objective's declared worst case) calibrates
    # less noise than the privacy printed as spent (not done before: stop 78's notes)
    declared = float((getattr(res, "params", None) or {}).get("sensitivity", 0.0) or 0.0)
    witness = _sensitivity_witness(m, f, x0, res, declared)
    if witness is not None and float(np.max(witness["values"])) > 1.0 + 1e-9:
        raise ValueError(
            f"{args.algorithm}: its declared sensitivity {declared:.4g} is "
            f"{1.0 / float(np.max(witness['values'])):.3g} of what its release moves to a "
            "neighbour (verify's sensitivity row; the objective's declared worst case "
            "included): its noise is calibrated below its claim, so the tuning's epsilon "
            "would be wrong; declare the release's sensitivity")
    if probe.post_processing > POST_PROCESSING_TOL:
        raise ValueError(
            f"{args.algorithm}: its step is not a function of its release grad(x) + noise "
            f"(moving the gradient by delta and the noise by -delta moved the step by "
            f"{probe.post_processing:.3g} of its size; verify's post-processing probe): the "
            "noise it adds is not the noise its ledger counts, so the tuning's epsilon would "
            "be wrong; add the noise to the gradient query as one release")


def _check_plugin(args: argparse.Namespace, search: dict[str, list[float]]) -> None:
    """A plug-in method's refusals, before the objective is built and any run."""
    from dpbounds.extend import method_named

    m = method_named(args.algorithm)
    name = args.algorithm
    if args.private:
        # its step adds float64 noise in its own arithmetic: the released iterate's last bits
        # leak, and the selection releases it (fuzz round 12: accepted at eps 3.3)
        raise ValueError(f"--private releases the chosen run's iterate, and a plug-in method's "
                         f"step ({name}) computes it in float64 from float64 noise, whose "
                         "last bits leak; tune it by runs (without --private), or select "
                         "privately in Python with an algorithm that takes noise='grid'")
    if m.mechanism != "gaussian" and (args.delta is not None or "delta" in search):
        flag = "--delta" if args.delta is not None else "--search delta"
        raise ValueError(f"{flag} is not read by {name}: its Laplace noise is calibrated to "
                         "pure epsilon-DP")
    if m.mechanism == "gaussian" and args.delta is None and "delta" not in search:
        # found only after the grid started ("no grid point ran": walkthrough of stop 77)
        raise ValueError(f"{name} adds Gaussian noise: give its delta (--delta, e.g. 1e-5)")
    if m.steps != "steps" and m.steps in search:
        # the method's horizon under its own name: Method.run sets it from steps, so the
        # searched values were overwritten and every point ran --steps (fuzz round 11)
        if "steps" in search or args.steps is not None:
            raise ValueError(f"--search {m.steps}: {name}'s horizon, given twice (with "
                             "--search T or --steps)")
        values = search.pop(m.steps)
        if any(v < 1 or v != int(v) for v in values):
            raise ValueError(f"--search {m.steps}: {name}'s horizon must list whole numbers "
                             ">= 1")
        search["steps"] = sorted({int(v) for v in values})
    if "steps" not in search and args.steps is None:
        # Method.run's TypeError "missing 'steps'" was an internal error (review of stop 76)
        raise ValueError(f"tune runs {name}: give its horizon (--search T=... or --steps T)")


def _run(args: argparse.Namespace) -> int:
    args.smoothness_given = "smoothness" in (getattr(args, "_flags_typed", None) or {})
    if args.algorithm not in ALGORITHMS:
        from dpbounds.cli.plugin_cmd import _registered_names

        if args.algorithm not in _registered_names():
            from dpbounds._suggest import did_you_mean

            raise ValueError(f"unknown algorithm {args.algorithm!r} for tune runs"
                             f"{did_you_mean(args.algorithm, tuple(ALGORITHMS))}: the built-in "
                             "ones are hb (DP heavy ball), nag (DP-NAG), gd (DP-GD, "
                             "Laplace) and sgd (DP-SGD, Gaussian); a plug-in's method by "
                             "its name (--plugin FILE; a Method counts once the file "
                             "passes it to extend.study or extend.audit_setting)")
    search = _check(args)
    if args.problem not in PROBLEMS:  # a verification problem (a plug-in's own data)
        from dpbounds.verify.problems import kinds

        if args.problem not in kinds():
            from dpbounds._suggest import did_you_mean

            raise ValueError(f"--problem {args.problem!r} is unknown"
                             f"{did_you_mean(args.problem, (*PROBLEMS, *kinds()))}: "
                             f"{', '.join(PROBLEMS)}, or a verification problem "
                             f"({', '.join(k for k in kinds() if k not in PROBLEMS)}; a "
                             "plug-in declares its own with "
                             "extend.verify_problem)")
    if args.store is not None:  # before any run (a run's minutes lost to a bad folder)
        from dpbounds.cli._paths import check_store_dir

        check_store_dir(args.store)
    if args.algorithm not in ALGORITHMS:
        _check_plugin(args, search)
    import numpy as np

    from dpbounds.tuning import tune_by_runs

    recipe = _objective(args)
    f = recipe.build()
    if args.algorithm in ALGORITHMS and args.algorithm != "sgd" \
            and args.sensitivity is None:  # sgd: its clip bounds it; else the given bound
        # before the grid runs (fuzz round 12: "no grid point ran: ... pass sensitivity=",
        # a keyword the shell has no flag for, after every point was tried)
        sens = float(getattr(f, "l1_sensitivity", math.inf))
        if not (math.isfinite(sens) and sens > 0):
            raise ValueError(f"--problem {args.problem}: its objective has no finite L1 "
                             f"sensitivity, which {args.algorithm}'s Laplace noise is "
                             "calibrated to; tune a plug-in method on it (--plugin FILE), or "
                             "use --problem logistic|quadratic")
    if args.algorithm == "hb" and args.momentum is None and "momentum" not in search \
            and (args.private and args.problem not in PROBLEMS or f.strong_convexity <= 0):
        # outside the block above (review 2 of stop 80: with --sensitivity every point ran
        # and failed); a private selection on a plug-in's data does not read its mu and L
        raise ValueError(f"--problem {args.problem}: hb's default momentum reads mu and L "
                         + ("from the data, which a private selection must not"
                            if args.private and args.problem not in PROBLEMS else
                            f"and needs mu > 0 (mu = {f.strong_convexity:g})")
                         + "; give --beta B or --search beta=...")
    alg = _algorithm(args.algorithm)
    fixed: dict[str, Any] = {k: getattr(args, k) for k in _FIXED if getattr(args, k) is not None}
    if args.algorithm == "sgd":
        fixed.update(_sgd_fixed(args, search, int(f.n)))
    if args.sensitivity is not None:  # a public S_1 (walkthrough of stop 80: no flag)
        fixed["sensitivity"] = args.sensitivity
    if args.algorithm not in ALGORITHMS:
        fixed["method"] = args.algorithm
    if args.algorithm == "sgd":  # a name neither searched nor fixed: the default grid's
        grid = {**{k: v for k, v in _default_grid("sgd", 1.0).items()
                   if k not in fixed and k not in search}, **search}
        if not grid:  # "grid must map at least one hyper-parameter" (review of stop 79)
            raise ValueError("tune runs sgd: every hyper-parameter is fixed (--step-size, "
                             "--clip-threshold): search one (--search alpha=..., C=..., T=... "
                             "or m=...)")
    else:
        grid = search or {k: v for k, v in _default_grid(args.algorithm, f.smoothness).items()
                          if k not in fixed}
    if args.start_distance is None and getattr(f, "tune_start", None) is not None \
            and not args.private:
        fixed["x0"] = f.tune_start  # the verification problem's own start
    if args.start_distance is not None:
        x_star = np.asarray(f.optimum.x, dtype=float).ravel()
        fixed["x0"] = x_star + float(args.start_distance) / math.sqrt(f.d)
    if args.algorithm not in ALGORITHMS:

        if args.delta is not None:
            fixed["delta"] = args.delta
        # a plug-in's step reads the problem's constants from its params, as in verify
        x0 = np.zeros((1, f.d)) if "x0" not in fixed else np.asarray(fixed["x0"])[None, :]
        if args.private:  # public ones only: mu (the ridge), d, N, and L bounded by the
            # declared radius (r^2/4 + mu for the logistic loss), never F(x0) - F*
            constants = {"mu": f.strong_convexity, "L": f.l2_radius ** 2 / 4 + f.strong_convexity,
                         "d": f.d, "N": f.n}
        else:
            constants = {"mu": f.strong_convexity, "L": f.smoothness, "d": f.d, "N": f.n,
                         "R": float(f.suboptimality(x0)[0])}
        fixed.update({k: v for k, v in constants.items() if k not in grid and k not in fixed})
        from dpbounds.extend import method_named

        if method_named(args.algorithm).sampling == "poisson" and "public_n" not in grid:
            # the shell's data set has the size given on its command line (--N): public, as
            # a Poisson method's rate q = B / public_n needs (fuzz round 12, walkthrough of
            # stop 78: "public_n must be given" after every point ran, no flag to give it)
            fixed["public_n"] = int(f.n)
    if args.private:
        return _run_private(args, alg, f, grid, fixed)
    if args.algorithm not in ALGORITHMS:
        _probe_plugin_step(args, f, grid, fixed)
    from dpbounds.cli import warn_no_privacy

    # each run's delta above 1/n: no privacy, said before the runs (fuzz round 14: --delta 0.5
    # ran every run without a word; privacy, calibrate, compose and --private flag it)
    warn_no_privacy(args.epsilon, args.delta if args.delta is not None else 0.0, f.n)
    res = tune_by_runs(alg, recipe, grid, epsilon=args.epsilon, trials=args.trials,
                       eval_trials=args.eval_trials, seed=args.seed,
                       progress=progress_enabled(args), store=args.store,
                       executor=_executor(args), fresh=args.fresh,
                       # the tuning's spend at the runs' own delta (walkthrough of stop 80:
                       # `tune runs sgd --delta 1e-6` reported it at 1e-5)
                       **({"spent_delta": args.delta} if args.delta is not None else {}),
                       **fixed)
    from dpbounds.cli._paths import print_result

    if args.json:
        return print_result("tune", strict_json(
            {"problem": args.problem, "best": res.best, "rows": res.rows(),
             "spent_epsilon": res.spent_epsilon, "delta": res.delta,
             "accountant": res.accountant, "runs": res.runs, "notes": list(res.notes)},
            indent=2))
    return print_result("tune", f"{args.problem}: n = {f.n}, d = {f.d}, mu = "
                                f"{f.strong_convexity:.4g}, L = {f.smoothness:.4g}, eps = "
                                f"{args.epsilon:g} per run\n{res.table()}")


def register_tune_runs(tsub: argparse._SubParsersAction) -> None:
    """Add ``tune runs ALGORITHM`` under ``tune``."""
    p = tsub.add_parser("runs", help="tune by the mean error of the algorithm's real runs on "
                                     "an objective (a grid; the pick re-measured on fresh "
                                     "seeds; the privacy the tuning spends)",
                        description="Tune an algorithm's hyper-parameters by the mean final "
                                    "F(x_T) - F* of its real runs on one objective (the "
                                    "worst-case tuners hb and nag hold for every problem of "
                                    "the class, and can be far from the best run on yours).",
                        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("algorithm", help="hb, nag, gd, sgd (DP-SGD), or a plug-in's method "
                                     "(--plugin FILE)")
    p.add_argument("--problem", default="logistic", metavar="logistic|quadratic|NAME",
                   help="logistic: Kuru et al.'s synthetic data with ridge mu; quadratic: "
                        "spectrum log-spaced in [mu, L], per-sample offsets (default "
                        "logistic); NAME: a verification problem (verify --list), e.g. a "
                        "plug-in's own data declared with extend.verify_problem")
    p.add_argument("--search", action="append", metavar="NAME=SPEC",
                   help="a searched hyper-parameter and its values (repeatable; see below)")
    add_quantity(p, "dataset_size", default=20000)
    add_quantity(p, "dimension", default=20)
    add_quantity(p, "strong_convexity", default=0.02,
                 help="logistic: the strong convexity 2 lambda of Kuru et al.'s ridge lambda "
                      "||x||^2 (0.02: their lambda = 0.01); quadratic: the spectrum's low end")
    add_quantity(p, "smoothness", default=1.0, help="quadratic: the spectrum's high end")
    add_quantity(p, "epsilon", default=1.0, help="privacy target of each run")
    add_quantity(p, "delta", help="delta of each run (sgd, or a Gaussian plug-in method)")
    add_quantity(p, "sensitivity", help="hb, nag, gd: a public bound S_1 on one record's "
                 "gradient change (L1), calibrating their Laplace noise instead of the "
                 "problem's own; with --private it allows any --problem")
    add_quantity(p, "step_size", help="a fixed step size (not searched)")
    add_quantity(p, "momentum", help="a fixed momentum (not searched)")
    add_quantity(p, "steps", help="a fixed horizon (not searched)")
    add_quantity(p, "batch_size", help="a fixed batch size m (not searched; sgd's default "
                                       "N // 40)")
    add_quantity(p, "clip_threshold", help="sgd: a fixed clip threshold C (not searched)")
    add_quantity(p, "sampling", choices=("without_replacement", "poisson"),
                 help="sgd: without_replacement (replace-one, the default) or poisson "
                      "(add/remove; m the expected batch)")
    add_quantity(p, "start_distance", help="start at this distance from the minimiser, along "
                                           "1/sqrt(d) (default: the algorithm's x0 = 0)")
    add_quantity(p, "trials", default=16, help="runs per grid point on the selection seeds")
    p.add_argument("--eval-trials", type=integer, default=None,
                   help="runs of the pick on fresh seeds (default 4 x --trials)")
    add_quantity(p, "seed", default=0, help="seed of the data and of the runs (--private: of "
                                            "its noise only when given; without it, fresh "
                                            "entropy)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    g = p.add_argument_group("resume and distribute (the same numbers wherever they run)")
    g.add_argument("--store", default=None, metavar="DIR",
                   help="keep each finished grid point (--private: each trial, and a secret "
                        "seed; keep it private) here; a rerun (after a kill) reuses them")
    g.add_argument("--fresh", action="store_true",
                   help="recompute every point, overwriting the stored ones")
    g.add_argument("--workers", type=integer, default=None, metavar="N",
                   help="run the points on N local worker processes (1, default: this "
                        "process; with --dask: the LocalCluster's workers)")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--dask", action="store_true",
                       help="run on a Dask LocalCluster of --workers workers (the dist extra)")
    where.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                       help="run on an existing Dask cluster")
    q = p.add_argument_group("private selection (tune on the private data itself: Liu & "
                             "Talwar's random stopping, eps = 3 (eps + score eps) in all; or "
                             "Papernot & Steinke's Renyi accounting with --selection-delta)")
    q.add_argument("--private", action="store_true",
                   help="select privately: a run per random grid point, each with a noisy "
                        "score, stopped at random; releases the best run and its score")
    q.add_argument("--score-eps", type=real, default=None, metavar="EPS",
                   help="budget of each noisy score (default 0.1)")
    q.add_argument("--loss-bound", type=real, default=None, metavar="B",
                   help="clip each sample's loss to [0, B] in the score (required)")
    q.add_argument("--stop-probability", type=real, default=None, metavar="GAMMA",
                   help="stop after each trial with this probability (default 0.02: about "
                        "50 trials; compute, not privacy)")
    q.add_argument("--selection-delta", type=real, default=None, metavar="DELTA",
                   help="account the selection by Renyi DP (Papernot & Steinke 2022) and "
                        "report its eps at this delta; the number of trials is drawn up "
                        "front from a truncated negative binomial law (--trials-shape)")
    q.add_argument("--total-epsilon", type=real, default=None, metavar="EPS",
                   dest="total_epsilon",
                   help="plan each run's epsilon so that the whole selection costs at most "
                        "EPS (on public inputs: the synthetic twin's reference runs), instead "
                        "of --eps per run; with --selection-delta DELTA the whole selection's "
                        "delta is at most DELTA (the cap's share budgeted inside it)")
    q.add_argument("--trials-shape", type=real, default=None, metavar="ETA",
                   help="with --selection-delta: the law's shape eta > -1 (default 1: "
                        "geometric; 0: logarithmic, fewer trials and a smaller eps)")
    p.set_defaults(func=_run)


def _executor(args: argparse.Namespace) -> Any:
    """The sweep executor of --workers/--dask/--scheduler (``None``: this process)."""
    if args.scheduler or args.dask:
        from dpbounds.sweep import DaskDistributed

        return DaskDistributed(scheduler=args.scheduler) if args.scheduler \
            else DaskDistributed(workers=args.workers)
    if args.workers is None or args.workers == 1:
        return None
    from dpbounds.sweep import LocalProcesses

    return LocalProcesses(args.workers)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: dpbounds tune runs ...")
