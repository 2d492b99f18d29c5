"""Shared plumbing of the paper-figure scripts: arguments, output folder, sweeps, PNG/PDF + CSV.

Every script is a module with ``main(argv=None) -> list[Path]`` (the files it wrote). It
accepts ``--quick`` (tiny trials / horizons, seconds; used by the tests), ``--paper`` (the
paper's full setting where the default is reduced), ``--out DIR`` (default ``paper_figs/out``),
``--seed`` and the sweep options of :func:`dpbounds.sweep.add_sweep_arguments` (``--workers``,
``--dask``, ``--scheduler``, ``--store`` — default ``OUT/store`` —, ``--fresh``, ``--quiet``).

The expensive part of a script is a grid of cells run by :meth:`FigureRun.sweep`: each finished
cell is stored, so a killed run resumes where it stopped and a re-run only redraws. Plots use
the Agg backend (no display needed) and the shared style of :mod:`paper_figs._style`; every
figure is saved as a PNG (>= 200 dpi) and a vector PDF with its provenance caption under the
axes. Error bars are Student-t intervals (:func:`mean_ci`), and the captions say so.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dpbounds.intervals import student_t_interval as mean_ci  # noqa: E402 - the one t interval
from dpbounds.sweep import Cell, SweepOptions, SweepResult, add_sweep_arguments  # noqa: E402
from paper_figs import _style  # noqa: E402

__all__ = ["CI_LABEL", "DEFAULT_OUT", "GALLERY_ALIASES", "Cell", "FigureRun",
           "add_figure_arguments", "figure_stems",
           "copy_gallery", "mean_ci", "parse_args", "plt", "settle_args",
           "shared_sweep_options", "style"]

style = _style
style.apply()

#: How the error bars of :func:`mean_ci` are described in legends and captions.
CI_LABEL = "95% Student-t interval of the mean (n−1 dof)"

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


# Set by ``python -m paper_figs`` so that all scripts share one worker pool / Dask cluster
# (each pool costs ~2 s of imports per worker).
_SHARED: SweepOptions | None = None


@contextlib.contextmanager
def shared_sweep_options(options: SweepOptions) -> Iterator[SweepOptions]:
    """Make every :meth:`FigureRun.from_args` in the block use ``options`` (and its executor,
    started once and closed at the end)."""
    global _SHARED
    previous, _SHARED = _SHARED, options
    try:
        with options:
            yield options
    finally:
        _SHARED = previous


def add_figure_arguments(p: argparse.ArgumentParser) -> None:
    """``--quick``, ``--paper``, ``--out`` and the sweep options (``python -m paper_figs``
    adds the same, so that it can pass them through)."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="tiny trials/horizons (seconds; in this process unless --workers, "
                           "--dask or --scheduler is given); the default is the full setting")
    mode.add_argument("--paper", action="store_true",
                      help="the paper's full setting where the default is reduced (slow)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    p.add_argument("--bare", action="store_true",
                   help="images without the provenance caption and the title (for a paper's "
                        "own caption; the caption is still written to OUT/captions.json)")
    add_sweep_arguments(p, store=None, store_note="OUT/store")


def settle_args(args: argparse.Namespace) -> argparse.Namespace:
    """Defaults that depend on other options: the store is ``OUT/store``; ``--quick`` runs in
    this process unless an executor is named (its cells take milliseconds, while each worker
    process spends seconds importing NumPy, SciPy, SymPy and dpbounds)."""
    if args.store is None:
        args.store = Path(args.out) / "store"
    if args.quick and args.workers is None and not (args.dask or args.scheduler):
        args.inline = True
    return args


def parse_args(argv: Sequence[str] | None, description: str,
               seed: int = 20221) -> argparse.Namespace:
    """The options of one figure script; ``seed`` is its default master seed."""
    p = argparse.ArgumentParser(description=description)
    add_figure_arguments(p)
    p.add_argument("--seed", type=int, default=seed, help="master seed (default: %(default)s)")
    return settle_args(p.parse_args(list(argv) if argv is not None else None))


