"""Issue 34 item 5 (round-2 adversary): the heavy-ball audits at momentum 0.8
(``dp_heavy_ball_momentum``) and in d = 4 (``dp_heavy_ball_d4``).

Oracle: the pure-DP claim eps = 2 (Kuru et al.'s calibration, the ledger's sum of the per-step
budgets); the correct runs must stay below it. Negative controls (bench/adversary_mutants_2.py's
mutants, re-written here): a momentum buffer fed the clean gradient (``hb_momentum_clean``:
released noise xi_t - beta xi_{t-1}, per-step sensitivity up to 1 + beta + beta^2) and the
Laplace scale calibrated with S_2 instead of S_1 (``laplace_l2``: eps x S_1/S_2 = 2 in d = 4)
must FAIL; on the default pair (beta 0.17, d = 1) neither is refuted."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpbounds.audit import audit
from dpbounds.audit.settings.laplace_momentum import HB_AUDIT_MOMENTUM
from dpbounds.backend import TrialRandom


@contextmanager
def _momentum_clean(beta: float) -> Iterator[None]:
    """Each stream's t-th Laplace draw replaced by xi_t - beta xi_{t-1} (the correct heavy
    ball's recursion with the noise kept out of its momentum buffer)."""
    laplace = TrialRandom.laplace
    prev: dict[int, tuple[Any, Any]] = {}

    def draw(self: Any, shape: Any = (), scale: Any = 1.0, **kw: Any) -> Any:
        xi = laplace(self, shape, scale, **kw)
        last = prev.get(id(self))
        prev[id(self)] = (self, xi)
        return xi if last is None else xi - beta * last[1]

    TrialRandom.laplace = draw  # type: ignore[method-assign]
    try:
        yield
    finally:
        TrialRandom.laplace = laplace  # type: ignore[method-assign]


@contextmanager
def _l2_calibrated() -> Iterator[None]:
    mom = importlib.import_module("dpbounds.algorithms.momentum")
    inner = mom.laplace_momentum_method

    def method(objective: Any, *, kind: str, sensitivity: Any = None, **kw: Any) -> Any:
        if sensitivity is None:
            sensitivity = float(objective.l2_sensitivity)
        return inner(objective, kind=kind, sensitivity=sensitivity, **kw)

    mom.laplace_momentum_method = method
    try:
        yield
    finally:
        mom.laplace_momentum_method = inner


def test_momentum_clean_buffer_is_caught_at_momentum_08() -> None:
    """Measured (seed 0, 10,000 runs): correct 1.613, the mutant 2.469 against 2; on the
    default pair (beta 0.172) the mutant reads 1.837."""
    ok = audit("dp_heavy_ball_momentum", "replace_one", seed=0, null=False)
    assert ok.status == "PASS" and 1.4 < ok.epsilon_lower <= ok.claimed_epsilon, ok
    with _momentum_clean(HB_AUDIT_MOMENTUM):
        bad = audit("dp_heavy_ball_momentum", "replace_one", seed=0, null=False)
    assert bad.status == "FAIL" and bad.epsilon_lower > bad.claimed_epsilon, bad


def test_l2_calibration_is_caught_in_d4_not_in_d1() -> None:
    """Measured (seed 0, 10,000 runs): correct 0.775, the mutant 2.133 against 2 in d = 4;
    on the default d = 1 pair the mutant is the correct run (S_1 = S_2)."""
    kw = dict(seed=0, null=False, trials=10_000)
    ok = audit("dp_heavy_ball_d4", "replace_one", **kw)
    assert ok.status == "PASS" and 0.5 < ok.epsilon_lower <= ok.claimed_epsilon, ok
    ref = audit("dp_heavy_ball", "replace_one", seed=0, null=False, trials=2000)
    with _l2_calibrated():
        bad = audit("dp_heavy_ball_d4", "replace_one", **kw)
        one_d = audit("dp_heavy_ball", "replace_one", seed=0, null=False, trials=2000)
    assert bad.status == "FAIL" and bad.epsilon_lower > bad.claimed_epsilon, bad
    assert one_d.epsilon_lower == ref.epsilon_lower and one_d.status == "PASS"
