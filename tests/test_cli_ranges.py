"""Numeric input errors of the CLI are refused before the library is imported (issue 36,
item 4: every input error in <= 0.5 CPU-s), and the declared ranges never refuse what the
library accepts.

* the error paths run in a fresh interpreter: exit 2, one line naming the flag as typed, and
  none of scipy / sympy / cvxpy / numba / dp_accounting in ``sys.modules`` afterwards (the
  imports were what cost 1.3-2.5 CPU-s); negative control: the same commands with the early
  check switched off do import them and are refused by the library (so the probe sees imports);
* oracle for every declared edge (:data:`dpbounds.cli._ranges.RANGES`): the library itself,
  with the early check switched off, refuses a value just outside the edge (exit 2 and a
  message naming the quantity), so no declared range is tighter than the library's; values on
  a closed edge and just inside pass the early check.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from dpbounds.cli import _ranges, build_parser, main

HEAVY = ("scipy", "sympy", "cvxpy", "numba", "dp_accounting")

#: the issue's examples and one per command, with the start of the library's own message
ERRORS: list[tuple[list[str], str]] = [
    (["bound", "nonconvex.clipped_sgd", "--eps", "-1"], "--eps must be > 0"),
    (["rate", "hb", "--alpha", "-1", "--beta", "0.3", "--mu", "1", "--L", "10"],
     "alpha must be > 0"),
    (["tune", "hb", "--mu", "0", "--L", "10", "--d", "10", "--n", "1000", "--eps", "1",
      "--S1", "1"], "mu must be > 0"),
    (["verify", "strongly_convex.nag", "--quick", "--trials", "0"],
     "trials must be an integer in [2, 1000000]"),
    (["privacy", "--eps", "1e9"], "epsilon must lie in [1e-06, 100.0]"),
    (["compare", "--mu", "2", "--L", "1"], "--mu must lie in (0, L=1]"),
    (["audit", "dp_gd_laplace", "--confidence", "1"], "confidence must lie in (0, 1)"),
    (["tune", "nag", "--mu", "0.1", "--L", "1", "--d", "10", "--n", "1000", "--eps", "1",
      "--S1", "1", "--step-factor", "2"], "c must lie in (0, 1]"),
    (["bound", "nonconvex.clipped_sgd", "--target", "-1", "--smallest", "N"],
     "target must be > 0"),
    (["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.1", "--L", "1", "--steps", "5",
      "--E0", "-1"], "initial_gap must be >= 0"),
    (["verify", "strongly_convex.nag", "--quick", "--values", "-1", "2"],
     "values must be positive"),
    (["audit", "dp_gd_laplace", "--max-memory-gb", "-1"], "max_memory_gb must be > 0"),
]

_PROBE = r"""
import contextlib, io, json, sys
from dpbounds.cli import _ranges, main
if sys.argv[2] == "off":
    _ranges.check = lambda args: None
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    out.append([rc, err.getvalue().strip().splitlines()[-1:],
                sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)])
