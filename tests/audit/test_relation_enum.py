"""Inside the audit the neighbouring relation is only the ``Neighbouring`` enum (issue 21
item 1): strings are coerced once, at :func:`dpbounds.audit.audit` / ``AuditSpec`` / the CLI,
and shown with ``.legacy`` in the output."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dpbounds
from dpbounds.audit import AUDITS
from dpbounds.audit.mutation import MUTANTS, get_mutant
from dpbounds.audit.registry import RELEASE_AUDITS, AuditSpec
from dpbounds.privacy import Neighbouring

#: Every spelling of a relation that ``Neighbouring.coerce`` reads.
SPELLINGS = {"replace-one", "replace_one", "add/remove", "add-remove", "add_remove"}
ROOT = Path(dpbounds.__file__).parent
FILES = [*sorted((ROOT / "audit").rglob("*.py")), ROOT / "cli" / "audit_cmd.py"]


def relation_literals(source: str) -> list[tuple[int, str]]:
    """String constants equal to a relation spelling (docstrings and longer display text,
    which merely mention a relation, are not equal to one)."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.strip() in SPELLINGS]


def test_no_relation_string_literal_in_the_audit():
    found = {f"{p.relative_to(ROOT.parent)}:{line}": value for p in FILES
             for line, value in relation_literals(p.read_text())}
    assert not found, found


def test_the_literal_check_catches_a_string_relation():
    """Control: the comparisons this change removed are found."""
    old = 'REPLACE_ONE = "replace-one"\nok = rel == "add/remove"\nx = f"{rel}"\n'
    assert relation_literals(old) == [(1, "replace-one"), (2, "add/remove")]
    assert relation_literals('"""replace-one or add/remove."""\ns = "D (replace-one)"') == []


def test_specs_hold_the_enum_and_coerce_at_construction():
    for spec in (*AUDITS.values(), *RELEASE_AUDITS.values()):
        assert spec.relations and all(isinstance(r, Neighbouring) for r in spec.relations)
    spec = AUDITS["dp_sgd"]
    again = AuditSpec(**{**spec.__dict__, "relations": ("add/remove", "replace_one")})
    assert again.relations == (Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE)
    with pytest.raises(ValueError, match="relations"):
        AuditSpec(**{**spec.__dict__, "relations": ("swap",)})
    with pytest.raises(ValueError, match="relations"):
        AuditSpec(**{**spec.__dict__, "relations": "add/remove"})


def test_mutants_read_the_enum():
    """The relation-specific mutants apply exactly where they did with strings."""
    sgd, out = AUDITS["dp_sgd"], AUDITS["output_perturbation"]
    realised, as_c = MUTANTS["realised_batch"], MUTANTS["replace_one_as_C"]
    assert realised.applies(sgd, Neighbouring.ADD_REMOVE)
    assert not realised.applies(sgd, Neighbouring.REPLACE_ONE)
    assert as_c.applies(out, Neighbouring.REPLACE_ONE)
    assert not as_c.applies(AUDITS["dp_agd"], Neighbouring.ADD_REMOVE)
    setting = out.build(Neighbouring.REPLACE_ONE, out.epsilon, out.delta)
    with pytest.raises(ValueError, match=r"dp_sgd \(replace_one\)"):
        get_mutant("realised_batch", sgd, Neighbouring.REPLACE_ONE, setting)


def test_audit_and_privacy_offer_the_enum_values_as_choices():
    """One spelling set for both commands (the aliases are read by the flag's type)."""
    from dpbounds.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if hasattr(a, "choices") and
                isinstance(a.choices, dict) and "audit" in a.choices).choices
    want = tuple(m.value for m in Neighbouring)
    for command in ("audit", "privacy"):
        flag = next(a for a in subs[command]._actions if a.dest == "neighbouring")
        assert tuple(flag.choices) == want, command
    args = parser.parse_args(["audit", "dp_sgd", "--neighbouring", "add/remove"])
    assert Neighbouring.coerce(args.neighbouring) is Neighbouring.ADD_REMOVE


def test_a_relation_the_audit_does_not_declare_is_named_by_its_value():
    from dpbounds.audit import audit

    for spelling in ("add/remove", Neighbouring.ADD_REMOVE):
        with pytest.raises(ValueError, match=r"^neighbouring must be one of \('replace_one',\) "
                                             r"for dp_gd_laplace, got 'add_remove'$"):
            audit("dp_gd_laplace", spelling, trials=200)
