"""Regenerate every paper figure: ``python -m paper_figs [--quick] [--out DIR] [--only NAME ...]``.

Prints each script's wall time and the total.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Sequence
from pathlib import Path

from paper_figs import SCRIPTS
from paper_figs._common import DEFAULT_OUT


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paper_figs", description=__doc__)
    p.add_argument("--quick", action="store_true", help="seconds per script (used by tests)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--only", nargs="*", choices=SCRIPTS, help="run only these scripts")
    args = p.parse_args(list(argv) if argv is not None else None)
    names = args.only or SCRIPTS
    times: dict[str, float] = {}
    start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        module = importlib.import_module(f"paper_figs.{name}")
        sub = ["--out", str(args.out)] + (["--quick"] if args.quick else [])
        module.main(sub)
        times[name] = time.perf_counter() - t0
    print("\nwall time per script" + (" (--quick)" if args.quick else ""))
    for name, t in times.items():
        print(f"  {name:<22} {t:8.1f} s")
    print(f"  {'total':<22} {time.perf_counter() - start:8.1f} s  -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
