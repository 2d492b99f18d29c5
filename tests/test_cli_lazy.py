"""The CLI's contracts of issue 21 item 6: ``dpbounds --help`` and a command's run import only
what they need; every ``--json`` is strict JSON.

The command modules pull in scipy, sympy, cvxpy and dp-accounting (seconds of imports): the top
level help lists the commands from a static table, a command imports its own module only.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpbounds.cli import _COMMANDS, build_parser, strict_json

HEAVY = ("scipy", "sympy", "cvxpy", "dp_accounting")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help for a in action._choices_actions}
    raise AssertionError("no sub-commands")


def test_static_table_is_what_the_modules_register():
    assert _subcommands(build_parser()) == {k: v[1] for k, v in _COMMANDS.items()}


def test_lazy_help_is_the_full_help():
    assert build_parser(None).format_help() == build_parser().format_help()
    for name in _COMMANDS:  # each command's own parser is the full one
        full = build_parser()
        lazy = build_parser(name)
        sub_full = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
        sub_lazy = next(a for a in lazy._actions if isinstance(a, argparse._SubParsersAction))
        assert (sub_lazy.choices[name].format_help()
                == sub_full.choices[name].format_help()), name


def _heavy_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint(' '.join(m for m in "
         f"{HEAVY!r} if m in sys.modules))"],
        capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.split()


def test_top_level_help_imports_no_heavy_library_and_a_run_does():
    code = ("import contextlib, io\nfrom dpbounds.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _heavy_after(code) == []
    # control: running a command does import them (the closed-form rate needs sympy only)
    run = ("import contextlib, io\nfrom dpbounds.cli import main\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n    main(['rate', 'hb', '--alpha', "
           "'0.5', '--beta', '0.3', '--mu', '0.5', '--L', '1', '--no-lmi'])")
    assert _heavy_after(run) == ["sympy"]


#: what `COMMAND --help`, `--list` and an input error must not import (issue 36 item 4: they
#: answer in <= 0.5 CPU-s; these cost 1-3 CPU-s): the heavy libraries and the registries
#: (numpy too: 0.2-0.4 CPU-s to import on an AMD EPYC family 23, where `demo --bogus` took 0.59
#: CPU-s through the settings module's top-level numpy import)
HEAVY_OR_REGISTRY = (*HEAVY, "numpy", "numba", "matplotlib", "dpbounds.verify",
                     "dpbounds.audit", "dpbounds.bounds", "dpbounds.privacy", "dpbounds.tuning",
                     "dpbounds.lmi")

def _imports_of(argvs: list[list[str]]) -> dict[str, list[str]]:
    """In one fresh interpreter, run ``main`` on each argv in turn; for each, the modules of
    :data:`HEAVY_OR_REGISTRY` present after it (a culprit shows from its own argv on)."""
    code = f"""
import contextlib, io, json, sys
from dpbounds.cli import main
out = {{}}
for argv in {argvs!r}:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    out[' '.join(argv)] = [m for m in {HEAVY_OR_REGISTRY!r} if m in sys.modules]
print(json.dumps(out))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(res.stdout)


#: input errors the third fuzz timed at 0.5-1.2 CPU-s (stop 69): checked before the imports now
_HB = ["--mu", "0.02", "--L", "5.1028", "--d", "20", "--n", "1e5", "--eps", "1",
       "--sensitivity", "40"]
