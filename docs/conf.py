"""Sphinx configuration of the dpbounds documentation.

Build (warnings are errors)::

    sphinx-build -W --keep-going -b html docs docs/_build/html

Why this stack: the docstrings are NumPy-style (``napoleon`` renders them, ``autodoc`` reads
them from the package itself, ``autosummary`` writes one page per public module) and the
existing pages are Markdown (``myst-parser`` reads them unchanged). ``-W`` turns every warning
into an error, so a broken cross-reference or a malformed docstring fails the build (and
``tests/test_docs.py``). The generated pages (notation, results, one page per paper, the figure
gallery) are written by ``docs/build_docs.py`` before the build starts, so they cannot drift.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import build_docs  # noqa: E402

import dpbounds  # noqa: E402

build_docs.write_generated()

project = "dpbounds"
author = "dpbounds developers"
copyright = "dpbounds developers, MIT licence"
release = version = dpbounds.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
]
try:  # MathJax 3 shipped with the docs extra and copied into _static: math renders offline
    importlib.import_module("sphinx-mathjax-offline")
    extensions.append("sphinx-mathjax-offline")
except ImportError:  # without it Sphinx loads MathJax from its CDN (online only)
    pass
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# -- autodoc / autosummary / napoleon -------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
templates_path = ["_templates"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

# -- MyST ------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dpbounds {release}"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2, "collapse_navigation": True}


def _prose_attribute_docstrings(app, what, name, obj, options, lines) -> None:
    """Keep napoleon from reading ``text: more text`` in the first line of an attribute's
    docstring as ``type: description``: dpbounds' ``#:`` comments are prose, their types come
    from the annotations. An empty reST comment first hides the colon from that rule."""
    if what in ("attribute", "data", "property"):
        first = next((line for line in lines if line.strip()), "")
        if ":" in first:
            lines[:0] = ["..", ""]


def setup(app):
    # before napoleon (priority 500)
    app.connect("autodoc-process-docstring", _prose_attribute_docstrings, priority=400)
    import _reexports  # a re-exported name's reference links to its defining module's page

    app.connect("missing-reference", _reexports.resolve_reexport)
