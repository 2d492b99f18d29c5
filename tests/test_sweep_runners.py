"""The runners on the sweep engine: ``python -m paper_figs`` and ``python -m sims`` options,
resume from the store, and the engine's docstring examples."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

import sims.__main__ as sims_main
from dpbounds import _progress as progress
from dpbounds.sweep import cells, engine, options, store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def figs_main() -> types.ModuleType:
    """``paper_figs.__main__``, imported by the test that uses it: it imports
    matplotlib.pyplot, seconds of every collection (and every xdist worker's) otherwise."""
    return importlib.import_module("paper_figs.__main__")


@pytest.mark.parametrize("module", [cells, engine, options, progress, store,
                                    importlib.import_module("dpbounds.sweep")])
def test_docstring_examples_run(module: types.ModuleType) -> None:
    failed, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failed == 0


@pytest.mark.parametrize("prog", ["paper_figs", "sims"])
def test_only_without_names_is_an_error(prog: str) -> None:
    # it used to run everything silently
    out = subprocess.run([sys.executable, "-m", prog, "--only"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "expected at least one argument" in out.stderr


def test_paper_figs_passes_options_through(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           figs_main: types.ModuleType) -> None:
    seen: dict[str, list[str]] = {}

    def fake(name: str) -> types.SimpleNamespace:
        short = name.rsplit(".", 1)[1]
        return types.SimpleNamespace(main=lambda argv: seen.setdefault(short, list(argv)))

    monkeypatch.setattr(figs_main.importlib, "import_module", fake)
    assert figs_main.main(["--paper", "--seed", "7", "--only", "kuru_fig3", "yang_nsgd",
                           "--out", str(tmp_path), "--workers", "3", "--fresh", "--quiet"]) == 0
    assert list(seen) == ["kuru_fig3", "yang_nsgd"]
    argv = seen["kuru_fig3"]
    assert argv[argv.index("--seed") + 1] == "7" and "--paper" in argv
    assert argv[argv.index("--workers") + 1] == "3" and "--fresh" in argv and "--quiet" in argv
    assert argv[argv.index("--store") + 1] == str(tmp_path / "store")
    seen.clear()
    figs_main.main(["--only", "kuru_fig1", "--out", str(tmp_path)])
    assert "--seed" not in seen["kuru_fig1"] and "--paper" not in seen["kuru_fig1"]


def test_every_figure_script_accepts_the_runner_options() -> None:
    from paper_figs import SCRIPTS
    from paper_figs._common import parse_args

    args = parse_args(["--paper", "--seed", "3", "--workers", "2", "--out", "x"], "d")
    assert args.paper and args.seed == 3 and args.store == Path("x") / "store"
    assert not args.inline and parse_args(["--quick"], "d").inline  # smoke runs in-process
    assert not parse_args(["--quick", "--workers", "2"], "d").inline
    assert not parse_args(["--quick", "--dask"], "d").inline
    with pytest.raises(SystemExit):
        parse_args(["--paper", "--quick"], "d")  # exclusive
    for name in SCRIPTS:
        src = (ROOT / "paper_figs" / f"{name}.py").read_text()
        assert "parse_args(argv" in src, f"{name} does not use the shared options"


def test_sims_reuses_stored_studies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--only", "tree_noise", "--inline", "--store", str(tmp_path), "--quiet"]
    assert sims_main.main(argv) == 0
    first = capsys.readouterr().out
    assert "(1 computed, 0 reused)" in first and "36/36 verdicts hold" in first
    assert sims_main.main(argv) == 0
    second = capsys.readouterr().out
    assert "(0 computed, 1 reused)" in second and "reused from the store" in second
    # the verdict table read back from the store is the computed one, digit for digit
    assert verdict_table(first) == verdict_table(second) and "α=0.05" in verdict_table(first)


def verdict_table(output: str) -> str:
    """The table under the first ``== study`` header line."""
    block = output.split("\n== ", 1)[1]
    return block.split("\n", 1)[1].rsplit("\n\n", 1)[0]
