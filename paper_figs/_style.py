r"""One look for every paper figure: sizes, fonts, mathtext, output formats.

Sizes are for a two-column paper: :data:`SINGLE` (3.3 in) for one-panel figures set in one
column, :data:`DOUBLE` (6.9 in) for multi-panel figures across the page. At those widths the
fonts below print at their nominal size: 8 pt tick labels, axis labels and legends, 7 pt
provenance captions. Symbols are mathtext (``$\varepsilon$``, ``$F(x_t)-F^\ast$``) in the STIX
fonts, so they match a LaTeX paper set in Times; :func:`sym` reads them from
:data:`dpbounds.notation.SYMBOL_LATEX` where the notation table has them.

Every figure is written twice (:data:`FORMATS`): a PNG at :data:`PNG_DPI` (>= 200) and a vector
PDF with embedded TrueType fonts (``pdf.fonttype = 42``, editable text in Illustrator/Inkscape).

The module is private (leading underscore) because ``python -m paper_figs`` runs every public
module of the package as a figure script.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib as mpl

from dpbounds.notation import SYMBOL_LATEX

__all__ = ["DOUBLE", "FORMATS", "NOTEBOOK_DPI", "PNG_DPI", "SINGLE", "T_COLORS", "apply",
           "notebook", "sci", "size", "sym", "wrap_caption"]

#: Figure widths in inches: one column, and the full page of a two-column paper.
SINGLE, DOUBLE = 3.3, 6.9
#: Resolution of the PNG files (the PDF is vector).
PNG_DPI = 200
#: File formats written for every figure, in this order.
FORMATS = ("png", "pdf")
#: Caption font size (pt) and the average glyph width of the font in ems (for line wrapping).
CAPTION_PT, _EM_PER_CHAR = 7.0, 0.5
#: Horizon colours of Kuru et al.'s Figs. 3-4 (the text calls the T = 1000 trace "red").
T_COLORS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#d62728")

RC: dict[str, Any] = {
    "font.family": "STIXGeneral",
    "mathtext.fontset": "stix",
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "figure.titlesize": 9.5,
    "legend.framealpha": 0.85,
    "legend.handlelength": 1.8,
    "legend.borderaxespad": 0.4,
    "axes.linewidth": 0.6,
    "axes.grid": True,
    "grid.linewidth": 0.4,
    "grid.alpha": 0.35,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.5,
    "errorbar.capsize": 2.0,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.minor.width": 0.4,
    "ytick.minor.width": 0.4,
    "figure.dpi": PNG_DPI,
    "savefig.dpi": PNG_DPI,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.03,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
}


def apply() -> None:
    """Set the shared style on matplotlib's global ``rcParams`` (idempotent)."""
    mpl.rcParams.update(RC)


def size(width: float = DOUBLE, aspect: float = 0.75) -> tuple[float, float]:
    """``(width, width * aspect)`` in inches for ``figsize``."""
    return (width, width * aspect)


def sym(name: str) -> str:
    r"""Mathtext of symbol ``name`` from the notation table (``sym("eps")`` -> ``$\epsilon$``),
    or ``$name$`` when the table has no entry."""
    return f"${SYMBOL_LATEX.get(name, name)}$"


def wrap_caption(text: str, width_in: float) -> str:
    """``text`` broken into lines that fit ``width_in`` inches at :data:`CAPTION_PT`."""
    chars = max(30, int(width_in * 72.0 / (CAPTION_PT * _EM_PER_CHAR)))
    return "\n".join(textwrap.wrap(text, chars))


def sci(x: float) -> str:
    r"""Mathtext of ``x`` as a power of ten where it is one (``1e-4`` -> ``10^{-4}``), else
    ``:g`` (no dollar signs: for use inside a ``$...$`` label)."""
    if x > 0:
        e = round(math.log10(x))
        if math.isclose(x, 10.0**e, rel_tol=1e-12) and abs(e) >= 2:
            return f"10^{{{e}}}"
    return f"{x:g}"


#: Inline resolution of notebook figures (dpi): the shared style, sharp on a high-DPI screen.
NOTEBOOK_DPI = 150


def notebook(dpi: int = NOTEBOOK_DPI) -> None:
    """The shared style for notebook figures: :func:`apply`, inline PNGs at ``dpi``, a default
    size of :data:`DOUBLE` width (so the 8 pt fonts read as in the paper figures).

    Call it after ``%matplotlib inline`` (the inline backend resets ``figure.dpi`` to 72 when
    it is activated).
    """
    if dpi < 150:
        raise ValueError(f"dpi must be >= 150 (the shared figure style), got {dpi}")
    apply()
    mpl.rcParams.update({"figure.dpi": dpi, "figure.figsize": size(DOUBLE, 0.42),
                         "figure.constrained_layout.use": False})
