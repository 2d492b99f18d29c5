"""The registry: entries found by walking the package (no central list), ids by concept, the 0.1
ids as aliases everywhere, problem classes and the 'not applicable' reasons of compare."""

from __future__ import annotations

import ast
import math
import sys
import textwrap
from pathlib import Path

import pytest

import dpbounds.bounds as bounds_pkg
from dpbounds.bounds import registry
from dpbounds.bounds.compare import compare, crossover
from dpbounds.cli import main

ALIASES = {
    "tran_cutkosky.alg1": "nonconvex.tree_momentum_nsgd",
    "tran_cutkosky.alg2": "nonconvex.sensitivity_reduced_nsgd",
    "yang.nsgd": "nonconvex.normalized_sgd",
    "yang.sgd": "nonconvex.clipped_sgd",
    "kamath.bst14": "convex.noisy_projected_sgd",
}
KURU = dict(mu=0.02, L=5.1028, d=20, N=1e5, eps=1.0, S1=40.0, R=10.0)

_PROBE = '''
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.theorem import Theorem, sym
from dpbounds.provenance import Provenance, Source

_T = Theorem(name="probe", quantity="q", expr=sym("d") / sym("N"),
             sources=(Source("a probe", "eq. (0)", Provenance.DERIVED),))
register(Entry(name="convex.probe_bound", title="probe", problem_class="convex", theorem=_T,
               tuned=_T, to_params=lambda p: {"d": p["d"], "N": p["N"]}))
'''


@pytest.fixture
def fresh_registry(monkeypatch):
    """The registry emptied and undiscovered (the complete registry is restored afterwards)."""
    registry.discover()
    old = registry.BOUND_REGISTRY
    monkeypatch.setattr(registry, "BOUND_REGISTRY",
                        type(old)(old.kind, old.package, old.providers))
    monkeypatch.setattr(registry, "_ALIASES", {})
    yield
    sys.modules.pop("dpbounds.bounds.probe_bound_module", None)


def test_a_module_added_to_the_package_is_discovered_without_any_list(tmp_path, monkeypatch,
                                                                     fresh_registry):
    (tmp_path / "probe_bound_module.py").write_text(textwrap.dedent(_PROBE))
    monkeypatch.setattr(bounds_pkg, "__path__", [*bounds_pkg.__path__, str(tmp_path)])
    for name in [m for m in sys.modules if m.startswith("dpbounds.bounds.")]:
        if name.split(".")[-1] not in ("registry", "theorem", "numeric", "problem"):
            monkeypatch.delitem(sys.modules, name)  # re-imported: each registers again
    assert "convex.probe_bound" in registry.names()
    assert set(ALIASES.values()) <= set(registry.names())  # and every real module too
    assert registry.get("convex.probe_bound").value(d=10, N=100) == pytest.approx(0.1)


def test_without_the_module_there_is_no_probe(fresh_registry, monkeypatch):
    # negative control of the test above: discovery finds modules, it does not invent them
    for name in [m for m in sys.modules if m.startswith("dpbounds.bounds.")]:
        if name.split(".")[-1] not in ("registry", "theorem", "numeric", "problem"):
            monkeypatch.delitem(sys.modules, name)
    assert "convex.probe_bound" not in registry.names()


