"""Run every simulation study and print its verdict table: ``python -m sims [--full]``."""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Sequence

from sims import STUDIES
from sims._verdict import format_table


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sims", description=__doc__)
    p.add_argument("--full", action="store_true", help="large samples (minutes)")
    p.add_argument("--only", nargs="*", choices=STUDIES)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(list(argv) if argv is not None else None)
    failed = 0
    for name in args.only or STUDIES:
        t0 = time.perf_counter()
        rows = importlib.import_module(f"sims.{name}").run(quick=not args.full, seed=args.seed)
        bad = sum(not r.holds for r in rows)
        failed += bad
        print(f"\n== {name}: {len(rows) - bad}/{len(rows)} verdicts hold "
              f"({time.perf_counter() - t0:.1f} s)")
        print(format_table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
