"""``dpbounds demo``: the main job on a built-in default problem.

It runs, in order and with their built-in defaults, the three questions a DP-optimization
researcher asks first: how much noise does my budget need (``dpbounds privacy``), which
utility bound is best for my problem (``dpbounds compare``), and how should I tune heavy
ball and Nesterov for it (``dpbounds tune hb``, ``dpbounds tune nag``).
"""

from __future__ import annotations

import argparse
import time

from dpbounds.settings import LOGISTIC_REGRESSION_SMOOTHNESS

# Kuru et al. Section 5 / Figure 3: mu = 0.02, S_1 = 40; L = 5.1028 is computed from the
# synthetic data (seed 1) by dpbounds.settings.logistic_regression().
_FIGURE3 = ("--strong-convexity", "0.02", "--smoothness", f"{LOGISTIC_REGRESSION_SMOOTHNESS}",
            "--dimension", "20", "--dataset-size", "1e5", "--epsilon", "1",
            "--sensitivity", "40", "--initial-gap", "10")

#: (title, argv) of each step; every step is an ordinary sub-command with its defaults.
DEMO_STEPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Privacy: the noise a budget needs, per mechanism and accountant", ("privacy",)),
    ("Bounds: the non-convex utility bounds side by side", ("compare",)),
    ("Bounds: the strongly convex bounds (heavy ball, DP-NAG, DP-MASG) for Kuru et al.'s "
     "Figure-3 problem", ("compare", *_FIGURE3, "--problem-class", "quadratic", "--no-tune")),
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
    known = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    status = 0
    for title, argv in DEMO_STEPS:
        if argv[0] not in known:
            continue
        print(f"\n== {title}\n$ dpbounds {' '.join(argv)}\n")
        start = time.perf_counter()
        quiet = [] if progress_enabled(args) else ["--quiet"]
        sub_args = parser.parse_args([*argv, *quiet])
        status |= int(sub_args.func(sub_args) or 0)
        print(f"({time.perf_counter() - start:.1f} s)")
    return status
