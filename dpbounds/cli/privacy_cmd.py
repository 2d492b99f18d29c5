"""``dpbounds privacy``: the noise each mechanism and accountant needs for a target (ε, δ).

Example::

    dpbounds privacy --epsilon 1 --delta 1e-5 --sensitivity 1 --steps 1000 \\
        --sampling-rate 0.01 --neighbouring replace_one --sigma 4
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings

from dpbounds._progress import progress_bar
from dpbounds.cli import add_quantity, strict_json

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``privacy`` sub-command."""
    p = sub.add_parser(
        "privacy",
        help="noise per mechanism/accountant for a target (epsilon, delta), and back",
        description=(
            "Print, for each mechanism and accountant, the noise it needs so that STEPS "
            "releases are (EPSILON, DELTA)-DP, and with --sigma/--scale the epsilon that noise "
            "buys. Every noise level is conservative (never overshoots) for its accountant."
        ),
    )
    add_quantity(p, "epsilon", default=1.0, help="target epsilon")
    add_quantity(p, "delta", default=1e-5, help="target delta")
    add_quantity(p, "sensitivity", default=1.0,
                 help="sensitivity of the per-step noised sum under --neighbouring")
    add_quantity(p, "steps", default=1000, help="number of releases (1e4 is fine)")
    add_quantity(p, "sampling_rate", default=0.01,
                 help="Poisson rate / batch fraction m/n for subsampled rows")
    add_quantity(p, "dataset_size", default=10_000,
                 help="n for sampling without replacement and tree epochs")
    add_quantity(p, "neighbouring", default="add_remove", choices=("add_remove", "replace_one"),
                 help="relation under which --sensitivity is measured")
    add_quantity(p, "sigma", help="Gaussian std on the sum: also report the epsilon it buys")
    add_quantity(p, "scale", help="Laplace scale b on the sum: also report the epsilon it buys")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=run)
    from dpbounds.cli.privacy_compose import register_compose

    register_compose(p)  # `dpbounds privacy compose ...`


def run(args: argparse.Namespace) -> int:
    """Compute and print the table (a progress bar on stderr while the rows are computed)."""
    from dpbounds.privacy.table import TABLE_ROWS, format_table, privacy_table

    logging.getLogger().setLevel(logging.ERROR)  # dp_accounting's informational warnings
    # PLD rows at millions of steps take seconds: show which row is being computed
    with progress_bar(not getattr(args, "quiet", False), total=TABLE_ROWS,
                      desc="privacy table", unit="row") as bar:

        def tick(label: str) -> None:
            bar.set_postfix_str(label[:40], refresh=False)
            bar.update()

        with warnings.catch_warnings(record=True) as caught:  # NoPrivacyWarning: one line
            warnings.simplefilter("always")
            rows = privacy_table(
                epsilon=args.epsilon, delta=args.delta, sensitivity=args.sensitivity,
                steps=args.steps, sampling_rate=args.sampling_rate,
                neighbouring=args.neighbouring, sigma=args.sigma, scale=args.scale,
                dataset_size=args.dataset_size, progress=tick,
            )
    for w in caught:
        print(f"dpbounds: warning: {w.message}", file=sys.stderr)
    if args.json:
        print(strict_json(rows, indent=2))
        return 0
    print(
        f"Target ({args.epsilon:g}, {args.delta:g})-DP over {args.steps} steps; sensitivity "
        f"{args.sensitivity:g} ({args.neighbouring}); sampling rate {args.sampling_rate:g}; "
        f"n = {args.dataset_size}"
    )
    print(format_table(rows, given=args.sigma is not None or args.scale is not None))
    print("noise = std sigma (Gaussian) or scale b (Laplace) of the noise on the per-step sum; "
          "noise/sens uses the sensitivity under the row's relation; Laplace rows are pure DP.")
    return 0
