"""The worked example of ``docs/contributing.md`` ("Adding a result with its own algorithm") runs.

The ``python file=PATH`` blocks of that section are written at their paths in a temporary
directory, which is added to the search path of the packages they belong to; the registries are
then re-discovered (the same ``pkgutil`` walk as at import). The example must be found by every
registry and ``--list``, run, and pass its own tests; a malformed registration is refused. The
overlay is removed afterwards, and the shipped registries are checked to be back as they were.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from dpbounds.audit import registry as audit_registry
from dpbounds.audit.settings._common import AUDIT_REGISTRY, register_audit
from dpbounds.bounds import registry as bound_registry
from dpbounds.cli import main
from dpbounds.verify.studies._common import STUDY_REGISTRY, TheoremStudy, register_study
from dpbounds.verify.theorems import STUDIES

DOC = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"
SECTION = "## Adding a result with its own algorithm"
BLOCK = re.compile(r"^```python file=(\S+)\n(.*?)^```", re.M | re.S)

ALGORITHM = "dpbounds.algorithms.averaged_gd"
NEW_IDS = {"bound": "strongly_convex.averaged_gd", "study": "strongly_convex.averaged_gd",
           "audit": "dp_gd_averaged"}


def snippets() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return {path: body for path, body in BLOCK.findall(text[start:end if end > 0 else None])}


def _module(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def test_the_section_has_one_block_per_file() -> None:
    files = snippets()
    assert set(files) == {"dpbounds/algorithms/averaged_gd.py",
                          "dpbounds/bounds/strongly_convex/averaged_gd.py",
                          "dpbounds/verify/studies/averaged_gd.py",
                          "dpbounds/audit/settings/averaged_gd.py",
                          "tests/algorithms/test_averaged_gd.py"}
    # the shipped package does not hold the demo
    root = DOC.parents[1]
    assert not any((root / p).exists() for p in files)
    assert NEW_IDS["study"] not in STUDIES and NEW_IDS["audit"] not in audit_registry.AUDITS


@pytest.fixture(scope="module")
def overlay(tmp_path_factory: pytest.TempPathFactory):
    # the shipped registry complete before the overlay and the snapshot: the bound registry
    # discovers lazily, and restoring a partial snapshot would leave later tests without
    # their bounds
    bound_registry.discover()
    tmp = tmp_path_factory.mktemp("contrib")
    files = snippets()
    extended: list[tuple[list, str]] = []
    for path, body in files.items():
        target = tmp / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        if path.startswith("dpbounds/"):
            pkg = importlib.import_module(_module(str(Path(path).parent)))
            if str(target.parent) not in pkg.__path__:
                pkg.__path__.append(str(target.parent))
                extended.append((pkg.__path__, str(target.parent)))
    bounds_before = dict(bound_registry.BOUND_REGISTRY.entries)
    aliases_before = dict(bound_registry._ALIASES)
    studies_before, audits_before = dict(STUDIES), dict(audit_registry.AUDITS)
    # discovery as at import: the same walk now sees the overlay
    bound_registry.BOUND_REGISTRY._discovered = False
    STUDY_REGISTRY._discovered = False
    AUDIT_REGISTRY._discovered = False
    try:
        bound_registry.discover()
        STUDY_REGISTRY.discover()
        AUDIT_REGISTRY.discover()
        yield tmp
    finally:
        for name, reg in ((NEW_IDS["study"], STUDY_REGISTRY), (NEW_IDS["audit"], AUDIT_REGISTRY)):
            if name in reg.entries:
                reg.unregister(name)
        if NEW_IDS["bound"] in bound_registry.BOUND_REGISTRY.entries:
            bound_registry.BOUND_REGISTRY.unregister(NEW_IDS["bound"])
        bound_registry._ALIASES.clear()
        bound_registry._ALIASES.update(aliases_before)
        for path_list, entry in extended:
            path_list.remove(entry)
        for path in files:
            sys.modules.pop(_module(path), None)
        assert dict(STUDIES) == studies_before and list(STUDIES) == list(studies_before)
        assert bound_registry.get("kamath.bst14").name == "convex.noisy_projected_sgd"
        assert dict(bound_registry.BOUND_REGISTRY.entries) == bounds_before
        assert dict(audit_registry.AUDITS) == audits_before


def test_discovered_and_listed(overlay: Path, capsys: pytest.CaptureFixture) -> None:
    assert NEW_IDS["bound"] in bound_registry.names("strongly_convex")
    assert STUDY_REGISTRY.module_of(NEW_IDS["study"]) == "dpbounds.verify.studies.averaged_gd"
    assert AUDIT_REGISTRY.module_of(NEW_IDS["audit"]) == "dpbounds.audit.settings.averaged_gd"
    for argv, name in ((["bound", "--list"], NEW_IDS["bound"]),
                       (["verify", "--list"], NEW_IDS["study"]),
                       (["audit", "--list"], NEW_IDS["audit"])):
        capsys.readouterr()
        assert main(argv) == 0
        assert name in capsys.readouterr().out, argv
    # its rank puts it after every shipped study / audit
    assert list(STUDIES)[-1] == NEW_IDS["study"]
    assert list(audit_registry.AUDITS)[-1] == NEW_IDS["audit"]


def test_quick_run_of_each_part(overlay: Path) -> None:
    algorithm = importlib.import_module(ALGORITHM)
    from dpbounds.audit.neighbours import LinearObjective

    f = LinearObjective([[1.0, 0.0], [0.5, 0.5]], l2=1.0, smoothness=1.0)
    res = algorithm.dp_gd_averaged(f, epsilon=1.0, delta=1e-5, steps=3, step_size=1.0,
                                   clip_threshold=1.0, trials=2, seed=0)
    assert res.algorithm == "dp_gd_averaged" and res.x_numpy().shape == (2, 2)
    assert res.ledger.epsilon <= 1.0 * (1 + 1e-9)
    assert bound_registry.get(NEW_IDS["bound"]).value(
        dict(d=4, N=50, eps=1.0, delta=1e-5, G=1.0, mu=1.0)) > 0
    # the example's own tests: the exact check passes, the noise_d mutant fails it, the audit
    # stays below the claim
    spec = importlib.util.spec_from_file_location(
        "_contrib_demo_tests", overlay / "tests/algorithms/test_averaged_gd.py")
    assert spec is not None and spec.loader is not None
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    tests.test_excess_risk_is_exact_and_the_mutant_is_caught()
    tests.test_audit_stays_below_the_claim()


def test_malformed_registration_is_refused(overlay: Path) -> None:
    study = STUDIES[NEW_IDS["study"]]
    with pytest.raises(ValueError, match="registered twice: by module "
                       "dpbounds.verify.studies.averaged_gd and by module"):
        register_study(study, rank=1)  # this test module is a second registrant
    with pytest.raises(ValueError, match="must be a TheoremStudy"):
        register_study(dict(theorem="x"), rank=1)  # type: ignore[arg-type]
    spec = audit_registry.AUDITS[NEW_IDS["audit"]]
    with pytest.raises(ValueError, match="dpbounds.audit.settings.averaged_gd"):
        register_audit(spec, rank=1)
    with pytest.raises(ValueError, match="rank must be a finite number"):
        register_audit(spec, rank=float("nan"))
    assert isinstance(STUDIES[NEW_IDS["study"]], TheoremStudy)


# ----------------------------------------------------------------------------- counts
EXAMPLE_COUNT = re.compile(r"`examples/(\w+\.py)`[^(`]{0,40}\((\d+) lines")
MODULES_COUNT = re.compile(r"\*\*(\d+) modules of (\d+) lines\*\* \(algorithm (\d+),\s+bound "
                           r"(\d+), study (\d+), audit (\d+), test (\d+)\)")
COMMIT_COUNT = re.compile(r"commit `(\w+)` changed \*\*(\d+) files, (\d+) lines added\*\* "
                          r"\(the\s+bound's module (\d+), its test (\d+), the figure script "
                          r"(\d+), the changelog (\d+), the\s+regenerated page (\d+)\)")


def count_mismatches(text: str, root: Path) -> list[str]:
    """Every count the text states that the tree does not have (``[]``: all measured)."""
    bad = []
    for name, n in EXAMPLE_COUNT.findall(text):
        have = len((root / "examples" / name).read_text(encoding="utf-8").splitlines())
        if have != int(n):
            bad.append(f"examples/{name}: {n} stated, {have} lines")
    for m in MODULES_COUNT.findall(text):
        blocks = [len(b.splitlines()) for b in snippets().values()]
        order = [len(snippets()[p].splitlines()) for p in (
            "dpbounds/algorithms/averaged_gd.py", "dpbounds/bounds/strongly_convex/averaged_gd.py",
            "dpbounds/verify/studies/averaged_gd.py", "dpbounds/audit/settings/averaged_gd.py",
            "tests/algorithms/test_averaged_gd.py")]
        have = [len(blocks), sum(blocks), *order]
        if [int(x) for x in m] != have:
            bad.append(f"modules: {m} stated, {have} counted")
    return bad


def test_the_counts_in_the_guides_are_measured() -> None:
    root = DOC.parents[1]
    texts = {p: p.read_text(encoding="utf-8") for p in (DOC, root / "docs" / "extending.md")}
    assert all(EXAMPLE_COUNT.search(t) for t in texts.values())
    assert MODULES_COUNT.search(texts[DOC])
    for path, text in texts.items():
        assert count_mismatches(text, root) == [], path.name
    # every shipped example is counted in the contributor's guide
    named = {n for n, _ in EXAMPLE_COUNT.findall(texts[DOC])}
    assert named == {p.name for p in (root / "examples").glob("*.py")}
    # control: a wrong count is reported
    wrong = texts[DOC].replace("(31 lines", "(30 lines").replace("202 lines", "200 lines")
    assert len(count_mismatches(wrong, root)) == 2


def test_the_output_perturbation_commit_counts() -> None:
    """The commit's ``git show --numstat`` (skipped outside a git checkout holding it)."""
    import shutil
    import subprocess

    root = DOC.parents[1]
    m = COMMIT_COUNT.search(DOC.read_text(encoding="utf-8"))
    assert m, "the guide states the commit's counts"
    commit, files, added, module, test, figure, changelog, page = m.groups()
    if shutil.which("git") is None:
        pytest.skip("no git")
    r = subprocess.run(["git", "show", "--numstat", "--format=", commit], cwd=root,
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"commit {commit} not in this checkout (shallow clone?)")
    rows = {p: int(a) for a, _, p in (ln.split("\t") for ln in r.stdout.split("\n") if ln)}
    assert len(rows) == int(files) and sum(rows.values()) == int(added)
    assert [rows["dpbounds/bounds/convex/output_perturbation.py"],
            rows["tests/bounds/convex/test_output_perturbation.py"],
            rows["paper_figs/kamath_erm.py"], rows["CHANGELOG.md"],
            rows["docs/results.md"]] == [int(x) for x in (module, test, figure, changelog, page)]
