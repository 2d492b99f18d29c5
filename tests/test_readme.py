"""The README is executable documentation: every snippet in it runs here.

- each ```python block is executed (in order, sharing one namespace);
- each line of a ```console block that starts with ``$ dpbounds`` is run through the CLI
  entry point and must exit 0;
- the two opening commands are the ones CI runs.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from dpbounds.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _command_after(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```bash\n(.*?)\n```", README, flags=re.S)
    assert match, f"README has no command after <!-- {marker} -->"
    return match.group(1).strip()


def test_readme_opens_with_the_two_commands() -> None:
    main_cmd = _command_after("main-command")
    test_cmd = _command_after("test-command")
    assert "python3 -m venv" in main_cmd and "dpbounds demo" in main_cmd
    assert "python3 -m venv" in test_cmd and "pytest" in test_cmd
    assert README.index("main-command") < README.index("test-command") < README.index("```python")


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in ci  # CI reads the command out of the README itself


def test_python_snippets_run(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _blocks("python")
    assert blocks, "README has no python snippets"
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"README python block {i} failed: {exc!r}\n{block}")


CLI_LINES = [
    line[2:].strip()
    for block in _blocks("console")
    for line in block.splitlines()
    if line.startswith("$ dpbounds")
]


@pytest.mark.parametrize("line", CLI_LINES)
def test_cli_snippets_run(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(line)[1:]
    assert main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip(), f"`{line}` printed nothing"


CHECKOUT_ONLY = ("paper_figs", "sims", "notebooks", "bench", "docs")


def _checkout_imports(source: str) -> list[str]:
    """Imports of a checkout-only tree (absent from the wheel) in ``source``."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [n for n in names if n.split(".")[0] in CHECKOUT_ONLY]
    return found


def test_wheel_commands_need_no_checkout() -> None:
    """The README says the wheel holds ``dpbounds`` only and which commands work from it: the
    wheel target packages just ``dpbounds``, no module of it imports a checkout-only tree, and the
    README names exactly the CLI's commands."""
    import tomllib

    from dpbounds.cli import _COMMANDS

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["dpbounds"]
    assert _checkout_imports("import paper_figs._style\nfrom sims import x\n") == [
        "paper_figs._style", "sims"]  # control: the scan sees both import forms
    for path in (ROOT / "dpbounds").rglob("*.py"):
        assert _checkout_imports(path.read_text(encoding="utf-8")) == [], path
    para = README[README.index("**What needs a source checkout.**"):]
    para = para[:para.index("\n\n")]
    listed = re.findall(r"`(\w+)`", para[:para.index("work from")])
    assert set(listed) - {"dpbounds"} == set(_COMMANDS)
