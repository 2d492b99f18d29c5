"""Issue 34 (round-2 adversary, ``noise_over_n``): noise on the batch mean sigma / n instead of
sigma / B (mu x n / B) is refuted by the batched add/remove audit, whose claim is the PLD
accountant's (tight: the correct run certifies 0.89-0.93 of it at the default runs); against
the replace-one batched audit's claim of the time (RDP of sampling without replacement; the
correct run certified eps 0.689, 0.23 of it) the mutated mechanism was within the claim (its
exact eps 2.25 < 3, bench/adversary_results_2.md; that claim is now the PLD's, not re-measured
for this mutant), and the one-record pairs (n = B) cannot see the bug.

Oracle: the claim (PLD reading of the ledger, 3). Negative controls: the bug (re-written here
as a monkeypatch of the calibration's noise, as bench/adversary_mutants_2.py's
``noise_over_n``) must FAIL on ``dp_sgd_batched`` add/remove (public n = 4, B = 2: mu x 2),
and is bit for bit the correct run on ``dp_sgd``'s one-record add/remove pair (n = B = 1)."""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

import pytest

from dpbounds.audit import audit

_KW: dict[str, Any] = dict(seed=0, trials=2000, null=False)


def _noise_over_n(monkeypatch: pytest.MonkeyPatch) -> None:
    sgd = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module
    inner = sgd.noisy_sgd_noise

    def noise(*a: Any, batch_size: int, n: int, **k: Any) -> Any:
        out = inner(*a, batch_size=batch_size, n=n, **k)
        # the run divides the sum's std by B: sigma B / n / B = sigma / n on the mean
        return replace(out, noise_std=tuple(s * batch_size / n for s in out.noise_std))

    monkeypatch.setattr(sgd, "noisy_sgd_noise", noise)


def test_noise_over_n_is_refuted_by_the_batched_add_remove_audit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured (seed 0, 2000 runs): correct 2.100, noise_over_n 3.937 against 3 (mu 1.885
    against the correct run's ~1.18; default runs, seeds 0 / 7 / 8: 6.262 / 6.433 / 6.025,
    correct 2.804 / 2.667 / 2.729); on the one-record pair both read 2.131."""
    ok = audit("dp_sgd_batched", "add_remove", **_KW)
    ref = audit("dp_sgd", "add_remove", **_KW)
    assert ok.status == "PASS" and ok.claim_accountant == "pld", ok
    assert 0.5 * ok.claimed_epsilon < ok.epsilon_lower <= ok.claimed_epsilon, ok
    _noise_over_n(monkeypatch)
    bad = audit("dp_sgd_batched", "add_remove", **_KW)
    one = audit("dp_sgd", "add_remove", **_KW)
    assert bad.status == "FAIL" and bad.epsilon_lower > bad.claimed_epsilon, bad
    assert bad.claimed_epsilon == ok.claimed_epsilon  # the ledger is unchanged
    assert one.epsilon_lower == ref.epsilon_lower and one.status == "PASS", (one, ref)
