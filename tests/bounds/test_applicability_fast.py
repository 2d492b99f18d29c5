"""``BoundEntry.applicability`` answers "holds" from the compiled assumption check that
``evaluate`` uses and asks sympy only about what that check rejects (speed: a notebook's first
draw). The oracle is the old, sympy-only reading (the compiled check switched off): the same
answer at problems across every registered bound's range, violating ones included, and a
check that always says "holds" changes the answers (control)."""

from __future__ import annotations

import itertools

import pytest

from dpbounds.bounds import registry
from dpbounds.bounds.problem import DEFAULT_PROBLEM
from dpbounds.bounds.theorem.evaluation import EvaluationMixin

EXTRA = {"strongly_convex": dict(mu=0.05, S1=1.0, max_horizon=300),
         "quadratic": dict(mu=0.05, S1=1.0, max_horizon=300), "convex": dict(mu=0.05)}
GRID = dict(d=(1.0, 1e7), N=(2.0, 1e12), eps=(1e-3, 50.0))


def _problems(entry):
    base = {**DEFAULT_PROBLEM, **EXTRA.get(entry.problem_class, {})}
    for d, n, eps in itertools.product(*GRID.values()):
        yield dict(base, d=d, N=n, eps=eps)
    for key in ("delta", "G", "L", "R", "mu"):  # one input at a time far out of range
        if key in base:
            for v in (1e-12, 1e12):
                yield dict(base, **{key: v})


def _answers():
    out = []
    for name in registry.names():
        entry = registry.get(name)
        for p in _problems(entry):
            try:
                why = entry.applicability(p)
            except ValueError as exc:  # an input outside its valid range: the same both ways
                why = f"ValueError: {exc}"
            out.append((name, tuple(sorted(p.items())), why))
    return out


@pytest.mark.slow
def test_compiled_check_gives_sympys_answers(monkeypatch):
    fast = _answers()
    assert sum(a is None for *_, a in fast) > 30  # control: problems where bounds apply,
    assert sum(a is not None and "fails" in a for *_, a in fast) > 10  # and where they do not
    monkeypatch.setattr(EvaluationMixin, "_assumption_holds_at", lambda self, i, v: False)
    assert _answers() == fast
    monkeypatch.setattr(EvaluationMixin, "_assumption_holds_at", lambda self, i, v: True)
    assert _answers() != fast  # control: a check that never rejects is seen
