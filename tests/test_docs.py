"""The documentation: its snippets run, the gallery page copes with whatever figures exist, and
the Sphinx build passes with warnings as errors (skipped where Sphinx is not installed).

Build command (as in docs/getting_started.md)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpbounds.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _build_docs_module():
    spec = importlib.util.spec_from_file_location("build_docs", DOCS / "build_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_getting_started_snippets_run(capsys: pytest.CaptureFixture[str]) -> None:
    text = (DOCS / "getting_started.md").read_text(encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    blocks = _blocks(text, "python")
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        exec(compile(block, f"getting_started.md python block {i}", "exec"), namespace)
    lines = [line[2:] for block in _blocks(text, "console") for line in block.splitlines()
             if line.startswith("$ dpbounds")]
    assert lines
    for line in lines:
        assert main([*shlex.split(line)[1:], "--quiet"]) == 0, line
    assert capsys.readouterr().out.strip()


def test_gallery_page_without_figures_says_how_to_make_them(tmp_path: Path) -> None:
    page = _build_docs_module().gallery_markdown(tmp_path / "absent")
    assert "python -m paper_figs" in page and "{figure}" not in page
    assert _build_docs_module().gallery_markdown(tmp_path) == page  # an empty folder too


@pytest.mark.parametrize("form", ["mapping", "nested", "list"])
def test_gallery_page_takes_every_png_with_its_caption(tmp_path: Path, form: str) -> None:
    for name in ("b_fig.png", "a_fig.png", "c_fig.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "notes.txt").write_text("not a figure")
    caps = {"a_fig.png": "A: VERBATIM grid | x_1", "b_fig.png": "B caption"}  # c: none
    raw = {"mapping": caps, "nested": {k: {"caption": v} for k, v in caps.items()},
           "list": [{"file": f"gallery/{k}", "caption": v} for k, v in caps.items()]}[form]
    (tmp_path / "captions.json").write_text(json.dumps(raw), encoding="utf-8")
    page = _build_docs_module().gallery_markdown(tmp_path)
    figures = re.findall(r"```\{figure\} (\S+)", page)
    assert [Path(f).name for f in figures] == ["a_fig.png", "b_fig.png", "c_fig.png"]
    assert r"A: VERBATIM grid \| x\_1" in page and "B caption" in page  # escaped for MyST
    assert "(no caption in captions.json)" in page  # c_fig.png


@pytest.fixture(scope="module")
def sphinx_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The docs built once per module: (html folder, Sphinx's stderr)."""
    for package in ("sphinx", "myst_parser", "pydata_sphinx_theme"):
        pytest.importorskip(package, reason="the docs extra is not installed")
    tmp_path = tmp_path_factory.mktemp("docs")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return tmp_path / "html", done.stderr


def test_sphinx_build_has_no_warnings(sphinx_build: tuple[Path, str]) -> None:
    html, stderr = sphinx_build
    assert "WARNING" not in stderr and "ERROR" not in stderr, stderr[-4000:]
    for page in ("index", "getting_started", "errata", "gallery", "papers/kuru",
                 "api/generated/dpbounds.verify.vacuity"):
        assert (html / f"{page}.html").exists(), page


# ------------------------------------------------------------------------ in a real browser
#: Debian's headless Chromium (``.ci/run`` installs it with apt where it can)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: flags that work in a container without a display, a GPU or a network
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync")
#: where the screenshots go (under docs/_build, not committed): look at them
SHOTS = DOCS / "_build" / "screenshots"


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium on ``page`` with a fresh profile; console messages on stderr."""
    cmd = [CHROMIUM, *CHROME_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr",
           "--v=0", "--virtual-time-budget=8000", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


#: console messages that are not errors: the pydata theme's own status lines
BENIGN_CONSOLE = ('"[PST]:', '"Got invalid theme mode: . Resetting to auto."')


def console_errors(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs each as ``INFO:CONSOLE`` whatever its level,
    so every one counts except the theme's known status lines) and failed loads."""
    return [line for line in stderr.splitlines()
            if (":CONSOLE" in line and not any(b in line for b in BENIGN_CONSOLE))
            or "Failed to load resource" in line or "ERR_FILE_NOT_FOUND" in line]


