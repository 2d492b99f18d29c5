"""Regenerate every paper figure: ``python -m paper_figs [--quick | --paper] [--only NAME ...]
[--gallery DIR]``.

Each script's grid of simulations runs as a sweep (``--workers N`` local processes by default,
``--inline``, ``--dask`` or ``--scheduler tcp://HOST:PORT``); finished cells are stored under
``OUT/store``, so a killed run resumes where it stopped and a re-run only redraws (``--fresh``
recomputes). ``--quick``, ``--paper``, ``--seed`` and the sweep options are passed to every
script. Prints each script's wall time and the total. ``--gallery DIR`` then copies each
script's PNG(s) into ``DIR`` (``docs/gallery`` for the docs site) with their captions merged into
``DIR/captions.json``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from dpbounds.sweep import SweepError, SweepOptions
from dpbounds.sweep.options import sweep_argv
from paper_figs import SCRIPTS
from paper_figs._common import (
    add_figure_arguments,
    copy_gallery,
    settle_args,
    shared_sweep_options,
)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paper_figs", description=__doc__)
    add_figure_arguments(p)
    p.add_argument("--seed", type=int, default=None,
                   help="master seed for every script (default: each script's own)")
    p.add_argument("--only", nargs="+", choices=SCRIPTS, metavar="NAME",
                   help=f"run only these scripts (one or more of: {', '.join(SCRIPTS)})")
    p.add_argument("--gallery", type=Path, metavar="DIR",
                   help="afterwards copy the PNGs and their captions (captions.json) to DIR, "
                        "e.g. docs/gallery")
    args = settle_args(p.parse_args(list(argv) if argv is not None else None))
    sub = ["--out", str(args.out), *sweep_argv(args)]
    sub += ["--quick"] if args.quick else (["--paper"] if args.paper else [])
    sub += ["--seed", str(args.seed)] if args.seed is not None else []
    sub += ["--bare"] if args.bare else []
    names = args.only or SCRIPTS
    times: dict[str, float] = {}
    start = time.perf_counter()
    name = ""
    try:
        # one worker pool (or Dask cluster) for all scripts, started by the first sweep
        with shared_sweep_options(SweepOptions.from_args(args)):
            for name in names:
                t0 = time.perf_counter()
                importlib.import_module(f"paper_figs.{name}").main(sub)
                times[name] = time.perf_counter() - t0
    except SweepError as exc:
        print(f"python -m paper_figs: {name} failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\npython -m paper_figs: interrupted in {name}; finished cells are kept in "
              f"{args.store}, run the same command again to resume", file=sys.stderr)
        return 130
    mode = " (--quick)" if args.quick else (" (--paper)" if args.paper else "")
    print(f"\nwall time per script{mode}")
    for name, t in times.items():
        print(f"  {name:<22} {t:8.1f} s")
    print(f"  {'total':<22} {time.perf_counter() - start:8.1f} s  -> {args.out}")
    if args.gallery is not None:
        copies = copy_gallery(args.out, args.gallery, names)
        print(f"copied {len(copies)} PNGs and their captions to {args.gallery}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