@dataclass
class FigureRun:
    """Output helper of one script run: knows the folder, the file stem and what was written."""

    name: str
    out: Path
    quick: bool = False
    options: SweepOptions = field(default_factory=SweepOptions)
    bare: bool = False
    written: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_args(cls, name: str, args: argparse.Namespace) -> FigureRun:
        return cls(name, args.out, args.quick, _SHARED or SweepOptions.from_args(args),
                   bare=bool(getattr(args, "bare", False)))

    def sweep(self, cells: Sequence[Cell]) -> SweepResult:
        """Run ``cells`` with the script's sweep options (stored cells are reused)."""
        result = self.options.run(cells, desc=self.name)
        if result.reused and self.options.store is not None:
            print(f"[{self.name}] {result.reused} of {result.reused + result.computed} cells "
                  f"reused from {self.options.store.path}")
        return result

    def path(self, suffix: str, tag: str = "") -> Path:
        """``OUT/<name>[_<tag>]<suffix>``; a tag listed in :data:`GALLERY_ALIASES` for this
        script is the whole stem (``kuru_fig3`` writes Fig. 4 as ``kuru_fig4.png``)."""
        stem = tag if tag in GALLERY_ALIASES.get(self.name, ()) else \
            self.name + (f"_{tag}" if tag else "")
        return self.out / f"{stem}{suffix}"

    def save_figure(self, fig: Any, caption: str, tag: str = "") -> Path:
        """Save ``fig`` as PNG (:data:`_style.PNG_DPI`) and PDF, with the provenance
        ``caption`` wrapped to the figure's width under everything else; returns the PNG.

        The caption hangs below the figure's bottom edge and the tight bounding box grows to
        take it in, so it never overlaps the axes whatever the layout.
        """
        width = fig.get_size_inches()[0]
        if self.bare:  # a paper's own caption (walkthrough of stop 80: baked into both files)
            if getattr(fig, "_suptitle", None) is not None:
                fig._suptitle.set_visible(False)
        else:
            fig.text(0.01, 0.0, style.wrap_caption(caption, width * 0.98), ha="left",
                     va="top", fontsize=style.CAPTION_PT, color="0.25", linespacing=1.25)
        bbox = tight_bbox(fig, pad_inches=0.04)
        paths = []
        for fmt in style.FORMATS:
            path = self.path(f".{fmt}", tag)
            fig.savefig(path, dpi=style.PNG_DPI, bbox_inches=bbox,
                        metadata=_metadata(fmt, self.name))
            paths.append(path)
        plt.close(fig)
        self.written.extend(paths)
        _update_captions(self.out / CAPTIONS, {paths[0].name: caption})
        return paths[0]

    def write_csv(self, rows: Iterable[dict[str, Any]], tag: str = "") -> Path:
        """Write a list of dict rows (the plotted numbers) as CSV."""
        rows = list(rows)
        path = self.path(".csv", tag)
        keys: list[str] = []
        for r in rows:
            keys.extend(k for k in r if k not in keys)
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: _fmt(r.get(k, "")) for k in keys})
        self.written.append(path)
        return path

    def done(self) -> list[Path]:
        print(f"[{self.name}] wrote {len(self.written)} files to {self.out} "
              f"in {time.perf_counter() - self.started:.1f} s")
        return self.written


def tight_bbox(fig: Any, pad_inches: float) -> Any:
    """The tight bounding box (inches) of ``fig`` at the PNG's dpi, padded by ``pad_inches``.

    What ``savefig(bbox_inches="tight")`` computes, but once for all formats and without a
    draw: savefig draws the whole figure once more per format to find the box (the PDF's pass
    at 72 dpi lays out and parses every mathtext label again), while ``get_tightbbox`` lays out
    the ticks, titles and legends it measures itself (the same box on every paper figure).
    The figure is at the PNG's dpi already (``figure.dpi`` of the style), so the text extents
    measured by ``tight_layout`` are reused from the canvas renderer's cache.
    """
    fig.set_dpi(style.PNG_DPI)
    return fig.get_tightbbox(fig.canvas.get_renderer()).padded(pad_inches)


#: Scripts that write a figure under another file stem than their own name (the paper's figure
#: number), so that the file says which figure it is.
GALLERY_ALIASES: dict[str, tuple[str, ...]] = {"kuru_fig3": ("kuru_fig4",)}


def figure_stems(name: str) -> tuple[str, ...]:
    """The file stems script ``name`` writes its figures under: its name and its aliases."""
    return (name, *GALLERY_ALIASES.get(name, ()))


def copy_gallery(out: Path, gallery: Path, names: Iterable[str]) -> list[Path]:
    """Copy each ``out/<name>*.png`` of the figure scripts ``names`` into ``gallery`` (same
    file names: ``<script>.png``, ``<script>_<tag>.png``) and merge their captions into
    ``gallery/captions.json`` (file name -> caption paragraph); returns the copies."""
    out, gallery = Path(out), Path(gallery)
    gallery.mkdir(parents=True, exist_ok=True)
    known = _read_captions(out / CAPTIONS)
    copies, captions = [], {}
    for name in (stem for script in names for stem in figure_stems(script)):
        for png in sorted(out.glob(f"{name}*.png")):
            if png.stem == name or png.stem.startswith(name + "_"):
                copies.append(_gallery_copy(png, gallery / png.name))
                if png.name in known:
                    captions[png.name] = known[png.name]
    _update_captions(gallery / CAPTIONS, captions)
    return copies


#: Largest gallery PNG (bytes); bigger ones are stored with a 256-colour palette (same pixels
#: and dpi, lines and text stay sharp), which is what a web page needs.
GALLERY_MAX_BYTES = 250_000


def _gallery_copy(src: Path, dst: Path) -> Path:
    shutil.copy2(src, dst)
    if dst.stat().st_size > GALLERY_MAX_BYTES:
        from PIL import Image  # Pillow is a dependency of matplotlib

        with Image.open(src) as im:
            dpi = im.info.get("dpi", (style.PNG_DPI, style.PNG_DPI))
            im.convert("RGB").quantize(256).save(dst, optimize=True, dpi=dpi)
    return dst


#: File, in the output folder and in a gallery, mapping each PNG's name to its caption.
CAPTIONS = "captions.json"


def _read_captions(path: Path) -> dict[str, str]:
    return json.loads(path.read_text()) if path.exists() else {}


def _update_captions(path: Path, new: dict[str, str]) -> None:
    captions = _read_captions(path) | new
    path.write_text(json.dumps(dict(sorted(captions.items())), indent=1, ensure_ascii=False)
                    + "\n")


def _metadata(fmt: str, name: str) -> dict[str, str]:
    # no creation date in the PDF: regenerating a figure gives the same bytes
    if fmt == "pdf":
        return {"Title": name, "Creator": "dpbounds paper_figs", "CreationDate": None}
    return {"Title": name, "Software": "dpbounds paper_figs"}


def _fmt(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return f"{float(v):.10g}"
    return v