def render_notebook(path: Path, out: Path, mathjax: Path) -> Path:
    """A committed notebook as one HTML page: markdown cells through MyST (the docs' parser,
    math as MathJax spans), code and text outputs as ``<pre>``, PNGs inline."""
    import base64
    import html as html_lib

    from docutils.core import publish_parts
    from myst_parser.docutils_ import Parser

    nb = json.loads(path.read_text(encoding="utf-8"))
    body = []
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts = publish_parts(source, parser=Parser(), writer="html5", settings_overrides={
                "myst_enable_extensions": ["dollarmath"], "math_output": "MathJax",
                "doctitle_xform": False,
                "report_level": 4, "embed_stylesheet": False})
            body.append(parts["body"])
            continue
        body.append(f"<pre class='code'>{html_lib.escape(source)}</pre>")
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/png" in data:
                png = base64.b64decode("".join(data["image/png"]))
                body.append("<img alt='figure' src='data:image/png;base64,"
                            f"{base64.b64encode(png).decode()}'>")
            elif "text" in o or "text/plain" in data:
                text = "".join(o.get("text") or data["text/plain"])
                body.append(f"<pre>{html_lib.escape(text)}</pre>")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{path.stem}</title>"
            f"<script async src='{mathjax.as_uri()}'></script></head>"
            "<body style='max-width: 1100px; margin: auto'>" + "\n".join(body)
            + "</body></html>")
    out.write_text(page, encoding="utf-8")
    return out


def test_pages_render_in_chromium(sphinx_build: tuple[Path, str], tmp_path: Path) -> None:
    """The docs index, the errata (73 formulas), every paper page, an API page and an
    executed notebook in headless Chromium: screenshots under docs/_build/screenshots, and in
    the rendered DOM every math element typeset by the bundled MathJax (no raw TeX), without
    a MathJax error or an undefined macro, every image loaded, no console errors. Negative
    controls: a page with raw TeX, a missing image and a console error fails each of the
    three checks; formulas with a double exponent, a ``\\left`` without ``\\right`` and an
    undefined macro are each reported (next to a good one, which is not)."""
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH: .ci/run installs Debian's chromium with apt; "
                    "install it with `apt-get install chromium` to run this test")
    pytest.importorskip("sphinx-mathjax-offline",
                        reason="the docs extra's sphinx-mathjax-offline is not installed")
    html, _ = sphinx_build
    mathjax = html / "_static" / "mathjax" / "tex-chtml.js"
    assert mathjax.exists(), "MathJax is not bundled: install the docs extra " \
        "(sphinx-mathjax-offline)"
    notebook = render_notebook(ROOT / "notebooks" / "02_bounds_explorer.ipynb",
                               html / "notebook_02.html", mathjax)
    pages = {"index": html / "index.html", "errata": html / "errata.html",
             "api_verify": html / "api" / "generated" / "dpbounds.verify.vacuity.html",
             "notebook_02": notebook}
    # every paper page: the theorems' formulas are sympy's LaTeX, typeset here
    pages.update({f"paper_{p.stem}": p for p in sorted((html / "papers").glob("*.html"))
                  if p.stem != "index"})
    assert "paper_kuru" in pages
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, page in pages.items():
        shot = SHOTS / f"{name}.png"
        problems, run = page_problems(page, tmp_path / f"profile_{name}",
                                      f"--screenshot={shot}", "--window-size=1280,1600")
        assert shot.exists() and shot.stat().st_size > 10_000, (name, run.stderr[-2000:])
        assert problems == [], (name, problems)
    bad = tmp_path / "bad.html"  # negative control: raw TeX, a missing image, an error
    bad.write_text("<html><body><p>\\(x^2\\)</p><div class='math'>\\[y\\]</div>"
                   "<img src='missing.png'><script>console.error('boom')</script>"
                   "</body></html>", encoding="utf-8")
    problems, _ = page_problems(bad, tmp_path / "profile_bad")
    assert any("raw TeX" in p for p in problems), problems
    assert any("missing.png" in p for p in problems), problems
    assert any("boom" in p for p in problems), problems
    # negative control: formulas that MathJax typesets as errors, next to a good one
    broken = html / "broken_math.html"
    spans = "".join(f'<p><span class="math notranslate nohighlight">\\({tex}\\)</span></p>'
                    for tex in (r"x^2^3", r"\left( x", r"\sqrt{x} + \undefinedmacro{y}",
                                r"\frac{1}{2}"))
    broken.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><script async "
                      f"src='{mathjax.as_uri()}'></script></head><body>{spans}</body></html>",
                      encoding="utf-8")
    problems, _ = page_problems(broken, tmp_path / "profile_broken")
    assert sorted(problems) == ["MathJax error: Double exponent: use braces to clarify",
                                "MathJax error: Extra \\left or missing \\right",
                                "undefined TeX macro: \\undefinedmacro"], problems


