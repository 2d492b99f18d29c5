"""Build, execute and write the example notebooks: ``python notebooks/_build.py [NAME ...]``.

Each notebook's cells are defined in ``notebooks/_nbXX_<name>.py`` (a list ``CELLS`` of nbformat
cells); this script assembles them, executes them top to bottom with nbclient and writes them
**with their outputs**, so they read well on a code host. Before writing it

* drops the widget state (``metadata.widgets``) and replaces the widget view of each
  ``interact(...)`` by one line of text (the controls only work in a live kernel, and their
  state would bloat the file); other widget views (tqdm's progress bars) are dropped;
* refuses to write a notebook where a widget callback raised (:func:`widget_errors`);
* stores the SHA-256 of the cell sources in ``metadata.dpbounds.source_sha256``.

``tests/test_notebooks.py`` recomputes the sources from the cell modules (without executing) and
compares them with the committed notebooks: edit a ``_nbXX_*.py`` without rebuilding and the
test fails. It also executes every notebook with ipywidgets hidden (the static figures must
remain). Without NAME every notebook is rebuilt; the execution times are printed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook, new_output

HERE = Path(__file__).resolve().parent

#: every notebook, in reading order; the cells of ``NAME`` live in ``_nb{NAME}.py``
NOTEBOOKS = (
    "01_privacy_accounting",
    "02_bounds_explorer",
    "03_tuning_heavy_ball",
    "04_verify_bounds",
    "05_noise_allocation",
    "06_paper_figures",
    "07_your_own_method",
)

#: the text that replaces a widget view in the written notebook
WIDGET_NOTE = "[interactive controls: run this notebook in Jupyter with ipywidgets installed]\n"
_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def cells(name: str) -> list:
    """The cells of notebook ``name`` from its module (fresh objects on every call)."""
    if name not in NOTEBOOKS:
        raise ValueError(f"unknown notebook {name!r}; valid: {', '.join(NOTEBOOKS)}")
    if str(HERE) not in sys.path:  # the cell modules import _nbcommon
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(f"_nb{name}", HERE / f"_nb{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CELLS


def source_hash(nb_cells: list) -> str:
    """SHA-256 of the cells' types and sources (what the freshness test compares)."""
    payload = [(c["cell_type"], c["source"]) for c in nb_cells]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def build(name: str) -> nbformat.NotebookNode:
    """The unexecuted notebook ``name`` with its kernel spec and source hash."""
    nb_cells = cells(name)
    nb = new_notebook(cells=nb_cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "dpbounds": {"source_sha256": source_hash(nb_cells),
                     "built_by": "notebooks/_build.py"}})
    nbformat.validate(nb)
    return nb


def widget_errors(nb: nbformat.NotebookNode) -> list[str]:
    """Errors raised inside widget callbacks (``interact``) during execution: nbclient records
    them in the widget state, not as cell errors, so they are looked for here."""
    state = json.dumps(nb.metadata.get("widgets", {}))
    return [m for m in state.split('"output_type": "error"')[1:]][:3]


def strip_widgets(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove the widget state and replace widget views by :data:`WIDGET_NOTE` (in place)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        # the controls of an interact(...) line become the note; other widgets (tqdm's
        # notebook progress bars) are dropped
        controls = re.search(r"^interact\(", cell.source, re.MULTILINE) is not None
        outputs = []
        for out in cell.get("outputs", []):
            if _WIDGET_MIME in out.get("data", {}):
                if not controls:
                    continue
                out = new_output("stream", name="stdout", text=WIDGET_NOTE)
            outputs.append(out)
        cell.outputs = outputs
    return nb


def execute(nb: nbformat.NotebookNode, timeout: int = 600) -> nbformat.NotebookNode:
    """Run every cell in ``notebooks/`` (in place; no per-cell timing metadata)."""
    import nbclient

    nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(HERE)}}).execute()
    return nb


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(NOTEBOOKS)
    for name in names:
        t0 = time.perf_counter()
        nb = execute(build(name))
        errors = widget_errors(nb)
        if errors:
            raise RuntimeError(f"{name}: a widget callback failed: {errors[0][:2000]}")
        nb = strip_widgets(nb)
        path = HERE / f"{name}.ipynb"
        nbformat.write(nb, path)
        print(f"{path.name}: {time.perf_counter() - t0:.1f} s, {path.stat().st_size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