FUZZ3_ERRORS = (
    ["bound", "nonconvex.clipped_sgd", "--smallest", "N", "--largest", "d"],
    ["bound", "nonconvex.clipped_sgd", "--target", "1"],
    ["bound", "nonconvex.clipped_sgd", "--smallest", "N", "--search-range", "10", "1"],
    ["tune", "hb", *_HB, "--m", "0"], ["tune", "nag", *_HB, "--c", "1e-300"],
    ["verify", "strongly_convex.nag", "--quick", "--seed", "-1"],
    ["verify", "strongly_convex.nag", "--quick", "--steps", "5"],
    ["verify", "strongly_convex.nag", "--vary", "d", "--values", "3", "3"],
    ["verify", "strongly_convex.nag", "--vary", "d", "--values", "3"],
    ["--plugin", "/nonexistent/p.py", "bound", "--list"],
    ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1", "--tol", "nan"],
)
#: the fourth fuzz's slow refusals (stop 70): 1.1-1.2 CPU-s each before
FUZZ4_ERRORS = (
    ["audit", "dp_gd_laplace", "--trials", "1e9"],
    ["audit", "dp_gd_laplace", "--noise-factor", "1e300"],
    ["audit", "dp_gd_laplace", "--mutant", "nosuch"],
    ["audit", "dp_gd_laplace", "--neighbouring", "add_remove"],
    ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1", "--steps",
     "1e9"],
    ["verify", "strongly_convex.nag", "--vary", "N", "--values", "1.5", "1000"],
    ["verify", "strongly_convex.nag", "--vary", "eps", "--values", "1e-300", "1"],
    ["tune", "bound", "nonconvex.clipped_sgd", "--grid-size", "1"],
    ["tune", "bound", "nonconvex.clipped_sgd", "--range", "C", "0", "1"],
    ["tune", "bound", "nonconvex.clipped_sgd", "--over", "C", "C"],
    ["tune", "bound", "nosuch"],
    ["privacy", "compose", "--from-dp-event", str(Path(__file__).with_name("data") /
                                                  "misspelt_dp_event.json")],
)


def test_help_list_and_input_errors_import_no_heavy_module():
    """Every ``COMMAND --help``, every ``--list`` and the input errors a user meets first
    (a mistyped name, a bad flag value) import none of the heavy modules."""
    argvs = ([[c, "--help"] for c in _COMMANDS]
             + [["tune", "hb", "--help"], ["tune", "nag", "--help"], ["rate", "hb", "--help"],
                ["tune", "runs", "--help"],
                ["audit", "plan", "--help"], ["bound", "--list"], ["bound", "--list", "--json"],
                ["audit", "--list"], ["audit", "--list", "--json"], ["audit", "--list-mutants"],
                ["verify", "--list"], ["verify", "--list", "--json"],
                ["verify", "nosuch.thm", "--quick"], ["bound", "nosuch"], ["audit", "nosuch"],
                ["audit", "plan", "nosuch"], ["calibrate", "nosuch", "--steps", "10"],
                ["demo", "--bogus"], *BAD_ARGV,
                # the did-you-mean of an invalid choice (stop 68: it imported NumPy first)
                ["verify", "strongly_convex.nag", "--problem", "quadratc"], ["tune", "hbb"],
                *FUZZ3_ERRORS, *FUZZ4_ERRORS,
                # stop 71: an audit mutant that does not apply
                ["audit", "dp_gd_gaussian", "--quick", "--mutant", "laplace_std"],
                # stop 73: the memory refusal of --trials
                ["audit", "dp_sgd", "--trials", "1e7"],
                ["verify", "yang.sgd", "--problem", "quadratic", "--quick"],
                ["privacy", "compose", "--from-dp-event",
                 str(Path(__file__).with_name("data") / "zero_noise_dp_event.json")],
                ["verify", "strongly_convex.nag", "--vary", "N", "--values", "100.5", "200"],
                # stop 83 (fuzz 17: 2.2 CPU-s before)
                ["audit", "dp_gd_laplace", "--confidence", "nan", "--plan"],
                ["audit", "plan", "dp_gd_laplace", "--confidence", "1.5"],
                # stop 84 (fuzz 18: 1.3-2.0 CPU-s before): a risk target out of range
                *(["privacy", "compose", "--event", "gaussian:z=1", "--risk-target", r]
                  for r in ("2@0.01", "nan@0.01", "0.5@0", "1@0.01", "0.01@0.1")),
                # and an event's value out of range (0.7-1.0 CPU-s before)
                *(["privacy", "compose", "--event", e]
                  for e in ("tree:z=1,K=0", "gaussian:z=1,steps=1.5", "gaussian:z=1,q=2",
                            "pure:eps=-1", "zcdp:rho=1e9", "laplace:b=1,m=5,n=3"))])
    seen = _imports_of(argvs)
    assert list(seen) == [" ".join(a) for a in argvs]
    assert {k: v for k, v in seen.items() if v} == {}
    # control: the detector sees a command that does the work
    run = ["bound", "nonconvex.clipped_sgd", "--no-tune"]
    assert "sympy" in _imports_of([run])[" ".join(run)]