def page_problems(page: Path, profile: Path,
                  *args: str) -> tuple[list[str], subprocess.CompletedProcess]:
    """What is wrong with ``page`` once Chromium has run its scripts (one run, with ``args``
    such as a screenshot): raw TeX left in a math element, images whose file is missing,
    console errors."""
    run = chromium(page, profile, "--dump-dom", *args)
    dom = run.stdout
    problems = [f"console: {line[-300:]}" for line in console_errors(run.stderr)]
    untypeset = re.findall(r'<(?:span|div) class="math[^"]*"[^>]*>(?!\s*<mjx-container)'
                           r"([^<]{0,80})", dom)
    problems += [f"raw TeX: {t!r}" for t in untypeset]
    # typeset but broken: MathJax draws a parse error as <mjx-merror> and an undefined macro as
    # red text (its noundefined extension); both pass the check above
    problems += [f"MathJax error: {e}" for e in re.findall(r'<mjx-merror data-mjx-error="([^"]*)"',
                                                           dom)]
    for red in re.findall(r'<mjx-mtext[^>]*style="color: red;"[^>]*>(.*?)</mjx-mtext>', dom):
        chars = "".join(chr(int(h, 16)) for h in re.findall(r'class="mjx-c([0-9A-F]+)', red))
        problems.append(f"undefined TeX macro: {chars}")
    if re.search(r"\\\(|\\\[|\$\$", re.sub(r"<(script|pre|code)[^>]*>.*?</\1>", "", dom,
                                              flags=re.S)):
        problems.append("raw TeX delimiters in the page text")
    for src in re.findall(r'<img[^>]+src="([^"]+)"', dom):
        if not src.startswith("data:") and not (page.parent / src.split("#")[0]).exists():
            problems.append(f"broken image: {src}")
    return problems, run


#: a reference to a file a reader of the docs cannot open (outside the package)
OUTSIDE = re.compile(r"`(?:paper_figs|tests|sims|bench)/|Theory sheet|\.md` \(the project")


def test_paper_pages_state_their_theorems() -> None:
    """Each paper page states every registered theorem that cites it as display math (the
    theorem object's own LaTeX) with its label, and points to no file outside the package
    (negative control: the pattern catches such a reference)."""
    from dpbounds.bounds import registry

    build_docs = _build_docs_module()
    pages = build_docs.documents()
    assert OUTSIDE.search("see `paper_figs/kuru_fig1.py`")
    for paper in build_docs.PAPERS:
        page = pages[DOCS / "papers" / f"{paper.slug}.md"]
        for e in registry.entries():
            if any(paper.cites(s) for s in e.tuned.sources):
                assert f"$$\n{e.tuned.latex()}\n$$" in page, (paper.slug, e.name)
                assert f"`{e.name}`" in page and f"**{e.tuned.provenance}**" in page
        assert not OUTSIDE.search(page), (paper.slug, OUTSIDE.search(page).group(0))


def test_papers_are_declared_once_in_provenance() -> None:
    """The paper pages come from :data:`dpbounds.provenance.PAPERS` (one declaration per paper):
    slugs are unique, every declared paper is cited by some Source of the package (control: a
    paper whose citation nobody uses cites nothing), and the docs build uses that very tuple."""
    from dpbounds.provenance import PAPERS, Paper

    build_docs = _build_docs_module()
    assert build_docs.PAPERS is PAPERS
    assert len({p.slug for p in PAPERS}) == len(PAPERS)
    sources = build_docs.cited_sources()
    for paper in PAPERS:
        assert any(paper.cites(s) for s in sources), paper.slug
    ghost = Paper("ghost", "Nobody, Unpublished, 2099", "Ghost", ("Nobody",))
    assert not any(ghost.cites(s) for s in sources)


def _duplicate_headings(changelog: str) -> list[str]:
    """Release headings of ``changelog`` that repeat a kind (Added, Changed, ...)."""
    out = []
    for release in re.split(r"^## ", changelog, flags=re.M)[1:]:
        kinds = re.findall(r"^### (\w+)", release, re.M)
        out += [release.splitlines()[0] for k in set(kinds) if kinds.count(k) > 1]
    return out


