"""Run every simulation study and print its verdict table: ``python -m sims [--full]``.

Each study is one cell of a sweep (``--workers N`` local processes by default, ``--inline``,
``--dask`` or ``--scheduler tcp://HOST:PORT``); its verdicts are stored under ``sims/out/store``
(``--store DIR``), so a re-run with the same code and options prints the tables at once and a
killed run recomputes only the studies that had not finished (``--fresh`` recomputes all).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dpbounds.sweep import Cell, SweepError, SweepOptions, add_sweep_arguments
from sims import STUDIES
from sims._verdict import Verdict, format_table

DEFAULT_STORE = Path(__file__).resolve().parent / "out" / "store"


def study(name: str, quick: bool, seed: int) -> dict[str, Any]:
    """One cell: the verdict rows of study ``name``."""
    rows = importlib.import_module(f"sims.{name}").run(quick=quick, seed=seed)
    return {"verdicts": [asdict(r) for r in rows]}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sims", description=__doc__)
    p.add_argument("--full", action="store_true", help="large samples (minutes)")
    p.add_argument("--only", nargs="+", choices=STUDIES, metavar="NAME",
                   help=f"run only these studies (one or more of: {', '.join(STUDIES)})")
    p.add_argument("--seed", type=int, default=0)
    add_sweep_arguments(p, store=DEFAULT_STORE)
    args = p.parse_args(list(argv) if argv is not None else None)
    names = args.only or STUDIES
    cells = [Cell(study, dict(name=name, quick=not args.full), seed=args.seed) for name in names]
    t0 = time.perf_counter()
    try:
        result = SweepOptions.from_args(args).run(cells, desc="sims")
    except SweepError as exc:
        print(f"python -m sims: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a traceback and a leaked-semaphore warning (fuzz round 10)
        print(f"\npython -m sims: interrupted; finished cells are kept in {args.store}, run "
              "the same command again to resume", file=sys.stderr)
        return 130
    failed = 0
    for name, record, info in zip(names, result, result.info):
        rows = [Verdict(**d) for d in record["verdicts"]]
        bad = sum(r.failed for r in rows)
        vacuous = sum(r.vacuous for r in rows)
        failed += bad
        how = "reused from the store" if info.reused else "computed"
        extra = f", {vacuous} vacuous (no claim)" if vacuous else ""
        print(f"\n== {name}: {len(rows) - bad - vacuous}/{len(rows)} verdicts hold{extra} "
              f"({info.seconds:.1f} s, {how})")
        print(format_table(rows))
    print(f"\n{len(names)} studies in {time.perf_counter() - t0:.1f} s "
          f"({result.computed} computed, {result.reused} reused)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
