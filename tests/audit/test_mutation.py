"""Mutation testing: every algorithm's under-noised copy is flagged, the algorithm is not.

The mutant is the algorithm run inside :func:`dpbounds.audit.scaled_noise`: every noise
scale divided by 2 (Gaussian) or by √2 (Laplace) while the ledger still claims the
original ε. Its audit must certify ε above the claim; the real algorithm's audit, with the
same runs, must not. This is the negative control of the audit (an audit that flags
nothing, or everything, fails here) and the positive control of every calibration.

The claims are chosen where a halved noise is catchable at 10^4 runs per data set
(:mod:`dpbounds.audit.registry`); the measured margins are in the audit report of issue 12.
The add/remove defect of issue 8 item 1 (a mean over, and noise calibrated from, the private
dataset size) is kept as a re-created pre-fix variant that the audit must refute.
"""

from __future__ import annotations

import dataclasses

import pytest

from dpbounds.audit import AUDITS, audit

# every audit, the white-box tree audits at T = 3, 8 included: with the tight claim (the
# ledger's exact GDP reading) their halved copies are caught too; under the ledger's zCDP
# claim the K > T node charge left them just under it (2.86, 2.66 < 3 at 2 x 10^4 runs)
# The full-batch add/remove pairs (dp_sgd_full_batch, dp_nsgd_full_batch) are left out: their
# released gradients are the one-record pair's shifted by a constant, and their audits read
# the one-record audits' numbers (measured, seed 0, 20,000 runs: halved noise 5.4637 / 5.4431
# on both pairs; tests/audit/test_batched.py checks the correct runs' equality at --quick)
CASES = [(name, rel) for name, spec in AUDITS.items() for rel in spec.relations
         if not name.endswith("_full_batch")]
#: cases run at fewer runs (CI time), with the margins measured there (seeds 0-2): DP-AGD
#: add/remove at 10^4 runs: correct 2.28, 2.55, 2.62 and halved noise 5.53, 5.05, 5.50 against
#: the claim 3 (at 2 x 10^4: 62 s of the suite)
FEWER_RUNS = {("dp_agd", "add_remove"): 10_000}


@pytest.mark.slow
@pytest.mark.parametrize("name,relation", CASES)
def test_under_noised_copy_is_caught_and_the_algorithm_is_not(name, relation):
    spec = AUDITS[name]
    # null controls are checked in test_null.py and every quick audit: skipped here (CI time)
    # the tight claim's defaults are larger (ratio, not power)
    runs = min(spec.trials, FEWER_RUNS.get((name, getattr(relation, "value", relation)), 20_000))
    real = audit(name, relation, seed=0, null=False, trials=runs)
    mutant = audit(name, relation, seed=0, noise_factor=spec.mutant_factor, null=False,
                   trials=runs)
    assert real.claimed_epsilon == pytest.approx(mutant.claimed_epsilon, rel=1e-12)
    assert not real.violation, real
    assert mutant.violation, mutant
    assert mutant.epsilon_lower > real.epsilon_lower


def _pre_fix(function):
    """The algorithm as it was before issue 8 item 1: normalised by (and calibrated with) each
    data set's own, private size."""
    def run(objective, **kwargs):
        kwargs["public_n"] = objective.n
        return function(objective, **kwargs)
    return run


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dp_gd_gaussian", "dp_sgd", "dp_nsgd"])
def test_add_remove_private_n_defect_is_caught_and_the_fix_is_not(name, monkeypatch):
    # Issue 8 item 1 at the issue's claim (2, 1e-5): D = {+r e1} (n = 1), D' = D + {-r e1}.
    # The pre-fix pattern (mean over / sigma or sampling rate from the private n) is re-created
    # by passing each data set's own size as public_n: the audit must refute its claim
    # (measured on the pre-fix code: eps >= 5.09 for DP-GD, >= 3.64 for Poisson DP-SGD/NSGD).
    # Poisson DP-SGD / DP-NSGD at 15,000 runs (CI time; measured seeds 0-1: fixed 0.64-0.85,
    # pre-fix 4.62-5.24 against 2, 1.5 x 2 = 3 needed); DP-GD at its default
    runs = {"dp_sgd": 15_000, "dp_nsgd": 15_000}.get(name)
    fixed = audit(name, "add/remove", epsilon=2.0, delta=1e-5, seed=0, null=False, trials=runs)
    assert fixed.claimed_epsilon <= 2.0
    assert not fixed.violation, fixed
    spec = AUDITS[name]
    monkeypatch.setitem(AUDITS, name, dataclasses.replace(spec, function=_pre_fix(spec.function)))
    broken = audit(name, "add/remove", epsilon=2.0, delta=1e-5, seed=0, null=False, trials=runs)
    assert broken.violation, broken
    assert broken.epsilon_lower > 1.5 * broken.claimed_epsilon
