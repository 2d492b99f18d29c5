"""Every docstring example in the package runs and prints what it says (issue 21 item 4).

The examples are documentation a reader copies: one that drifted from the code is a defect (two
had: a rounding display in ``privacy/_pld.py`` and a threshold in ``verify/vacuity.py`` that
Theorem 9's re-derivation moved). A module that needs an absent optional library is skipped.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import dpbounds

MODULES = sorted(m.name for m in pkgutil.walk_packages(dpbounds.__path__, "dpbounds.")
                 if not m.name.endswith("__main__"))


def _examples(name: str) -> int:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional extra (CuPy, ...) that is not installed
        pytest.skip(f"{name}: {exc}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(module) if t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} failing example(s) in {name}"
    return sum(len(t.examples) for t in tests)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    _examples(name)


def test_a_wrong_example_is_caught():
    """Control: the same runner fails on an example whose printed value is wrong."""
    bad = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "bad", None, 0)
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(bad, out=lambda s: None)
    assert runner.failures == 1
