"""Benchmark: CPU of each redraw of notebook 02 (the bounds explorer; issue 36, item 4).

Run ``python bench/bench_notebook02_redraw.py [--theorems N]`` (about a minute). The
committed notebook's first two code cells run as in Jupyter (Agg backend; a figure shown with
``plt.show`` is rendered to a PNG by IPython's ``print_figure``, as the inline backend does; an
``IPython.display.Image`` the notebook rendered itself is displayed as is), then ``draw`` is
called the way the widgets call it: the first draw with the defaults, each slider moved twice
(its first move and a later one) and each live theorem chosen with the sliders where they are
(first choice, then chosen again). CPU is ``time.process_time`` around the call (this
process: the notebook runs no children); the import cell is timed too. Prints a Markdown
table with the CPU model (``lscpu``).

``--write-digests FILE`` stores a SHA-256 of what each step plots (every line's x and y data,
every shading's vertices, the markers, labels, titles, legend entries and the axes' limits and
scales, :func:`figure_digest`); ``--check-digests FILE`` recomputes them and fails on any
difference, so a faster drawing is shown to plot the same numbers bit for bit
(``bench/bench_notebook02_digests.json`` holds those of the notebook before its redraw was
made incremental).

Results: ``bench/bench_notebook02_redraw.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the notebook's first cell sets it

import argparse  # noqa: E402
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

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


def figure_digest(fig) -> str:
    """SHA-256 of what ``fig`` plots, independent of how it was built or rendered: per axes
    its scales, limits, labels and title, every line's data and style, every collection's
    paths and colours, every annotation; then the legend's entries and the suptitle."""
    h = hashlib.sha256()

    def add(*items: object) -> None:
        for item in items:
            if isinstance(item, np.ndarray):
                h.update(repr((item.dtype.str, item.shape)).encode())
                h.update(np.ascontiguousarray(item).tobytes())
            else:
                h.update(repr(item).encode())

    for ax in fig.axes:
        add(ax.get_xscale(), ax.get_yscale(), ax.get_xlim(), ax.get_ylim(), ax.get_xlabel(),
            ax.get_ylabel(), ax.get_title())
        for line in ax.get_lines():
            add(np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float),
                line.get_color(), line.get_linestyle(), line.get_linewidth(), line.get_marker(),
                line.get_label() if not line.get_label().startswith("_") else "")
        for coll in ax.collections:
            add(coll.get_facecolor(), *(p.vertices for p in coll.get_paths()))
        for text in ax.texts:
            add(text.get_text(), getattr(text, "xy", None), text.get_position())
    for legend in fig.legends:
        add([t.get_text() for t in legend.get_texts()])
    add(fig._suptitle.get_text() if fig._suptitle is not None else None)
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--theorems", type=int, default=0,
                    help="time only the first N live theorems (0: all)")
    ap.add_argument("--write-digests", type=Path, metavar="FILE",
                    help="write a SHA-256 of each step's plotted data to FILE (JSON)")
    ap.add_argument("--check-digests", type=Path, metavar="FILE",
                    help="compare each step's plotted data with FILE's digests; exit 1 on a "
                         "difference")
    args = ap.parse_args()
    for name in ("write_digests", "check_digests"):  # relative to where it was started
        if getattr(args, name) is not None:
            setattr(args, name, getattr(args, name).resolve())
    os.chdir(NOTEBOOK.parent)  # the notebook runs in notebooks/
    sys.path.insert(0, str(NOTEBOOK.parents[1]))
    code = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
            if c.cell_type == "code"]

    ns: dict = {}
    rows: list[tuple[str, float, float]] = []
    digests: dict[str, str] = {}
    shown: list = []  # the figure each step drew (for its digest)

    def show(*_a: object, **_k: object) -> None:
        # what the inline backend does per figure: IPython's print_figure (PNG at the figure's
        # dpi, bbox "tight": the figure is drawn twice), then the figure is closed
        shown.append(plt.gcf())
        print_figure(plt.gcf(), "png")
        plt.close("all")

    def display(obj: object, *_a: object, **_k: object) -> None:
        # a notebook that renders its own PNG displays an IPython Image: fetch its bytes, as
        # the inline display does; its figure is the one the notebook keeps (``FIGURE``)
        if hasattr(obj, "_repr_png_"):
            obj._repr_png_()
            shown.append(ns["FIGURE"]["fig"])
        else:
            print(obj)

    def timed(label: str, fn) -> None:
        t0, w0 = time.process_time(), time.perf_counter()
        shown.clear()
        with contextlib.redirect_stdout(io.StringIO()):
            fn()
        rows.append((label, time.process_time() - t0, time.perf_counter() - w0))
        if shown:  # digest outside the timed span
            digests[label] = figure_digest(shown[-1])
        print(f"{label:<58} cpu {rows[-1][1]:6.2f} s  wall {rows[-1][2]:6.2f} s", flush=True)

    setup = "\n".join(line for line in code[0].splitlines() if not line.startswith("%"))
    cell = code[1][: code[1].rfind("\ndraw(")]  # the definitions, without the calls
    timed("import cell (setup + registry listing)", lambda: exec(setup, ns))
    plt.show = show  # after the setup cell (it imports pyplot and styles it)
    ns["display"] = display
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
    if args.write_digests:
        args.write_digests.write_text(json.dumps(digests, indent=1) + "\n")
    if args.check_digests:
        want = json.loads(args.check_digests.read_text())
        bad = [k for k in want if digests.get(k) != want[k]]
        print(f"plotted data: {len(want) - len(bad)} of {len(want)} steps bit-identical to "
              f"{args.check_digests.name}" + (f"; DIFFERENT: {bad}" if bad else ""))
        if bad:
            sys.exit(1)


if __name__ == "__main__":
    main()
