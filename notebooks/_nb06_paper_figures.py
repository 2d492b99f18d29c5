"""Cells of ``notebooks/06_paper_figures.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# The papers' figures, regenerated

Each script of `paper_figs/` (one per paper figure or table) is a module with
`main(argv) -> list[Path]`; here they run in `--quick` mode (tiny trials and horizons, seconds
each) into a temporary folder and their PNGs are shown inline, downscaled. Every figure's
caption states its provenance (VERBATIM settings vs DERIVED constants). The full-size figures:
`python -m paper_figs` (minutes), `--paper` for the papers' full grids; see
`paper_figs/README.md`.

To keep the executed notebook cheap, only the fast scripts run by default; set `RUN_ALL = True`
to regenerate all of them (about 30 s on 2 cores)."""),
    new_code_cell(SETUP + """
import io
import shutil
import sys
import tempfile
import time
from pathlib import Path
from IPython.display import Image, display
from PIL import Image as PILImage

ROOT = Path.cwd().parent  # the notebook runs in notebooks/
sys.path.insert(0, str(ROOT))
from paper_figs import SCRIPTS

RUN_ALL = False
FAST = ("kuru_fig2", "tran_cutkosky_bounds", "lee_kifer_table1", "kuru_fig3")
OUT = Path(tempfile.mkdtemp(prefix="paper_figs_"))
print("scripts:", ", ".join(SCRIPTS))"""),
    new_code_cell("""\
def run(name, width=800):
    \"\"\"Run one paper_figs script in --quick mode and show its PNG at ``width`` pixels.\"\"\"
    import importlib
    t0 = time.perf_counter()
    files = importlib.import_module(f"paper_figs.{name}").main(
        ["--quick", "--out", str(OUT), "--quiet", "--no-store"])
    png = next(p for p in files if p.suffix == ".png")
    img = PILImage.open(png)
    img.thumbnail((width, width))
    buf = io.BytesIO()
    img.convert("RGB").quantize(colors=128).save(buf, format="PNG", optimize=True)  # small file
    print(f"{name}: {time.perf_counter() - t0:.1f} s, {', '.join(p.name for p in files)}")
    display(Image(data=buf.getvalue()))"""),
    new_markdown_cell("""\
## Kuru et al. Fig. 2: optimal vs uniform noise allocation (DP-NAG / DP-MASG)
See also `05_noise_allocation.ipynb` for the interactive version."""),
    new_code_cell("run('kuru_fig2')"),
    new_markdown_cell("""\
## Tran & Cutkosky: both utility bounds and the gradient counts vs N (DERIVED constants)
See also `02_bounds_explorer.ipynb`."""),
    new_code_cell("run('tran_cutkosky_bounds')"),
    new_markdown_cell("## Lee & Kifer Table 1: noisy GD on Adult, published vs reproduced"),
    new_code_cell("run('lee_kifer_table1')"),
    new_markdown_cell("## Kuru et al. Figs. 3–4: DP-GD, DP-HB, DP-NAG(-opt), DP-MASG(-opt) (toy size)"),
    new_code_cell("run('kuru_fig3')"),
    new_markdown_cell("## The other scripts (set `RUN_ALL = True` above)"),
    new_code_cell("""\
rest = [name for name in SCRIPTS if name not in FAST]
if RUN_ALL:
    for name in rest:
        run(name)
else:
    print("skipped (RUN_ALL = False):", ", ".join(rest))
shutil.rmtree(OUT)  # the PNGs are shown above; the CSVs stay with python -m paper_figs"""),
]
