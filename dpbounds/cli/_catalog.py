"""What the command line shows before it imports the library: a generated catalog.

``dpbounds COMMAND --help``, ``--list`` and a mistyped name must answer in a fraction of a
second, but the registries they describe (bounds, verify studies, audits) are filled by
importing every module of their packages, which pulls in scipy, sympy, cvxpy, numba and
dp-accounting (seconds). So the names, one-line descriptions, choices and relations the CLI
shows are declared once here, in ``catalog.json`` next to this module, **generated** from the
registries::

    python -m dpbounds.cli._catalog --write

``tests/test_cli_lazy.py`` rebuilds the catalog from the live registries and compares it with
the file, so the two cannot drift (a result added without regenerating fails that test).

The live registries are read instead when they are already imported (a plug-in loaded before
the command, or a test process) or when a ``dpbounds.plugins`` entry point is installed: they
may then hold results the file does not.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["build", "load", "names", "rows", "use_static"]

PATH = Path(__file__).with_name("catalog.json")

#: the module whose import fills each registry (if it is in ``sys.modules`` the live one is
#: read: it is as cheap as the file and may hold more)
#: (the bound registry's module, not the package: ``dpbounds.bounds.problem``, which the early
#: checks import, brings the package in but fills no registry)
_LIVE = {"verify": "dpbounds.verify", "audit": "dpbounds.audit",
         "mutants": "dpbounds.audit", "bound": "dpbounds.bounds.registry",
         "problem": "dpbounds.verify"}


def _verify_rows() -> list[dict[str, Any]]:
    from dpbounds.extend import origin
    from dpbounds.verify import STUDIES

    return [dict(theorem=s.theorem, aliases=list(s.entry.aliases),
                 components=list(s.components), fixed=dict(s.fixed),
                 grids={k: list(v[0]) for k, v in s.defaults.items()}, notes=s.notes,
                 origin=origin(s.theorem), provenance=str(s.entry.tuned.provenance),
                 problems=list(s.fitting_problems()), algorithms=list(s.algorithms),
                 unread=list(s.unread))
            for s in STUDIES.values()]


def _problem_rows() -> list[dict[str, Any]]:
    from dpbounds.extend import origin
    from dpbounds.verify.problems import describe, kinds

    return [dict(name=k, problem_class=describe(k)[0], description=describe(k)[1],
                 origin=origin(f"problem:{k}")) for k in kinds()]


#: the ε at which an audit's features per run are probed for the catalog (times its own ε):
#: a count that is the same at all of them is recorded, one that moves with ε (multi-stage
#: NAG's stages) is not, and the CLI then leaves the memory refusal to the library
_FEATURE_EPSILONS = (1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0, 1e3)


def _audit_features() -> dict[str, dict[str, dict[str, int | None]]]:
    """``{audit: {relation: {noise: features per run, or None where they depend on ε}}}`` at
    each audit's own δ (``audit --trials N``'s memory refusal, said before the imports; the
    built-in audits only: a plug-in's are read live)."""
    from dpbounds.audit.registry import AUDITS, RELEASE_AUDITS, grid_audit_names
    from dpbounds.audit.runner import feature_count

    grid = grid_audit_names()
    out: dict[str, dict[str, dict[str, int | None]]] = {}
    for name, spec in {**AUDITS, **RELEASE_AUDITS}.items():
        out[name] = {}
        for rel in spec.relations:
            out[name][rel.value] = {}
            for noise in ("float", "grid") if name in grid else ("float",):
                ks = {feature_count(spec, rel, f * spec.epsilon, spec.delta, noise)
                      for f in _FEATURE_EPSILONS}
                out[name][rel.value][noise] = ks.pop() if len(ks) == 1 else None
    return out


def _audit_rows() -> list[dict[str, Any]]:
    from dpbounds.audit.registry import AUDITS, RELEASE_AUDITS
    from dpbounds.extend import origin

    return [dict(algorithm=s.name, relations=[r.value for r in s.relations], epsilon=s.epsilon,
                 delta=s.delta, mutant_noise_factor=s.mutant_factor, trials=s.trials,
                 description=s.description, in_all=name in AUDITS, origin=origin(s.name))
            for name, s in {**AUDITS, **RELEASE_AUDITS}.items()]


