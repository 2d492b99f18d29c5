"""Write the generated docs: ``docs/notation.md`` (the notation table) and ``docs/results.md``
(each registered result with its source, algorithm, figure and test).

Run ``python docs/build_docs.py`` after changing :mod:`dpbounds.notation` or registering a bound;
``tests/test_notation.py`` fails while a committed file is stale. ``--check`` only compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def results_markdown() -> str:
    """``docs/results.md``: one row per registered result, read from the registry."""
    from dpbounds.bounds import registry

    lines = [
        "# Results: paper result -> object, algorithm, figure, test",
        "",
        "<!-- generated from the bound registry by docs/build_docs.py; do not edit -->",
        "",
        "Every bound is filed by problem class (`dpbounds/bounds/<class>/`); the paper appears "
        "only in its sources (below) and in this table. `dpbounds bound ID` evaluates one, "
        "`dpbounds compare` puts the bounds of a problem's class side by side.",
        "",
        "| id (aliases) | class | kind | label | paper result | algorithm | figure | test |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in registry.entries():
        alias = f" ({', '.join(f'`{a}`' for a in e.aliases)})" if e.aliases else ""
        src = e.tuned.sources[0]
        paper = src.paper.split(",")[0]
        kind = "numeric" if e.numeric else "symbolic"
        cells = [f"`{e.name}`{alias}", e.problem_class, kind, str(e.tuned.provenance),
                 f"{paper}: {src.result}", f"`{e.algorithm}`" if e.algorithm else "",
                 f"`{e.figure}`" if e.figure else "", f"`{e.test}`" if e.test else ""]
        lines.append("| " + " | ".join(c.replace("|", r"\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def documents() -> dict[Path, str]:
    """Every generated file and its content."""
    from dpbounds.notation import markdown

    return {HERE / "notation.md": markdown(), HERE / "results.md": results_markdown()}


def write_generated() -> None:
    """Write every generated page (called by ``docs/conf.py`` before each Sphinx build)."""
    for path, text in documents().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for path, text in documents().items():
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(path)
    if stale:
        print(f"stale: {', '.join(stale)} (run python docs/build_docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
