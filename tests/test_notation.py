"""The notation table: every CLI flag and every symbol of a registered bound is in it, one flag
means one quantity in every sub-command, old spellings still parse, and the docs are fresh."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest
import sympy as sp

from dpbounds import notation
from dpbounds.bounds import registry
from dpbounds.bounds.numeric import NumericBound
from dpbounds.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _unknown_flags(parser: argparse.ArgumentParser) -> set[str]:
    known = notation.all_flags()
    return {f for p in _parsers(parser) for a in p._actions for f in a.option_strings
            if f.startswith("--") and f not in known}


def test_every_cli_flag_is_in_the_notation_table():
    assert _unknown_flags(build_parser()) == set()


def test_the_flag_check_catches_a_flag_missing_from_the_table():
    # negative control: a flag the table does not know is reported
    parser = build_parser()
    parser.add_argument("--bogus-quantity", type=float)
    assert _unknown_flags(parser) == {"--bogus-quantity"}


def test_one_flag_means_one_quantity_in_every_sub_command():
    dests: dict[str, set[str]] = {}
    for p in _parsers(build_parser()):
        for a in p._actions:
            for f in a.option_strings:
                dests.setdefault(f, set()).add(a.dest)
    clashes = {f: d for f, d in dests.items() if len(d) > 1}
    assert clashes == {}
    # every quantity flag is read into the quantity's own name
    for q in notation.QUANTITIES:
        for f in q.flags:
            if f in dests:
                assert dests[f] == {q.name}, f


def _bound_symbols(bound) -> set[str]:
    if isinstance(bound, NumericBound):
        out = set(bound.parameters)
        if bound.closed_form is not None:
            out |= _bound_symbols(bound.closed_form)
        return out
    syms = set(bound.expr.free_symbols)
    for a in bound.assumptions:
        if isinstance(a.relation, sp.Basic):
            syms |= a.relation.free_symbols
    for v in bound.hyperparameters.values():
        syms |= v.free_symbols
    return {s.name for s in syms} | set(bound.hyperparameters)


def test_every_symbol_of_a_registered_bound_is_in_the_table():
    missing = {}
    for e in registry.entries():
        for b in (e.theorem, e.tuned, e.gradient_count, e.scaling_bound):
            if b is None:
                continue
            names = {s for s in _bound_symbols(b) if not notation.quantity_of_symbol(s)}
            if names:
                missing[e.name] = sorted(names)
    assert missing == {}


def test_theorem_latex_reads_the_table():
    from dpbounds.bounds import theorem
    from dpbounds.bounds.nonconvex import normalized_sgd

    assert theorem.SYMBOL_LATEX is notation.SYMBOL_LATEX
    assert r"\tau_0" in normalized_sgd.nsgd_floor.latex()


@pytest.mark.parametrize(("old", "new"), [
    (["bound", "yang.sgd", "--eps", "2", "--N", "1e4", "--d", "10", "--G", "2", "--L", "3",
      "--R", "4", "--diam", "5", "--tau0", "6", "--no-tune"],
     ["bound", "yang.sgd", "--epsilon", "2", "--dataset-size", "1e4", "--dimension", "10",
      "--lipschitz", "2", "--smoothness", "3", "--initial-gap", "4", "--diameter", "5",
      "--gradient-noise", "6", "--no-tune"]),
    (["tune", "nag", "--mu", "0.1", "--L", "1", "--d", "2", "--n", "1e3", "--m", "10",
      "--eps", "1", "--S1", "1", "--E0", "3", "--c", "0.5"],
     ["tune", "nag", "--strong-convexity", "0.1", "--smoothness", "1", "--dimension", "2",
      "--dataset-size", "1000", "--batch-size", "10", "--epsilon", "1", "--sensitivity", "1",
      "--initial-gap", "3", "--step-factor", "0.5"]),
    (["privacy", "--eps", "2", "--n", "500"], ["privacy", "--epsilon", "2", "--dataset-size",
                                                "500"]),
    (["rate", "hb", "--alpha", "0.5", "--beta", "0.3", "--mu", "0.5", "--L", "1"],
     ["rate", "hb", "--step-size", "0.5", "--momentum", "0.3", "--strong-convexity", "0.5",
      "--smoothness", "1"]),
])
def test_old_spellings_parse_to_the_same_values(old, new):
    parser = build_parser()
    a, b = vars(parser.parse_args(old)), vars(parser.parse_args(new))
    a.pop("_flags_typed", None), b.pop("_flags_typed", None)
    assert a == b


def test_docs_are_generated_from_the_table_and_fresh():
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "docs" / "build_docs.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    docs = build.documents()
    for path, text in docs.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run " \
                                                         "python docs/build_docs.py"
    table = docs[ROOT / "docs" / "notation.md"]
    for q in notation.QUANTITIES:  # every row is rendered, with its flags
        assert f"`{q.name}`" in table
        for f in q.flags:
            assert f"`{f}`" in table
    results = docs[ROOT / "docs" / "results.md"]
    for e in registry.entries():
        assert f"`{e.name}`" in results and all(f"`{a}`" in results for a in e.aliases)


def test_unknown_keyword_names_the_notation_spelling():
    """issue 21: ``theorem6_tuned.evaluate(epsilon=1, ...)`` said only "missing ['eps']"."""
    import pytest

    from dpbounds.bounds.nonconvex import tree_momentum as tc
    from dpbounds.notation import did_you_mean

    point = dict(d=4, N=1000, delta=1e-5, G=1, L=1, R=1)
    with pytest.raises(ValueError, match=r"unknown parameter 'epsilon' \(did you mean 'eps'\?\)"):
        tc.theorem6_tuned.evaluate(epsilon=1, **point)
    assert float(tc.theorem6_tuned.evaluate(eps=1, **point)) > 0  # control: the right name
    assert did_you_mean(["dataset_size", "dimnesion"], ["N", "d", "eps"]) == (
        "unknown parameter 'dataset_size' (did you mean 'N'?); unknown parameter 'dimnesion'")
    assert did_you_mean(["N"], ["N"]) == ""
