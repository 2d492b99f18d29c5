"""The notebooks: committed with fresh outputs, and every one runs top to bottom (nbclient).

``notebooks/_build.py`` builds each notebook from its cell module ``notebooks/_nbXX_*.py``,
executes it and stores the hash of the cell sources in its metadata. The freshness tests rebuild
the sources (without executing) and compare them with the committed notebooks, so editing a
cell module without rebuilding fails here. The execution test runs every notebook with
ipywidgets hidden: the static figures must not depend on it (CI installs the ``dev`` extra,
without ipywidgets).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import re
import resource
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

# nbformat (and the build script, which imports it) load on first use, not at collection
# (tests/test_collection_imports.py); nbclient and ipykernel (a second of imports) are imported by
# the execution test only
pytestmark = pytest.mark.skipif(importlib.util.find_spec("nbformat") is None,
                                reason="needs nbformat (the dev extra)")

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "notebooks"
NOTEBOOKS = sorted(HERE.glob("*.ipynb"))
#: the notebooks' names, the ids of the per-notebook tests: the build script's list (checked
#: equal in test_every_notebook_is_built_by_the_script) read without importing it
NAMES = [p.stem for p in NOTEBOOKS]


class _OnFirstUse:
    """A module loaded by ``load()`` at its first attribute access."""

    def __init__(self, load: Callable[[], ModuleType]) -> None:
        self._load = functools.cache(load)

    def __getattr__(self, name: str):
        return getattr(self._load(), name)


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_build", HERE / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbformat = _OnFirstUse(lambda: importlib.import_module("nbformat"))
build = _OnFirstUse(_build_module)


def test_every_notebook_is_built_by_the_script() -> None:
    assert NAMES == sorted(build.NOTEBOOKS)


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_fresh(name: str) -> None:
    committed = nbformat.read(HERE / f"{name}.ipynb", as_version=4)
    expected = build.build(name)
    assert committed.metadata["dpbounds"]["source_sha256"] == \
        expected.metadata["dpbounds"]["source_sha256"], \
        f"{name}: rebuild it (python notebooks/_build.py {name})"
    assert [(c.cell_type, c.source) for c in committed.cells] == \
        [(c.cell_type, c.source) for c in expected.cells], f"{name}: stale sources"
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), f"{name}: not executed"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), \
        f"{name}: not executed top to bottom in one kernel"
    for c in code:
        for out in c.outputs:
            assert out.output_type != "error", f"{name}: an error is committed"


@pytest.mark.parametrize("name", NAMES)
def test_committed_outputs_are_small(name: str) -> None:
    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata  # widget state is stripped
    assert path.stat().st_size < 1_000_000
    mimes = {k for c in nb.cells if c.cell_type == "code" for o in c.outputs
             for k in o.get("data", {})}
    assert build._WIDGET_MIME not in mimes
    if name != "04_verify_bounds":  # 04 prints tables; every other notebook has plots
        assert "image/png" in mimes


def test_strip_widgets_replaces_views() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("draw()\ninteract(draw)"),
                                         nbformat.v4.new_code_cell("run()")])
    nb.metadata["widgets"] = {"state": {}}
    for cell in nb.cells:  # controls in the first cell, a progress bar in the second
        cell.outputs = [nbformat.v4.new_output(
            "display_data", data={build._WIDGET_MIME: {"model_id": "a"}, "text/plain": "w"})]
    build.strip_widgets(nb)
    assert "widgets" not in nb.metadata
    assert [o.text for o in nb.cells[0].outputs] == [build.WIDGET_NOTE]
    assert nb.cells[1].outputs == []


def test_widget_errors_are_found() -> None:
    """An exception inside an interact callback lives in the widget state only; the build
    script must see it (negative control: a state without errors)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {"m": {"outputs": [{"output_type": "stream"}]}}}
    assert build.widget_errors(nb) == []
    nb.metadata["widgets"]["state"]["m"]["outputs"].append(
        {"output_type": "error", "ename": "ValueError", "evalue": "boom"})
    assert "boom" in build.widget_errors(nb)[0]


@pytest.fixture(scope="module")
def no_ipywidgets(tmp_path_factory: pytest.TempPathFactory):
    """A PYTHONPATH entry under which ``import ipywidgets`` fails (the kernel inherits it)."""
    block = tmp_path_factory.mktemp("block") / "ipywidgets"
    block.mkdir()
    (block / "__init__.py").write_text("raise ImportError('ipywidgets hidden by the test')\n")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(block.parent), str(ROOT)] + ([old] if old else []))
    yield
    if old is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


#: seconds one cell may run before nbclient interrupts it (a hung kernel fails, never blocks)
CELL_TIMEOUT = 240


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's reaped children, e.g. a finished kernel."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_without_ipywidgets(path: Path, no_ipywidgets: None,
                                              record_property) -> None:
    """Runs under a per-cell timeout; the kernel's CPU time is recorded (junit property
    ``kernel_cpu_s``, and printed with ``-s``)."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(path, as_version=4)
    committed = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, startup_timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(HERE)}}).execute()
    cpu = _children_cpu() - cpu0  # the kernel is shut down and reaped by execute()
    record_property("kernel_cpu_s", round(cpu, 2))
    print(f"{path.name}: kernel CPU {cpu:.1f} s, wall {time.perf_counter() - wall0:.1f} s")
    texts = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "image/png" in o.get("data", {})]
    if re.search(r"^interact\(", "\n".join(c.source for c in nb.cells), re.MULTILINE):
        assert any("ipywidgets not installed" in t for t in texts)
    if path.stem != "04_verify_bounds":
        assert pngs  # the static figures remain
    if path.stem == "03_tuning_heavy_ball":
        # the committed tuned row is today's function's (tests/test_demo.py compares the demo's
        # CLI row with the committed one): a stale notebook fails here
        assert _tuned_rows(texts) == _tuned_rows(committed) != []


def _tuned_rows(texts: list[str]) -> list[str]:
    return [line for t in texts for line in t.splitlines() if line.startswith("tuned ")]
