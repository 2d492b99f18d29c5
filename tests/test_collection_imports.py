"""Collecting the tests imports none of the heavy optional libraries (issue 36 item 4: every
pytest process, each xdist worker included, imports every test module before it runs one test).

A fresh interpreter executes every test module and conftest as collection does (module-level
code only, ``pytest.importorskip`` skips counted), then lists the forbidden top-level packages
found in ``sys.modules``; a test that needs one imports it inside the test or a fixture. No time
is asserted (speed is measured by ``bench/bench_collection.py``).

Oracle: ``sys.modules`` itself, in a process that imported nothing else. Negative control: a
synthetic test module importing a synthetic "heavy" package at its top is reported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

#: seconds of imports each (cvxpy 1-3 CPU-s, matplotlib 0.5, the notebook stack 0.3-1): what a
#: test needs of them it imports where it runs
FORBIDDEN = ("cvxpy", "clarabel", "matplotlib", "dask", "distributed", "pandas", "nbformat",
             "nbclient", "ipykernel", "IPython", "PEPit", "prv_accountant")

_PROBE = textwrap.dedent("""
    import importlib.util, json, sys
    from pathlib import Path

    import _pytest.outcomes

    root, forbidden = Path(sys.argv[1]), sys.argv[2].split(",")
    sys.path.insert(0, sys.argv[3])
    files = sorted(p for p in root.rglob("*.py")
                   if p.name == "conftest.py" or p.name.startswith("test_"))
    # conftests first, outermost first, as pytest loads them
    files.sort(key=lambda p: (p.name != "conftest.py", len(p.parts)))
    imported, skipped, failed = 0, [], {}
    for i, path in enumerate(files):
        spec = importlib.util.spec_from_file_location(f"_probe_{i}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
            imported += 1
        except _pytest.outcomes.Skipped:
            skipped.append(str(path))
        except Exception as exc:
            failed[str(path)] = repr(exc)
    tops = {m.split(".")[0] for m in sys.modules}
    print(json.dumps({"files": len(files), "imported": imported, "skipped": skipped,
                      "failed": failed, "forbidden": sorted(tops & set(forbidden))}))
""")


def _probe(root: Path, forbidden: tuple[str, ...], path: Path = ROOT) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(root), ",".join(forbidden), str(path)],
                         capture_output=True, text=True, check=True, timeout=600, cwd=path)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_collecting_the_suite_imports_no_heavy_optional_library():
    seen = _probe(TESTS, FORBIDDEN)
    assert seen["failed"] == {}
    # every module ran (a module skipped for a missing extra is counted, not hidden)
    assert seen["imported"] + len(seen["skipped"]) == seen["files"] > 150
    assert seen["forbidden"] == []


def test_a_heavy_import_at_a_test_modules_top_is_reported(tmp_path):
    """Negative control: a test module importing a (synthetic) heavy package at its top is
    reported; one importing it inside its test is not."""
    pkg = tmp_path / "site"
    (pkg / "fake_heavy").mkdir(parents=True)
    (pkg / "fake_heavy" / "__init__.py").write_text("VALUE = 1\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_lazy.py").write_text("def test_x():\n    import fake_heavy\n")
    assert _probe(tests, ("fake_heavy",), pkg)["forbidden"] == []
    (tests / "test_eager.py").write_text("import fake_heavy\n\ndef test_x():\n    pass\n")
    seen = _probe(tests, ("fake_heavy",), pkg)
    assert seen["forbidden"] == ["fake_heavy"]
    assert (seen["files"], seen["imported"], seen["failed"]) == (2, 2, {})