def _mutant_rows() -> list[dict[str, Any]]:
    from dpbounds.audit.mutation import MUTANTS
    from dpbounds.audit.registry import AUDITS

    return [dict(name=m.name, description=m.description, source=m.source,
                 applies_to=[f"{n} ({r.value})" for n, s in AUDITS.items() for r in s.relations
                             if m.applies(s, r)]) for m in MUTANTS.values()]


def _bound_rows() -> list[dict[str, Any]]:
    from dpbounds.bounds import registry
    from dpbounds.extend import origin

    return [{"name": e.name, "problem_class": e.problem_class, "kind": e.kind,
             "title": e.title, "aliases": list(e.aliases),
             "provenance": str(e.tuned.provenance), "requires": list(e.requires),
             "numeric": bool(e.numeric), "origin": origin(e.name)} for e in registry.entries()]


class _Reads(Mapping[str, Any]):
    """A problem that records every key a bound's ``to_params`` asks for (read, ``get`` or
    ``in``, present or not); iterating it counts as reading every key."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return self._data.get(key, default)

    def __iter__(self) -> Iterator[str]:
        self.asked.update(self._data)
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


#: a valid value of each key a bound may require (the catalog reads the bound's parameters at
#: the default problem with these added)
_REQUIRED_SAMPLE = {"mu": 0.1, "S1": 1.0}


def _bound_facts() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per registered bound: the problem keys its parameters read (``bound NAME --flag`` on
    one it does not read is refused before the imports, as ``Entry.unread`` refuses it), and
    the names ``tune bound NAME --over/--range`` accepts (as ``search_bound`` checks them).
    ``tests/test_edges_stop76.py`` checks both against the library at random problems."""
    from dpbounds.bounds import registry
    from dpbounds.bounds.problem import DEFAULT_PROBLEM

    reads: dict[str, list[str]] = {}
    hyper: dict[str, list[str]] = {}
    for e in registry.entries():
        problem = _Reads({**DEFAULT_PROBLEM, **{k: _REQUIRED_SAMPLE[k] for k in e.requires}})
        params = e.to_params(problem)
        reads[e.name] = sorted(problem.asked)
        th = e.theorem
        chosen = () if e.numeric else (getattr(th, "hyperparameters", None) or {})
        hyper[e.name] = sorted({*e.tunable, *chosen,
                                *(getattr(th, "parameters", None) or ())} - set(params))
    return reads, hyper


_ROWS = {"verify": _verify_rows, "audit": _audit_rows, "mutants": _mutant_rows,
         "bound": _bound_rows, "problem": _problem_rows}


