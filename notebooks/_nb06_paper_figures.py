"""Cells of ``notebooks/06_paper_figures.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import STYLED_SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# The papers' figures, regenerated

Each script of `paper_figs/` (one per paper figure or table) is a module with
`main(argv) -> list[Path]`. The figures below are the **full-setting** ones of the docs
gallery (`docs/gallery/`, written by `python -m paper_figs --gallery docs/gallery`; `--paper`
for the papers' full grids; see `paper_figs/README.md`), shown with their captions, which
state each figure's provenance (VERBATIM settings vs DERIVED constants) and error bars. Nothing
is recomputed here. Only where a gallery image is missing does the script run in `--quick` mode
(tiny trials and horizons, seconds; the caption then says so): a quick figure does not show
what the paper's does."""),
    new_code_cell(STYLED_SETUP + """
import io
import json
import tempfile
from IPython.display import Image, Markdown
from PIL import Image as PILImage

ROOT = Path.cwd().parent  # the notebook runs in notebooks/
from paper_figs import SCRIPTS
from paper_figs._common import figure_stems

GALLERY = ROOT / "docs" / "gallery"
CAPTIONS = json.loads((GALLERY / "captions.json").read_text()) if GALLERY.is_dir() else {}
print("scripts:", ", ".join(SCRIPTS))"""),
    new_code_cell("""\
def small_png(path, width=820):
    \"\"\"``path`` downscaled to ``width`` pixels, 128 colours (keeps the notebook small).\"\"\"
    img = PILImage.open(path)
    img.thumbnail((width, 4 * width))
    buf = io.BytesIO()
    img.convert("RGB").quantize(colors=128).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def show(name):
    \"\"\"The gallery figure(s) of script ``name`` with their captions; a --quick run where the
    gallery has none.\"\"\"
    pngs = [p for stem in figure_stems(name) for p in sorted(GALLERY.glob(f"{stem}*.png"))
            if p.stem == stem or p.stem.startswith(stem + "_")]
    if not pngs:
        import importlib
        out = Path(tempfile.mkdtemp(prefix="paper_figs_"))
        files = importlib.import_module(f"paper_figs.{name}").main(
            ["--quick", "--out", str(out), "--quiet", "--no-store"])
        pngs = [p for p in files if p.suffix == ".png"]
        display(Markdown(f"*{name}: no gallery image; a --quick run (toy sizes) instead.*"))
    for png in pngs:
        display(Image(data=small_png(png)))
        display(Markdown(f"**{png.name}.** " + CAPTIONS.get(png.name, "(no caption stored)")))


for name in SCRIPTS:
    display(Markdown(f"## `{name}`"))
    show(name)"""),
]
