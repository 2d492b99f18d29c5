"""``dpbounds demo``: the main job on a built-in default problem.

It runs, in order and with their built-in defaults, the three questions a DP-optimization
researcher asks first: how much noise does my budget need (``dpbounds privacy``), which
utility bound is best for my problem (``dpbounds compare``), and how should I tune heavy
ball and Nesterov for it (``dpbounds tune hb``, ``dpbounds tune nag``).

The non-convex bounds are compared at d = 10, N = 1e7, delta = 1e-8 (every one of them below G
there, so each
says something; at ``dpbounds compare``'s default d = 100, N = 1e5 both Tran & Cutkosky bounds
are vacuous), followed by the N from which each stops being vacuous.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

from dpbounds.settings import LOGISTIC_REGRESSION_SMOOTHNESS

# Kuru et al. Section 5 / Figure 3: mu = 0.02, S_1 = 40; L = 5.1028 is computed from the
# synthetic data (seed 1) by dpbounds.settings.logistic_regression().
_FIGURE3 = ("--strong-convexity", "0.02", "--smoothness", f"{LOGISTIC_REGRESSION_SMOOTHNESS}",
            "--dimension", "20", "--dataset-size", "1e5", "--epsilon", "1",
            "--sensitivity", "40", "--initial-gap", "10")

#: The demo's non-convex problem (the other keys are ``dpbounds compare``'s defaults: eps = 1,
#: G = L = R = 1). At the default d = 100, N = 1e5 both Tran & Cutkosky bounds exceed G
#: (vacuous: ||grad F|| <= G always); here the largest, tree momentum, is 0.53. delta = 1e-8
#: < 1/N: the default 1e-5 at N = 1e7 is no privacy, and the demo warned so about itself
#: (fuzz round 8).
_NONCONVEX_TEXT = {"d": "10", "N": "1e7", "delta": "1e-8"}
NONCONVEX_DEMO = {k: float(v) for k, v in _NONCONVEX_TEXT.items()}
_NONCONVEX = ("--dimension", _NONCONVEX_TEXT["d"], "--dataset-size", _NONCONVEX_TEXT["N"],
              "--delta", _NONCONVEX_TEXT["delta"])


def nonvacuous_rows(overrides: dict[str, float] | None = None) -> list[tuple[str, float, float]]:
    """``(id, value, N*)`` for every registered non-convex bound at the demo problem: its
    closed-form value and the smallest N from which it is below G
    (:func:`dpbounds.verify.first_nonvacuous_n`)."""
    from dpbounds.bounds import registry
    from dpbounds.verify import first_nonvacuous_n

    problem = {**registry.DEFAULT_PROBLEM, **NONCONVEX_DEMO, **(overrides or {})}
    rest = {k: v for k, v in problem.items() if k != "N"}
    return [(e.name, float(e.value(problem, invalid="nan")), first_nonvacuous_n(e.name, rest))
            for e in registry.entries() if e.problem_class == "nonconvex"]


def _print_nonvacuous() -> int:
    from dpbounds.bounds.registry import DEFAULT_PROBLEM

    p = {**DEFAULT_PROBLEM, **NONCONVEX_DEMO}
    print(f"problem: d={p['d']:g}, eps={p['eps']:g}, delta={p['delta']:g}, G={p['G']:g}, "
          f"L={p['L']:g}, R={p['R']:g}; a bound >= G says nothing (||grad F|| <= G always)\n")
    from dpbounds.bounds import registry

    rows = nonvacuous_rows()
    width = max(len(name) for name, _, _ in rows)
    value_head, star_head = f"value at N = {_NONCONVEX_TEXT['N']}", "non-vacuous from N"
    print(f"{'bound':<{width}}  {value_head}  {star_head}  provenance")
    print(f"{'-' * width}  {'-' * len(value_head)}  {'-' * len(star_head)}  ----------")
    for name, value, n_star in rows:
        star = "never (<= 1e15)" if math.isinf(n_star) else f"{n_star:.3g}"
        # the constants of these bounds are ours (DERIVED), not the papers': say so per row
        label = getattr(registry.get(name).theorem, "provenance", "")
        print(f"{name:<{width}}  {value:>{len(value_head)}.4g}  {star:>{len(star_head)}}  "
              f"{label}")
    return 0


#: (title, step) of each step: the argv of an ordinary sub-command (run with its defaults
#: unless given), or a function that prints its own table and returns an exit status.
DEMO_STEPS: tuple[tuple[str, tuple[str, ...] | Callable[[], int]], ...] = (
    ("Privacy: the noise a budget needs, per mechanism and accountant", ("privacy",)),
    ("Bounds: the non-convex utility bounds side by side (d = 10, N = 1e7, delta = 1e-8: each "
     "one below G)",
     ("compare", *_NONCONVEX)),
    ("Bounds: from which N each non-convex bound stops being vacuous "
     "(dpbounds.verify.first_nonvacuous_n)", _print_nonvacuous),
    ("Bounds: the strongly convex bounds (heavy ball, DP-NAG, DP-MASG) for Kuru et al.'s "
     "Figure-3 problem", ("compare", *_FIGURE3, "--problem-class", "quadratic")),
    (
        "Tuning: DP heavy ball for Kuru et al.'s Figure-3 problem (d=20, n=1e5, eps=1)",
        ("tune", "hb", *_FIGURE3),
    ),
    ("Tuning: DP-NAG horizon and optimal noise schedule, same problem", ("tune", "nag", *_FIGURE3)),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the main job on a built-in default problem",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpbounds.cli import build_parser, progress_enabled

    parser = build_parser()
    known = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr, arg-type]
    status = 0
    for title, step in DEMO_STEPS:
        start = time.perf_counter()
        if callable(step):
            print(f"\n== {title}\n")
            status |= int(step() or 0)
        elif step[0] in known:
            print(f"\n== {title}\n$ dpbounds {' '.join(step)}\n")
            quiet = [] if progress_enabled(args) else ["--quiet"]
            sub_args = parser.parse_args([*step, *quiet])
            status |= int(sub_args.func(sub_args) or 0)
        else:
            continue
        print(f"({time.perf_counter() - start:.1f} s)")
    return status