def build() -> dict[str, Any]:
    """The catalog computed from the live registries and constants (imports everything)."""
    import attr
    import dp_accounting

    from dpbounds.audit.mutation import MAX_NOISE_FACTOR
    from dpbounds.audit.runner import (
        _BASE_BYTES,
        _BYTES_PER_VALUE,
        MAX_TRIALS,
        MEMORY_BUDGET_GB,
        MIN_TRIALS,
    )
    from dpbounds.bounds.compare import _COMPARED
    from dpbounds.bounds.problem import DEFAULT_PROBLEM, PROBLEM_QUANTITIES
    from dpbounds.bounds.strongly_convex.noise_allocation import MAX_HORIZON
    from dpbounds.privacy import Neighbouring
    from dpbounds.privacy.accountants import ACCOUNTANTS
    from dpbounds.privacy.events import MAPPED_EVENTS
    from dpbounds.verify import MUTATIONS, PROBLEMS, VARIABLES
    from dpbounds.verify.mutants import MUTATION_ALGORITHMS
    from dpbounds.verify.replay import REPLAY_MUTATIONS, REPLAYS

    # in declaration order: the named-tuple form (to_named_tuple) lists the values so
    events = {name: [f.name for f in attr.fields(cls)]
              for name, cls in sorted(vars(dp_accounting.dp_event).items())
              if isinstance(cls, type) and issubclass(cls, dp_accounting.DpEvent)
              and attr.has(cls)}
    reads, hyper = _bound_facts()
    required = {name: [f.name for f in attr.fields(getattr(dp_accounting.dp_event, name))
                       if f.default is attr.NOTHING] for name in events}
    return {
        "constants": {
            # dp_accounting's event classes and their fields in declaration order (privacy
            # compose --from-dp-event refuses an unknown class or field before importing
            # dp_accounting, and reads the named-tuple form)
            "dp_event_fields": events,
            # the fields without a default (a missing one is refused before the imports)
            "dp_event_required": {k: v for k, v in required.items() if v},
            # the events dpbounds has no mechanism for (refused before the imports)
            "dp_event_unmapped": sorted(set(events) - set(MAPPED_EVENTS)),
            "verify_variables": list(VARIABLES), "verify_problems": list(PROBLEMS),
            "verify_mutations": list(MUTATIONS),
            "verify_mutation_algorithms": {k: list(v) for k, v in MUTATION_ALGORITHMS.items()},
            "replay_algorithms": list(REPLAYS), "replay_mutations": list(REPLAY_MUTATIONS),
            "relations": [m.value for m in Neighbouring],
            # privacy compose --accountant's names (refused before the accountants' imports)
            "accountants": list(ACCOUNTANTS),
            "audit_memory_budget_gb": MEMORY_BUDGET_GB,
            # memory_estimate's model: base bytes, bytes per stored feature value and run
            "audit_memory_model": [_BASE_BYTES, _BYTES_PER_VALUE],
            "audit_features": _audit_features(),
            "audit_trials": [MIN_TRIALS, MAX_TRIALS],
            "audit_max_noise_factor": MAX_NOISE_FACTOR,
            "default_problem": dict(DEFAULT_PROBLEM),
            "problem_quantities": dict(PROBLEM_QUANTITIES),
            "max_horizon": MAX_HORIZON,
            # per bound: the problem keys its parameters read, and its tunable names
            "bound_reads": reads, "bound_hyperparameters": hyper,
            # the bound classes `compare` compares for each problem class
            "compared_classes": {k: list(v) for k, v in _COMPARED.items()},
        },
        "rows": {kind: make() for kind, make in _ROWS.items()},
    }


@functools.cache
def load() -> dict[str, Any]:
    """The catalog as generated (``catalog.json``)."""
    with PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


def constant(name: str) -> Any:
    """A constant of the catalog (``"verify_variables"``, ``"relations"``, ...)."""
    return load()["constants"][name]


@functools.cache
def _plugins_installed() -> bool:
    from importlib.metadata import entry_points

    return bool(entry_points(group="dpbounds.plugins"))


def use_static(kind: str) -> bool:
    """Whether the file may stand for the live registry of ``kind``: it is not imported yet
    and no plug-in package is installed."""
    return _LIVE[kind] not in sys.modules and not _plugins_installed()


def rows(kind: str) -> list[dict[str, Any]]:
    """The ``--list`` rows of ``kind`` (``"verify"``, ``"audit"``, ``"mutants"``,
    ``"bound"``, ``"problem"``: the verification problems, a plug-in's too): from the file
    when :func:`use_static`, else from the live registry."""
    return load()["rows"][kind] if use_static(kind) else _ROWS[kind]()


def names(kind: str) -> dict[str, str] | None:
    """Every name the command accepts for ``kind`` -> the canonical one (aliases included),
    or ``None`` when the live registry must be asked (see :func:`use_static`)."""
    if not use_static(kind):
        return None
    key = {"verify": "theorem", "audit": "algorithm", "bound": "name"}[kind]
    out: dict[str, str] = {}
    for r in load()["rows"][kind]:
        out[r[key]] = r[key]
        out.update({a: r[key] for a in r.get("aliases", ())})
    return out


def _write() -> None:
    text = json.dumps(build(), indent=1, allow_nan=False) + "\n"
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m dpbounds.cli._catalog --write")
    _write()
