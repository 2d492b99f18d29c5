"""Write the generated docs.

Committed (``--check`` compares them, ``tests/test_notation.py`` fails while one is stale):

* ``docs/notation.md`` — the notation table (:mod:`dpbounds.notation`);
* ``docs/results.md`` — each registered result with its source, algorithm, figure and test;
* ``docs/papers/*.md`` — one page per source paper: its registered bounds and every library
  object that cites it, with the VERBATIM / RECONSTRUCTED / DERIVED label, read from the
  :class:`~dpbounds.provenance.Source` metadata of the package itself (so they cannot drift),
  and the figure scripts, simulation studies and tests that mention it.

Written at every Sphinx build (``docs/conf.py``) but not committed, because it depends on files
``python -m paper_figs`` produces: ``docs/gallery.md`` from ``docs/gallery/*.png`` and
``docs/gallery/captions.json``.

Run ``python docs/build_docs.py`` after changing :mod:`dpbounds.notation`, a ``Source`` or a
registered bound. ``--check`` only compares.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import pkgutil
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


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


# ------------------------------------------------------------------------------ paper pages
def _papers():
    """The source papers, declared once in :data:`dpbounds.provenance.PAPERS`."""
    from dpbounds.provenance import PAPERS as papers

    return papers


PAPERS = _papers()

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$#])")


def _md(text: str) -> str:
    """Plain text for a Markdown table cell: every character MyST could read as markup
    escaped (the notes are prose with ASCII formulas: ``E||g||``, ``x^2``, ``a_i``)."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _top_level_names(path: Path) -> set[str]:
    """Names a module assigns at top level (not the ones it imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
    return names


def cited_sources() -> dict:
    """Every :class:`~dpbounds.provenance.Source` of the package -> the objects that carry it.

    An object *carries* a source when it is a module constant holding it, a theorem whose first
    source it is (``obj.sources[0]``: the theorem's own result), or a class whose ``source``
    it is. A theorem's further sources (the results it is built from) are listed under it only
    where nothing else carries them. Returns ``{source: [(qualified name, label), ...]}``, the
    label being a theorem's own (the weakest of its sources) and ``None`` for a constant or class.
    """
    import dpbounds
    from dpbounds.provenance import Source, weakest

    primary: dict[Source, list[tuple[str, object]]] = {}
    secondary: dict[Source, list[tuple[str, object]]] = {}
    for info in pkgutil.walk_packages(dpbounds.__path__, "dpbounds."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        if not getattr(module, "__file__", None):
            continue
        for name in sorted(_top_level_names(Path(module.__file__))):
            obj = getattr(module, name, None)
            where = f"{info.name}.{name}"
            sources = getattr(obj, "sources", None) if not isinstance(obj, type) else None
            if isinstance(obj, Source):
                primary.setdefault(obj, []).append((where, None))
            elif isinstance(sources, tuple) and sources and all(
                    isinstance(s, Source) for s in sources):
                label = weakest(sources)
                primary.setdefault(sources[0], []).append((where, label))
                for s in sources[1:]:
                    secondary.setdefault(s, []).append((where, label))
            elif isinstance(obj, type) and isinstance(vars(obj).get("source"), Source):
                primary.setdefault(vars(obj)["source"], []).append((where, None))
    for s, where in secondary.items():
        if s not in primary:
            primary[s] = sorted(set(where))
    return primary


def _natural(text: str) -> list:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def _mentions(folder: str, pattern: str, paper) -> list[tuple[str, str]]:
    """``(path, first docstring line)`` of the files under ``folder`` whose module docstring
    names the paper."""
    out = []
    for path in sorted((ROOT / folder).glob(pattern)):
        if path.name.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if any(k in doc for k in paper.keywords):
            first = doc.strip().split("\n\n")[0]  # the first paragraph
            out.append((path.relative_to(ROOT).as_posix(), first))
    return out


def paper_markdown(paper, sources: dict) -> str:
    """``docs/papers/<slug>.md``: the paper's results -> library objects, with labels."""
    from dpbounds.bounds import registry

    citation = paper.citation
    lines = [
        f"# {paper.title}",
        "",
        "<!-- generated from the Source metadata of dpbounds by docs/build_docs.py; "
        "do not edit -->",
        "",
        f"**Citation:** {_md(citation)}.",
        "",
        "Labels: **VERBATIM** copied from the paper; **RECONSTRUCTED** the formula is lost and "
        "the standard form its prose names was written down; **DERIVED** dpbounds' own "
        "derivation (constants, log factors, choices are ours, not the paper's). A registered "
        "bound carries the weakest label of its ingredients.",
        "",
        "## Registered theorems",
        "",
        "Each registered bound as the library states it (the tuned form: the closed-form "
        "hyper-parameter choices substituted where the theorem has them), its label, the "
        "paper's result it implements, and how it is checked: `dpbounds verify` runs the "
        "algorithm against the bound (docs: Verifying the bounds), `dpbounds audit` tests "
        "the algorithm's privacy empirically.",
        "",
    ]
    entries = [e for e in registry.entries() if any(paper.cites(s) for s in e.tuned.sources)]
    if entries:
        lines += _theorem_sections(paper, entries)
    else:
        lines.append("No bound of the registry cites this paper; its results live in the "
                     "algorithms and privacy modules below.")
    rows = sorted(((s, where) for s, where in sources.items() if paper.cites(s)),
                  key=lambda sw: (_natural(sw[0].result), sw[0].provenance.value))
    lines += ["", "## Every result cited, and the objects that carry it", "",
              "Read from the `Source` of every module constant, theorem object and class of "
              "the package (`python docs/build_docs.py` regenerates this page).", "",
              "| paper result | label | library objects | note |", "|---|---|---|---|"]
    for s, where in rows:
        # a link where the API reference documents the object; a theorem built from weaker
        # ingredients than this result says so (the abstract's VERBATIM exponents, say)
        objects = "<br>".join(
            f"{{py:obj}}`{w}`" + (f" (as a whole: {label})" if label and label != s.provenance
                                   else "") for w, label in where)
        lines.append(f"| {_md(s.result)} | **{s.provenance}** | {objects} | {_md(s.note)} |")
    lines += ["", "## Figures", ""]
    scripts = [Path(path).stem for path, _ in _mentions("paper_figs", "*.py", paper)]
    images = [png for name in scripts for png in _gallery_pngs(name)]
    captions = _gallery_captions()
    for png in images:
        lines += ["```{figure} ../gallery/" + png.name, f":alt: {png.stem}", "",
                  _md(captions.get(png.name, png.stem)), "```", ""]
    if not images:
        lines.append("No figure of this paper in the gallery yet.")
    lines += ["", "Every figure with its full caption: the [figure gallery](../gallery.md)."]
    return "\n".join(lines) + "\n"


def _theorem_sections(paper, entries: list) -> list[str]:
    """One subsection per registered theorem: the statement as display math, label, result,
    algorithm, verify and audit status."""
    from dpbounds.audit import AUDITS
    from dpbounds.verify import STUDIES

    audited: dict[str, str] = {}
    for name, spec in AUDITS.items():  # the first (rank-ordered) audit of a function names it
        audited.setdefault(spec.function.__module__ + "." + spec.function.__name__, name)
    out: list[str] = []
    for e in entries:
        src = next(s for s in e.tuned.sources if paper.cites(s))
        alias = f" (aliases {', '.join(f'`{a}`' for a in e.aliases)})" if e.aliases else ""
        out += [f"### {_md(e.title)}", "", f"`{e.name}`{alias}: **{e.tuned.provenance}**, "
                f"{_md(src.result)}.", "", "$$", e.tuned.latex(), "$$", ""]
        algo = audited.get(_resolve(e.algorithm)) if e.algorithm else None
        verify = (f"`dpbounds verify {e.name}` (a scaling study with verdicts that can fail)"
                  if e.name in STUDIES else "no scaling study")
        audit = (f"`dpbounds audit {algo}`" if algo else
                 "no privacy audit of its algorithm") if e.algorithm else "no algorithm"
        out += [f"- algorithm: {{py:obj}}`{e.algorithm}`" if e.algorithm else
                "- algorithm: none (a computed bound)",
                f"- verify: {verify}", f"- audit: {audit}", ""]
    return out


def _resolve(name: str) -> str:
    """``module.function`` where the object ``name`` (as exported) is defined."""
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return name
    return f"{obj.__module__}.{obj.__name__}"


def _gallery_pngs(script: str) -> list[Path]:
    """The gallery PNGs of figure script ``script`` (its name, and Fig. 4 of kuru_fig3)."""
    stems = (script, *{"kuru_fig3": ("kuru_fig4",)}.get(script, ()))
    folder = HERE / "gallery"
    return [p for stem in stems for p in sorted(folder.glob(f"{stem}*.png"))
            if p.stem == stem or p.stem.startswith(stem + "_")]


def _gallery_captions() -> dict[str, str]:
    path = HERE / "gallery" / "captions.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def papers_index_markdown(sources: dict) -> str:
    """``docs/papers/index.md``: the five papers and how much of each is verbatim."""

    lines = ["# The papers", "",
             "<!-- generated by docs/build_docs.py; do not edit -->", "",
             "One page per source paper: which of its results dpbounds implements, under which "
             "label, and where (theorem ids of the registry, algorithms, figure scripts, "
             "simulation studies, tests). The counts are over the distinct results cited.", "",
             "| paper | VERBATIM | RECONSTRUCTED | DERIVED |", "|---|---|---|---|"]
    for p in PAPERS:
        labels = [s.provenance.value for s in sources if p.cites(s)]
        counts = [str(labels.count(v)) for v in ("VERBATIM", "RECONSTRUCTED", "DERIVED")]
        lines.append(f"| [{p.title}]({p.slug}.md) | " + " | ".join(counts) + " |")
    lines += ["", "```{toctree}", ":hidden:", "", *(p.slug for p in PAPERS), "```"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------- gallery
def gallery_markdown(folder: Path | None = None) -> str:
    """``docs/gallery.md`` from ``docs/gallery/*.png`` with captions from
    ``docs/gallery/captions.json`` (``{"name.png": "caption"}``, or values
    ``{"caption": ...}``, or a list of ``{"file": ..., "caption": ...}``)."""
    folder = HERE / "gallery" if folder is None else folder
    lines = ["# Figure gallery", "",
             "<!-- generated by docs/build_docs.py from docs/gallery/; do not edit -->", ""]
    images = sorted(folder.glob("*.png")) if folder.is_dir() else []
    if not images:
        lines += ["No figures yet. Generate them with", "", "```bash", "python -m paper_figs",
                  "```", "", "(each script writes a PNG with its provenance caption; copy the "
                  "PNGs into `docs/gallery/` and their captions into "
                  "`docs/gallery/captions.json`), then rebuild the docs."]
        return "\n".join(lines) + "\n"
    captions: dict[str, str] = {}
    path = folder / "captions.json"
    if path.exists():
        raw = json.loads(path.read_text(encoding="utf-8"))
        items = raw.items() if isinstance(raw, dict) else (
            (r.get("file", ""), r) for r in raw if isinstance(r, dict))
        for name, value in items:
            text = value.get("caption", "") if isinstance(value, dict) else value
            captions[Path(str(name)).name] = str(text)
    lines += [f"{len(images)} figures from `python -m paper_figs`; each caption says where "
              "every number comes from.", ""]
    for image in images:
        rel = Path(os.path.relpath(image, HERE)).as_posix()
        lines += [f"## {image.stem}", "", "```{figure} " + rel, f":alt: {image.stem}",
                  "", _md(captions.get(image.name, "(no caption in captions.json)")),
                  "```", ""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- entry points
def documents() -> dict[Path, str]:
    """Every committed generated file and its content."""
    from dpbounds.notation import markdown

    sources = cited_sources()
    docs = {HERE / "notation.md": markdown(), HERE / "results.md": results_markdown(),
            HERE / "papers" / "index.md": papers_index_markdown(sources)}
    docs.update({HERE / "papers" / f"{p.slug}.md": paper_markdown(p, sources) for p in PAPERS})
    return docs


def _write(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False  # unchanged: keep the mtime, so Sphinx does not reread it
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def write_generated() -> None:
    """Write every generated page, the gallery included (``docs/conf.py`` calls this before
    each Sphinx build)."""
    for path, text in documents().items():
        _write(path, text)
    _write(HERE / "gallery.md", gallery_markdown())


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    stale = []
    for path, text in documents().items():
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        elif _write(path, text):
            print(path)
    if not check and _write(HERE / "gallery.md", gallery_markdown()):
        print(HERE / "gallery.md")
    if stale:
        print(f"stale: {', '.join(stale)} (run python docs/build_docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