print(json.dumps(out))
"""


def _probe(argvs: list[list[str]], mode: str) -> list:
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argvs), mode,
                           json.dumps(HEAVY)],
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout)


def test_range_errors_import_nothing_heavy() -> None:
    argvs = [argv for argv, _ in ERRORS]
    for (argv, flag), (rc, last, heavy) in zip(ERRORS, _probe(argvs, "on"), strict=True):
        assert rc == 2, (argv, last)
        assert heavy == [], (argv, heavy)  # the modules that cost the seconds
        assert last and last[0].startswith(f"dpbounds: error: {flag}"), last


def test_negative_control_library_path_imports_heavy_modules() -> None:
    # the probe can see the imports: without the early check the same errors come from the
    # library, after scipy & co. were loaded (not `bound --eps -1`: the bound command checks
    # its problem before the registry's imports since stop 72, so its library path is light)
    for rc, last, heavy in _probe([argv for argv, _ in ERRORS[1:3]], "off"):
        assert rc == 2 and heavy, (rc, last, heavy)


# --------------------------------------------------------------- declared edges vs library
_TUNE = ["--mu", "0.1", "--L", "1", "--d", "10", "--n", "1000", "--eps", "1", "--S1", "1"]
BASE: dict[str, list[str]] = {
    "privacy": ["privacy"],
    "bound": ["bound", "nonconvex.clipped_sgd"],
    "compare": ["compare", "--no-tune"],
    "tune hb": ["tune", "hb", *_TUNE],
    "tune nag": ["tune", "nag", *_TUNE],
    "rate hb": ["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.1", "--L", "1",
                "--no-lmi"],
    "audit": ["audit", "dp_gd_laplace", "--quick"],
    "verify": ["verify", "nonconvex.normalized_sgd", "--quick", "--vary", "eps"],
}


def _outside(rng: _ranges.Range) -> list[float]:
    """Values just outside each finite edge."""
    out = []
    if rng.low_open:
        out.append(rng.low)
    else:
        out.append(rng.low - 1 if rng.integer else rng.low - max(abs(rng.low) * 1e-6, 1e-12))
    if math.isfinite(rng.high):
        if rng.high_open:
            out.append(rng.high)
        else:
            out.append(rng.high + 1 if rng.integer else rng.high * (1 + 1e-6))
    return out


def _inside(rng: _ranges.Range) -> list[float]:
    out = []
    out.append(rng.low + (1 if rng.integer else max(abs(rng.low) * 1e-6, 1e-12))
               if rng.low_open else rng.low)
    if math.isfinite(rng.high):
        out.append(rng.high - (1 if rng.integer else abs(rng.high) * 1e-6)
                   if rng.high_open else rng.high)
    return out


CASES = [(key, dest, v) for key, table in _ranges.RANGES.items() for dest, rng in table.items()
         for v in _outside(rng)]


#: what a flag needs beside it for the library to read it
EXTRA = {("bound", "target"): ["--smallest", "N"], ("rate hb", "initial_gap"): ["--steps", "5"],
         ("rate hb", "noise_second_moment"): ["--steps", "5"]}
#: the aliases the base command lines use for a quantity's canonical flag
ALIAS = {"--strong-convexity": "--mu", "--smoothness": "--L", "--dimension": "--d",
         "--dataset-size": "--n", "--epsilon": "--eps", "--sensitivity": "--S1",
         "--step-size": "--alpha", "--momentum": "--beta"}


def _flag(dest: str) -> str:
    from dpbounds.notation import QUANTITIES

    q = next((q for q in QUANTITIES if q.name == dest), None)
    return q.flag if q is not None and q.flag else "--" + dest.replace("_", "-")


def _argv(key: str, dest: str, value: float) -> list[str]:
    flag = _flag(dest)
    base = list(BASE[key])
    if key == "verify" and dest == "epsilon":
        base[base.index("eps")] = "N"
    alias = ALIAS.get(flag)
    if alias in base:  # the value under test replaces the base's
        i = base.index(alias)
        del base[i:i + 2]
    text = str(int(value)) if _ranges.RANGES[key][dest].integer else repr(float(value))
    if dest == "values":  # a grid needs two values; the other one is valid
        return [*base, flag, text, "2", "--quiet"]
    return [*base, *EXTRA.get((key, dest), []), f"{flag}={text}", "--quiet"]


@pytest.mark.parametrize(("key", "dest", "value"), CASES,
                         ids=[f"{k}-{d}-{v:g}" for k, d, v in CASES])
def test_library_refuses_just_outside_every_declared_edge(key, dest, value, capsys,
                                                          monkeypatch) -> None:
    argv = _argv(key, dest, value)
    with pytest.raises(ValueError) as early:  # the early check refuses it ...
        _ranges.check(build_parser(argv[0]).parse_args(argv))
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    rc = main(argv)  # ... and so does the library (the oracle), with the same message
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, (argv, err)
    # the same message; the early one names the flag typed where the library's name differs
    # (`mu must be > 0 ..., got 0.0 (--strong-convexity)`)
    lib = err[-1].removeprefix("dpbounds: error: ")
    typed = next((a.split("=")[0] for a in argv if a.startswith("--") and "=" in a), None)
    assert str(early.value) in (lib, f"{lib} ({typed})"), (argv, str(early.value), lib)


@pytest.mark.parametrize("key", sorted(_ranges.RANGES))
def test_edges_and_just_inside_pass_the_early_check(key) -> None:
    for dest, rng in _ranges.RANGES[key].items():
        for v in _inside(rng):
            argv = _argv(key, dest, v)
            _ranges.check_values(build_parser(argv[0]).parse_args(argv), key)


ORDERED = [(key, pair) for key, pairs in _ranges._ORDERED.items() for pair in pairs]


@pytest.mark.parametrize(("key", "pair"), ORDERED, ids=[f"{k}-{p[0]}" for k, p in ORDERED])
def test_library_refuses_every_declared_order(key, pair, capsys, monkeypatch) -> None:
    small, large, _ = pair
    flags = {"strong_convexity": ("--mu", "2"), "smoothness": ("--L", "1"),
             "batch_size": ("--m", "11"), "dataset_size": ("--n", "10")}
    argv = [*BASE[key], *flags[small], *flags[large], "--quiet"]
    with pytest.raises(ValueError) as early:
        _ranges.check(build_parser(argv[0]).parse_args(argv))
    monkeypatch.setattr(_ranges, "check", lambda args: None)
    rc = main(argv)  # the library (oracle) refuses the same order, with the same message
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1] == f"dpbounds: error: {early.value}", (argv, err)


def test_range_rejects_nonfinite() -> None:
    r = _ranges.Range(0.0, 1.0, low_open=True)
    assert not r.contains(math.nan) and not r.contains(math.inf)
    assert r.contains(1.0) and not r.contains(0.0)