def test_citation_and_changelog_agree() -> None:
    """CITATION.cff's version and date are the changelog's latest release and the package's
    version; every release has one heading of each kind (Keep a Changelog). Negative control:
    a release with two "Added" headings is found."""
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    version = re.search(r"^version: (\S+)", cff, re.M).group(1)
    date = re.search(r'^date-released: "?([0-9-]+)', cff, re.M).group(1)
    log = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d[^\]]*)\] - (\d{4}-\d\d-\d\d)$", log, re.M)
    assert releases and releases[0] == (version, date), (releases[:1], version, date)
    import dpbounds

    assert dpbounds.__version__ == version
    assert _duplicate_headings(log) == []
    assert _duplicate_headings("## [1.0] - 2026-01-01\n### Added\n- a\n### Added\n- b\n")


# ------------------------------------------------------------- math in the Markdown sources
#: sympy's ``str`` form leaking into a formula (``x**2``, ``sqrt(x)``): MathJax would typeset it
#: without complaint, as literal asterisks and parentheses
SYMPY_SYNTAX = re.compile(r"\*\*|(?<![\\A-Za-z])(?:sqrt|exp|log|Max|Min|Abs|Piecewise)\(")


def tex_problems(tex: str) -> list[str]:
    """Structural errors of one TeX formula: unbalanced braces, ``\\left`` without ``\\right``,
    ``\\begin`` without its ``\\end``, sympy's plain-text syntax."""
    problems = []
    depth = 0
    for m in re.finditer(r"\\.|[{}]", tex):  # \{ and \} (and every other escape) skipped
        depth += {"{": 1, "}": -1}.get(m.group(), 0)
        if depth < 0:
            problems.append("a } closes nothing")
            depth = 0
    if depth:
        problems.append(f"{depth} unclosed {{")
    lefts, rights = (len(re.findall(rf"\\{w}(?![A-Za-z])", tex)) for w in ("left", "right"))
    if lefts != rights:
        problems.append(f"{lefts} \\left and {rights} \\right")
    stack: list[str] = []
    for kind, env in re.findall(r"\\(begin|end)\{([^}]*)\}", tex):
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            problems.append(f"\\end{{{env}}} without its \\begin")
    problems += [f"\\begin{{{env}}} without its \\end" for env in stack]
    if SYMPY_SYNTAX.search(tex):
        problems.append(f"sympy syntax: {SYMPY_SYNTAX.search(tex).group()!r}")
    return problems


def markdown_math(text: str) -> list[str]:
    """The formulas of a MyST page (``$$...$$``, ``$...$``, ``{math}`...```, ```` ```{math} ````
    blocks), code spans and other fenced blocks left out."""
    maths = re.findall(r"```\{math\}\n(.*?)```", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    maths += re.findall(r"\{math\}`([^`]*)`", text)
    text = re.sub(r"`[^`\n]*`", "", text)
    maths += re.findall(r"\$\$(.*?)\$\$", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    maths += re.findall(r"(?<![\\$])\$(?=\S)([^$\n]+?)(?<=\S)\$(?!\$)", text)
    return maths


def test_the_docs_math_is_well_formed_latex() -> None:
    """Every formula of the docs' Markdown (the generated paper pages included, as committed)
    is structurally valid TeX and not sympy's plain-text output: the browser test then checks
    that MathJax typesets it without errors (where Chromium is installed). Negative control:
    broken formulas of each kind are caught, and the page parser finds them."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    assert any(p.parent.name == "papers" for p in pages)
    found = 0
    for page in pages:
        for tex in markdown_math(page.read_text(encoding="utf-8")):
            found += 1
            assert tex_problems(tex) == [], (page.relative_to(DOCS), tex[:200])
    assert found >= 10
    for bad in (r"\frac{1}{2", r"x}", r"\left( x", r"\begin{cases} a", r"\end{cases}",
                r"x**2 + 1", r"sqrt(2) x", r"\begin{cases} a \end{matrix}"):
        assert tex_problems(bad), bad
    assert tex_problems(r"\left\{ x \right. + \frac{\sqrt{2}}{3}\exp(x)") == []
    page = "Text $a^2$ and `$not$` and\n$$\n\\frac{1}{2\n$$\n```python\nx = '$$'\n```\n"
    assert [tex_problems(t) != [] for t in markdown_math(page)] == [True, False]