def test_calibrate_names_an_unknown_method_as_the_registry_does(monkeypatch):
    """Without a plug-in ``calibrate NAME`` refuses every name before importing
    ``dpbounds.extend`` (2 CPU-s of sympy); its message is the empty registry's own."""
    import pytest

    from dpbounds import extend
    from dpbounds.cli.plugin_cmd import NO_METHODS

    monkeypatch.setattr(extend, "_METHODS", {})
    monkeypatch.setattr(extend, "_METHOD_THEOREM", {})
    with pytest.raises(ValueError) as exc:
        extend.method_named("nosuch")
    assert str(exc.value) == NO_METHODS.format(name="nosuch")
    # control: a different name gives a different message
    assert str(exc.value) != NO_METHODS.format(name="other")


def test_the_catalog_is_what_the_registries_say():
    """``catalog.json`` (what --help, --list and the name checks read) is regenerated from the
    live registries here: a result added, renamed or re-described without ``python -m
    dpbounds.cli._catalog --write`` fails this test."""
    from dpbounds.cli import _catalog

    live, static = _catalog.build(), _catalog.load()
    assert live["constants"] == static["constants"]
    for kind in live["rows"]:
        assert live["rows"][kind] == static["rows"][kind], kind
    # the CLI read the live registries in this process (they are imported): the same rows
    for kind in live["rows"]:
        assert not _catalog.use_static(kind)
        assert _catalog.rows(kind) == static["rows"][kind]
    # control: a changed description is seen
    changed = json.loads(json.dumps(static))
    changed["rows"]["audit"][0]["description"] += "!"
    assert changed["rows"]["audit"] != live["rows"]["audit"]


def test_the_constants_the_parsers_read_are_the_librarys():
    """The choices the parsers offer come from the catalog; they are the library's own."""
    from dpbounds.audit.runner import MEMORY_BUDGET_GB
    from dpbounds.bounds.problem import DEFAULT_PROBLEM, PROBLEM_QUANTITIES
    from dpbounds.bounds.strongly_convex.noise_allocation import MAX_HORIZON
    from dpbounds.cli import bounds_cmd, heavy_ball_cmd
    from dpbounds.privacy import Neighbouring
    from dpbounds.verify import MUTATIONS, PROBLEMS, VARIABLES

    assert bounds_cmd.DEFAULT_PROBLEM == DEFAULT_PROBLEM
    assert bounds_cmd.PROBLEM_QUANTITIES == PROBLEM_QUANTITIES
    assert heavy_ball_cmd.MAX_HORIZON == MAX_HORIZON
    verify = _sub(build_parser(), "verify")
    audit = _sub(build_parser(), "audit")
    choices = {a.dest: a.choices for a in (*verify._actions, *audit._actions) if a.choices}
    assert tuple(choices["scaling_variable"]) == VARIABLES
    assert tuple(choices["problem"]) == PROBLEMS and tuple(choices["mutation"]) == MUTATIONS
    assert tuple(choices["neighbouring"]) == tuple(m.value for m in Neighbouring)
    assert next(a.default for a in audit._actions if a.dest == "max_memory_gb") \
        == MEMORY_BUDGET_GB


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


# --- strict JSON (issue 21 item 6): what every --json prints --------------------------------

_leaf = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10),
                  st.text(max_size=3), st.none(), st.booleans())
_tree = st.recursive(_leaf, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(min_size=1, max_size=3), kids,
                                                max_size=4)), max_leaves=20)


