"""Benchmark: CPU of each redraw of notebook 02 (the bounds explorer; issue 36, item 4).

Run ``python bench/bench_notebook02_redraw.py [--theorems N]`` (about a minute). The
committed notebook's first two code cells run as in Jupyter (Agg backend; every figure
rendered to a PNG by IPython's ``print_figure``, as the inline backend does), then ``draw`` is
called the way the widgets call it: the first draw with the defaults, each slider moved twice
(its first move and a later one) and each live theorem chosen with the sliders where they are
(first choice, then chosen again). CPU is ``time.process_time`` around the call (this
process: the notebook runs no children); the import cell is timed too. Prints a Markdown
table with the CPU model (``lscpu``).

Results: ``bench/bench_notebook02_redraw.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the notebook's first cell sets it

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02_bounds_explorer.ipynb"


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name")), "unknown")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--theorems", type=int, default=0,
                    help="time only the first N live theorems (0: all)")
    args = ap.parse_args()
    os.chdir(NOTEBOOK.parent)  # the notebook runs in notebooks/
    sys.path.insert(0, str(NOTEBOOK.parents[1]))
    code = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
            if c.cell_type == "code"]

    def show(*_a: object, **_k: object) -> None:
        # what the inline backend does per figure: IPython's print_figure (PNG at the figure's
        # dpi, bbox "tight": the figure is drawn twice), then the figure is closed
        print_figure(plt.gcf(), "png")
        plt.close("all")

    ns: dict = {}
    rows: list[tuple[str, float, float]] = []

    def timed(label: str, fn) -> None:
        t0, w0 = time.process_time(), time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
        rows.append((label, time.process_time() - t0, time.perf_counter() - w0))
        print(f"{label:<58} cpu {rows[-1][1]:6.2f} s  wall {rows[-1][2]:6.2f} s", flush=True)

    setup = "\n".join(line for line in code[0].splitlines() if not line.startswith("%"))
    cell = code[1][: code[1].rfind("\ndraw(")]  # the definitions, without the calls
    timed("import cell (setup + registry listing)", lambda: exec(setup, ns))
    plt.show = show  # after the setup cell (it imports pyplot and styles it)
    exec(cell, ns)
    draw = ns["draw"]
    state = {"theorem": "nonconvex.tree_momentum_nsgd", "d": 100.0, "N": 1e8, "eps": 1.0}
    timed("first draw (defaults, as the notebook runs it)", lambda: draw(**state))

    def move(control: str, value, when: str) -> None:
        state[control] = value
        timed(f"{control} = {value:g} ({when})" if control != "theorem"
              else f"theorem = {value} ({when})", lambda: draw(**state))

    for control, first, later in (("d", 1000.0, 10.0), ("N", 1e6, 1e10), ("eps", 0.1, 3.0)):
        move(control, first, "first move")
        move(control, later, "later move")
    live = ns["LIVE"][: args.theorems or None]
    for name in live:
        move("theorem", name, "first choice")
    for name in live[:2]:
        move("theorem", name, "chosen again")

    worst = max(r[1] for r in rows[1:])
    print(f"\nCPU: {cpu_model()}, {os.cpu_count()} logical CPUs; Python {sys.version.split()[0]}")
    print("\n| action | CPU s | wall s |\n|---|---:|---:|")
    for label, cpu, wall in rows:
        print(f"| {label} | {cpu:.2f} | {wall:.2f} |")
    print(f"\nworst redraw: {worst:.2f} CPU-s (target <= 2)")


if __name__ == "__main__":
    main()
