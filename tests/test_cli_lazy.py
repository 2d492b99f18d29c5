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


def test_top_level_help_imports_no_heavy_library_and_the_full_parser_does():
    code = ("import contextlib, io\nfrom dpbounds.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass")
    assert _heavy_after(code) == []
    # control: building every command's parser does import them
    assert "scipy" in _heavy_after("from dpbounds.cli import build_parser\nbuild_parser()")


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


BAD_ARGV = (["nosuch"], ["verify", "--vary", "q"], ["tune", "hb", "--mu", "1"],
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