def _strict_loads(text: str):
    def refuse(name):  # NaN, Infinity, -Infinity
        raise AssertionError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def _same(a, b) -> bool:
    """``b`` is ``a`` with non-finite floats as None (and reasons under ``_nonfinite``)."""
    if isinstance(a, float):
        return b is None if not math.isfinite(a) else b == a
    if isinstance(a, dict):
        reasons = b.get("_nonfinite", {}) if "_nonfinite" not in a else {}
        for k, v in a.items():
            if k == "_nonfinite":
                continue
            if not _same(v, b[k]):
                return False
            if isinstance(v, float) and not math.isfinite(v):
                want = "nan" if v != v else ("inf" if v > 0 else "-inf")
                if "_nonfinite" not in a and reasons.get(k) != want:
                    return False
        return True
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@given(_tree)
def test_strict_json_is_standard_json_and_keeps_every_finite_value(obj):
    assert _same(obj, _strict_loads(strict_json(obj)))


def test_strict_json_names_the_non_finite_values_and_plain_json_does_not_parse():
    obj = {"bound": float("inf"), "gap": np.float64("nan"), "rows": [1.5, -np.inf],
           "x": np.float32(2.5)}
    out = _strict_loads(strict_json(obj))
    assert out == {"bound": None, "gap": None, "rows": [1.5, None], "x": 2.5,
                   "_nonfinite": {"bound": "inf", "gap": "nan"}}
    try:  # control: what the commands printed before is not standard JSON
        _strict_loads(json.dumps(obj, default=float))
    except AssertionError:
        pass
    else:
        raise AssertionError("plain json.dumps wrote standard JSON for non-finite values")


BAD_ARGV = (["nosuch"], ["verify", "--vary", "q"], ["tune", "hb", "--mu", "1"], ["tune", "nosuch"],
            ["audit", "dp_gd", "--trials", "x"], ["bound", "--no-such-flag"],
            ["privacy", "--epsilon"], ["compare", "--d", "1.5"])


def test_argparse_errors_are_one_line():
    import contextlib
    import io

    import pytest

    from dpbounds.cli import DpParser, main

    for argv in BAD_ARGV:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2, argv
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dpbounds: error: "), (argv, lines)
    # control: argparse's own error prints the usage block before the message
    err = io.StringIO()
    plain = argparse.ArgumentParser(prog="x")
    plain.add_argument("--n", type=int)
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
        plain.parse_args(["--n", "q"])
    assert len(err.getvalue().strip().splitlines()) > 1
    assert issubclass(DpParser, argparse.ArgumentParser)


def test_neighbouring_has_one_spelling_in_every_command():
    """``privacy`` and ``audit`` read the same spellings of the relation and give the enum's
    value (they accepted different sets before)."""
    import pytest

    from dpbounds.privacy import Neighbouring

    parser = build_parser()
    for spelling in ("add_remove", "add-remove", "add/remove", "ADD_REMOVE", "replace-one"):
        want = Neighbouring.coerce(spelling).value
        for argv in (["privacy", "--neighbouring", spelling],
                     ["audit", "dp_gd_gaussian", "--neighbouring", spelling]):
            assert parser.parse_args(argv).neighbouring == want, argv
    with pytest.raises(SystemExit):  # control: a relation that does not exist
        parser.parse_args(["audit", "dp_gd_gaussian", "--neighbouring", "swap"])


def test_choice_flags_keep_their_case():
    """Regression: the relation's spelling rule once lower-cased every choice flag, so
    ``compare`` scanned a variable ``n`` that does not exist and ``dpbounds demo`` crashed."""
    parser = build_parser()
    assert parser.parse_args(["compare"]).crossover_variable == "N"
    assert parser.parse_args(["compare", "--crossover-variable", "N"]).crossover_variable == "N"
    assert parser.parse_args(["verify", "--vary", "N"]).scaling_variable == "N"
    assert parser.parse_args(["verify", "--vary", "eps"]).scaling_variable == "eps"