def test_registry_imports_no_bound_module_and_keeps_no_translator():
    tree = ast.parse(Path(registry.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {m for m in imported if m and m.startswith("dpbounds.bounds.")} <= {
        "dpbounds.bounds.numeric", "dpbounds.bounds.problem", "dpbounds.bounds.theorem"}
    for e in registry.entries():  # every translator lives next to its theorem
        assert e.to_params.__module__ != registry.__name__
        assert e.name.split(".")[0] in e.to_params.__module__ or \
            e.to_params.__module__.startswith("dpbounds.bounds.")


def test_ids_are_by_concept_and_old_ids_are_aliases():
    assert registry.aliases() == ALIASES
    for old, new in ALIASES.items():
        assert registry.get(old) is registry.get(new)
        assert not any(part in new for part in ("tran_cutkosky", "yang", "kamath", "kuru"))
    for name in registry.names():
        assert name.split(".")[0] in ("nonconvex", "convex", "strongly_convex")
    with pytest.raises(ValueError, match="valid names"):
        registry.get("kuru.nag")


def test_an_alias_may_not_be_taken_twice(fresh_registry):
    from dpbounds.bounds.theorem import Theorem, sym
    from dpbounds.provenance import Provenance, Source

    t = Theorem(name="t", quantity="q", expr=sym("d"), sources=(Source("p", "r",
                                                                       Provenance.DERIVED),))
    registry.register(registry.Entry("convex.a", "a", "convex", t, t, dict, aliases=("old",)))
    with pytest.raises(ValueError, match="already taken"):
        registry.register(registry.Entry("convex.b", "b", "convex", t, t, dict,
                                         aliases=("old",)))
    with pytest.raises(ValueError, match="problem class"):
        registry.Entry("nonconvex.c", "c", "strongly_convex", t, t, dict)  # id/class mismatch


def test_aliases_work_in_compare_crossover_and_the_cli(capsys):
    p = dict(d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1, c2=6.5)
    by_alias = compare(p, names=list(ALIASES)[:2], tune=False, crossovers=False)
    by_id = compare(p, names=[ALIASES[a] for a in list(ALIASES)[:2]], tune=False,
                    crossovers=False)
    assert [r.name for r in by_alias.rows] == list(ALIASES)[:2]  # reported as given
    assert [r.value for r in by_alias.rows] == [r.value for r in by_id.rows]
    (c,) = crossover("tran_cutkosky.alg2", "nonconvex.tree_momentum_nsgd", "N", p)
    assert c.better == "tran_cutkosky.alg2"
    assert main(["bound", "yang.sgd", "--no-tune", "--c2", "6.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nonconvex.clipped_sgd: ") and "[alias yang.sgd]" in out
    assert main(["bound", "--list"]) == 0
    listing = capsys.readouterr().out
    for old, new in ALIASES.items():
        line = next(x for x in listing.splitlines() if x.startswith(new + " "))
        assert f"(alias: {old})" in line and "symbolic" in line
    for kuru in ("strongly_convex.heavy_ball", "strongly_convex.heavy_ball_lmi",
                 "strongly_convex.nag", "strongly_convex.masg"):
        line = next(x for x in listing.splitlines() if x.startswith(kuru + " "))
        assert "numeric" in line


def test_default_compare_lists_the_strongly_convex_bounds_as_not_applicable():
    c = compare(dict(c2=6.5), tune=False, crossovers=False)
    assert c.problem_class == "nonconvex"
    assert {r.name for r in c.rows} == set(registry.names("nonconvex"))
    why = c.excluded["strongly_convex.nag"]
    assert "strongly convex" in why and "--mu" in why
    assert "convex (DP-ERM)" in c.excluded["convex.noisy_projected_sgd"]
    assert all(" not " not in r.not_applicable for r in c.rows)  # every non-convex row applies
    assert "not applicable: strongly_convex.masg:" in c.to_text()


def test_compare_with_mu_compares_the_kuru_bounds(capsys):
    c = compare(KURU, tune=False, crossovers=False)
    assert c.problem_class == "strongly_convex"
    assert {r.name for r in c.rows} == {"strongly_convex.heavy_ball_lmi", "strongly_convex.nag",
                                        "strongly_convex.masg"}
    assert all(r.applicable and math.isfinite(r.value) for r in c.rows)
    assert "quadratic" in c.excluded["strongly_convex.heavy_ball"]
    assert "E||grad F||" in c.excluded["nonconvex.tree_momentum_nsgd"]
    q = compare({**KURU, "problem_class": "quadratic"}, tune=False, crossovers=False)
    assert "strongly_convex.heavy_ball" in {r.name for r in q.rows}
    # a strongly convex problem without the sensitivity: the rows say what is missing
    no_s = compare({k: v for k, v in KURU.items() if k != "S1"}, tune=False, crossovers=False)
    assert all("sensitivity S1 (--sensitivity, --S1)" in r.not_applicable for r in no_s.rows)
    # the same through the CLI, with the canonical flags and with the papers' symbols
    for argv in (["compare", "--strong-convexity", "0.02", "--smoothness", "5.1028",
                  "--dimension", "20", "--sensitivity", "40", "--initial-gap", "10", "--no-tune"],
                 ["compare", "--mu", "0.02", "--L", "5.1028", "--d", "20", "--S1", "40",
                  "--R", "10", "--no-tune"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "problem class: strongly_convex" in out
        assert "best (closed-form choices): strongly_convex." in out


def test_bad_problem_keys_name_the_flag_typed(capsys):
    assert main(["compare", "--mu", "2", "--L", "1", "--S1", "1"]) == 2
    assert "--mu must lie in (0, L=1]" in capsys.readouterr().err
    assert main(["compare", "--strong-convexity", "0.1", "--batch-size", "1.5e9"]) == 2
    assert "--batch-size must lie in [1, N=100000]" in capsys.readouterr().err


def test_bounds_use_the_shared_discovery_walk():
    """One package walk for bounds, verify studies and audit settings
    (:class:`dpbounds._discovery.Registry`); the listing order is the class in the id, then
    the id, as before."""
    from dpbounds._discovery import Registry

    reg = registry.BOUND_REGISTRY
    assert isinstance(reg, Registry) and reg.package == "dpbounds.bounds"
    assert registry.names() == list(reg.entries)
    classes = ("nonconvex", "convex", "strongly_convex")
    assert registry.names() == sorted(registry.names(),
                                      key=lambda n: (classes.index(n.split(".")[0]), n))
    for name in reg.entries:  # every entry came from the package or a named provider
        owner = reg.module_of(name)
        assert owner.startswith("dpbounds.bounds.") or owner in registry.PROVIDERS, owner
    tree = ast.parse(Path(registry.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {"pkgutil", "importlib"} & imported  # no walk of its own


def test_a_second_module_registering_a_bound_id_is_refused(fresh_registry):
    from dpbounds.bounds.theorem import Theorem, sym
    from dpbounds.provenance import Provenance, Source

    t = Theorem(name="t", quantity="q", expr=sym("d"), sources=(Source("p", "r",
                                                                       Provenance.DERIVED),))
    entry = registry.Entry("convex.a", "a", "convex", t, t, dict)
    registry.register(entry)
    registry.register(entry)  # control: the same module again (a reload) replaces it
    with pytest.raises(ValueError, match="registered twice"):
        registry.BOUND_REGISTRY.register("convex.a", entry, rank=1, module="elsewhere")


def _drop_bound_modules(monkeypatch) -> None:
    for name in [m for m in sys.modules if m.startswith("dpbounds.bounds.")]:
        if name.split(".")[-1] not in ("registry", "theorem", "numeric", "problem"):
            monkeypatch.delitem(sys.modules, name)  # re-imported: each registers again
    for name in registry.PROVIDERS:
        monkeypatch.delitem(sys.modules, name, raising=False)


def _origins() -> dict[str, str]:
    """Every id and alias -> the module registering its entry, after a full discovery."""
    registry.discover()
    reg = registry.BOUND_REGISTRY
    out = {n: reg.module_of(n) for n in reg.entries}
    out.update({a: reg.module_of(n) for a, n in registry.aliases().items()})
    return out


ORIGINS = _origins()


def test_a_lookup_imports_its_own_module_not_every_bound(fresh_registry, monkeypatch):
    # the planner of `verify nonconvex.clipped_sgd` looked its bound up through a full
    # discovery: 38 modules, 0.35 CPU-s (0.14 of them sensitivity_reduced's sympy work)
    _drop_bound_modules(monkeypatch)
    e = registry.get("nonconvex.clipped_sgd")
    assert e.name == "nonconvex.clipped_sgd"
    assert registry.BOUND_REGISTRY.module_of(e.name) == "dpbounds.bounds.nonconvex.clipped_sgd"
    assert "dpbounds.bounds.nonconvex.sensitivity_reduced" not in sys.modules
    assert "dpbounds.bounds.convex.noisy_projected_sgd" not in sys.modules
    assert not registry.BOUND_REGISTRY._discovered
    # control: listing still walks every module, and keeps the entry the lookup returned
    assert set(ORIGINS) <= {*registry.names(), *registry.aliases()}
    assert "dpbounds.bounds.nonconvex.sensitivity_reduced" in sys.modules
    assert registry.get("nonconvex.clipped_sgd") is e


@pytest.mark.parametrize("name", sorted(ORIGINS))
def test_a_lazy_lookup_answers_what_discovery_answers(name, fresh_registry, monkeypatch):
    # every id and alias, each looked up first in a fresh registry (ids from providers
    # outside the package, strongly_convex.heavy_ball_lmi, take the full discovery)
    _drop_bound_modules(monkeypatch)
    e = registry.get(name)
    assert e.name == ALIASES.get(name, name)
    assert registry.BOUND_REGISTRY.module_of(e.name) == ORIGINS[name]


def _theorem():
    from dpbounds.bounds.theorem import Theorem, sym
    from dpbounds.provenance import Provenance, Source

    return Theorem(name="t", quantity="q", expr=sym("d"),
                   sources=(Source("p", "r", Provenance.DERIVED),))


@pytest.mark.parametrize("looked_up", ["nonconvex.clipped_sgd", "strongly_convex.nag"])
def test_a_plugin_reusing_a_builtin_id_is_refused_at_lookup(looked_up, fresh_registry,
                                                            monkeypatch):
    # found already registered, but from outside the package: discovery runs, and refuses
    # it; so does a lookup of ANOTHER name (review: it answered lazily, and the plug-in
    # silently replaced the built-in): once a plug-in has registered, every lookup discovers
    _drop_bound_modules(monkeypatch)
    t = _theorem()
    entry = registry.Entry("nonconvex.clipped_sgd", "a", "nonconvex", t, t, dict)
    registry.BOUND_REGISTRY.register(entry.name, entry, rank=100, module="some_plugin")
    with pytest.raises(ValueError, match="registered twice: by module some_plugin"):
        registry.get(looked_up)
    # control: a plug-in's own id is answered (after the same discovery)
    registry.BOUND_REGISTRY.unregister("nonconvex.clipped_sgd")
    registry.BOUND_REGISTRY.register("nonconvex.plugin_only", entry, rank=100,
                                     module="some_plugin")
    assert registry.get("nonconvex.plugin_only") is entry


def test_an_unknown_name_is_looked_up_everywhere_before_the_error(fresh_registry, monkeypatch):
    _drop_bound_modules(monkeypatch)
    with pytest.raises(ValueError, match="did you mean 'nonconvex.clipped_sgd'"):
        registry.get("nonconvex.clipped_sdg")
    assert registry.BOUND_REGISTRY._discovered


def test_a_plugin_registering_before_the_builtin_is_imported_is_refused(fresh_registry,
                                                                       monkeypatch):
    # the other order: the built-in's module not imported yet (a lazy lookup imported
    # others); a registration from outside the package discovers first, so it is refused
    _drop_bound_modules(monkeypatch)
    registry.get("strongly_convex.nag")
    assert "dpbounds.bounds.nonconvex.clipped_sgd" not in sys.modules
    t = _theorem()
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(registry.Entry("nonconvex.clipped_sgd", "a", "nonconvex", t, t, dict))


def test_an_id_equal_to_an_alias_is_refused(fresh_registry):
    # review: an id equal to an alias was listed by names() and never returned by get()
    t = _theorem()
    registry.register(registry.Entry("convex.a", "a", "convex", t, t, dict,
                                     aliases=("convex.b",)))
    with pytest.raises(ValueError, match="'convex.b' is already an alias of 'convex.a'"):
        registry.register(registry.Entry("convex.b", "b", "convex", t, t, dict))


def test_a_lookup_that_misses_after_the_search_looks_again(fresh_registry, monkeypatch):
    # review: another thread's registration reorders `entries` (cleared, then refilled), so
    # the search can return while the name is briefly absent: get() looks again after a full
    # discovery (here the search is made to return without importing anything)
    _drop_bound_modules(monkeypatch)
    monkeypatch.setattr(registry.BOUND_REGISTRY, "find", lambda key, hint="": None)
    assert registry.get("nonconvex.clipped_sgd").name == "nonconvex.clipped_sgd"
