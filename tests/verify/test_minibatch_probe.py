"""Stop 68: the Laplace studies' mini-batch probe (``laplace_transcript_checks`` with ``n``).

The studies run the full batch, where Kuru et al.'s per-batch sensitivity S_1/m is S_1/n
and the amplification by sampling is 1: an independent adversary's mutants (the scale from
S_1/n, eq. (27) as printed; amplification applied twice) ran bit for bit the correct code
there and passed every study. The probe runs m = n/10 under the same claim and
re-accounts its transcript (``dpbounds.verify.reaccount.laplace_epsilon``, written without
``dpbounds.privacy``), and compares the run's ledger with that re-accounting.

Oracles: the re-accounting's closed form; the mutants are written here (patching the
privacy helpers from outside), not taken from the package's mutant list.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import dpbounds.algorithms.momentum as momentum
from dpbounds.privacy import laplace as laplace_module
from dpbounds.privacy.mechanisms import SubsampledLaplaceMechanism
from dpbounds.verify import scaling_study

KW = dict(vary={"N": [300, 1000]}, trials=20, replicates=50, seed=11)
STUDIES = ("strongly_convex.heavy_ball", "strongly_convex.nag", "strongly_convex.masg")


def _rows(res, name: str) -> list[bool]:
    return [v.holds for v in res.verdicts if v.case.split(" (")[0] == f"{name} over N"]


@contextlib.contextmanager
def _sensitivity_over_n(monkeypatch: pytest.MonkeyPatch):
    """S_1/n in place of S_1/m: the scales of the uniform budgets and the ledger's mechanism
    (the optimal allocations compute their scales elsewhere; their ledger still reads it)."""
    original_scales = momentum.laplace_scales_for_budgets
    original_kuru = SubsampledLaplaceMechanism.kuru.__func__

    def scales(S1, budgets, n, m):  # noqa: ANN001, ANN202
        return original_scales(S1 * m / n, budgets, n, m)

    def kuru(cls, sensitivity_function, scale, n, m):  # noqa: ANN001, ANN202
        return original_kuru(cls, sensitivity_function * m / n, scale, n, m)

    monkeypatch.setattr(momentum, "laplace_scales_for_budgets", scales)
    monkeypatch.setattr(SubsampledLaplaceMechanism, "kuru", classmethod(kuru))
    yield


@pytest.mark.parametrize("study", STUDIES)
def test_correct_runs_pass_the_minibatch_rows(study: str) -> None:
    res = scaling_study(study, **KW)
    for name in ("minibatch_reaccount", "minibatch_spent", "reaccount", "spent"):
        rows = _rows(res, name)
        assert rows and all(rows), (name, rows)


@pytest.mark.parametrize("study", STUDIES)
def test_sensitivity_over_n_fails_the_minibatch_rows_only(study: str, monkeypatch) -> None:
    with _sensitivity_over_n(monkeypatch):
        res = scaling_study(study, **KW)
    assert not all(_rows(res, "minibatch_reaccount") + _rows(res, "minibatch_spent"))
    # the full batch cannot see it (S_1/n is S_1/m there): what the probe adds
    assert all(_rows(res, "reaccount")) and all(_rows(res, "spent"))
    assert not res.holds


def test_amplification_twice_fails_the_minibatch_reaccount(monkeypatch) -> None:
    original = laplace_module.log1p_times_expm1

    def twice(x, r):  # noqa: ANN001, ANN202
        return original(original(x, r), r)

    # the per-step eps0 of the uniform budgets' scales, amplified twice
    monkeypatch.setattr(laplace_module, "log1p_times_expm1", twice)
    res = scaling_study("strongly_convex.heavy_ball", **KW)
    assert not all(_rows(res, "minibatch_reaccount"))
    assert all(_rows(res, "reaccount"))  # m = n: log1p_times_expm1(x, 1) is x either way


def test_the_probe_samples_a_tenth_of_the_data() -> None:
    from dpbounds.verify.studies._common import MINIBATCH_FRACTION, laplace_transcript_checks

    seen = []

    def run(tr, m, k):  # noqa: ANN001, ANN202
        seen.append((m, k))
        from dpbounds.objectives import QuadraticObjective

        rng = np.random.default_rng(0)
        off = rng.uniform(-1, 1, (50, 3))
        f = QuadraticObjective(np.array([0.5, 1.0, 2.0]), offsets=off - off.mean(0), seed=0)
        return momentum.dp_heavy_ball(f, epsilon=1.0, steps=5, batch_size=m, trials=k, seed=0,
                                      trace=None, transcript=tr)

    rows = laplace_transcript_checks(run, None, "dp_heavy_ball", {"eps": 1.0}, n=50)
    assert MINIBATCH_FRACTION == 0.1 and seen == [(None, 2), (5, 2)]
    assert "minibatch_reaccount" in rows and "spent" in rows
