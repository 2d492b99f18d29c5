"""The sampling tests' power is data, and a study whose sampling test lacks power is
INCONCLUSIVE, never PASS (issue 34's known gap).

Oracles: the smallest run length that powers the overlap test against a cyclic order, in
closed form from the hypergeometric law of the overlap (scipy.stats.hypergeom's mean and
variance, not the module's formula); an actual cyclic order at that length is rejected (the
power claimed is real); random uniform batches there are not. Negative controls: the
cyclic-batches mutant FAILs (exit status 1) also where the sampling test is underpowered,
and a synthetic failing, underpowered row fails rather than being counted inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import stats

from dpbounds.verify.sampling import sampling_verdicts
from dpbounds.verify.study import _exact_verdicts

N, BATCH, LEVEL = 100, 1, 1e-3 / 2  # without replacement: two tests at alpha / 2 each


def _transcript(idx: np.ndarray) -> dict:
    return dict(indices=idx, n=N, batch_size=BATCH, steps=idx.shape[1], trials=idx.shape[0],
                sampling="without_replacement", sampling_rate=BATCH / N)


def _uniform(trials: int, steps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([[rng.choice(N, BATCH, replace=False) for _ in range(steps)]
                     for _ in range(trials)])


def _cyclic(trials: int, steps: int) -> np.ndarray:
    t = np.arange(steps)
    one = (t[:, None] * BATCH + np.arange(BATCH)[None, :]) % N
    return np.broadcast_to(one, (trials, steps, BATCH)).copy()


def _overlap_steps(trials: int) -> int:
    """Closed form: a cyclic order has overlap 0, so its z is -sqrt(pairs) mean / sd; the
    smallest T with sqrt(trials (T - 1)) mean / sd > z_{level/2}."""
    h = stats.hypergeom(N, BATCH, BATCH)
    need = (stats.norm.isf(LEVEL / 2) * math.sqrt(h.var()) / h.mean()) ** 2
    return math.floor(need / trials) + 2  # trials (T - 1) > need


def test_power_is_data_and_names_the_smallest_run() -> None:
    trials = 3
    t_need = _overlap_steps(trials)
    assert t_need == 401  # the value the study reports below
    short = sampling_verdicts(_transcript(_uniform(trials, t_need - 1, 0)))
    overlap = [v for v in short if v.case.startswith("overlap")][0]
    assert overlap.holds and overlap.power == 0.0 and not overlap.powered
    assert f"T >= {t_need} steps ({trials} trials)" in overlap.needs
    enough = sampling_verdicts(_transcript(_uniform(trials, t_need, 1)))
    assert all(v.holds and v.powered and v.power == 1.0 and not v.needs for v in enough)
    # the power claimed at t_need is real: an actual cyclic order there is rejected
    cyc = sampling_verdicts(_transcript(_cyclic(trials, t_need)))
    assert not [v for v in cyc if v.case.startswith("overlap")][0].holds


def _records(power: float, value: float) -> list[dict]:
    check = dict(kind="transcript", exact=1.0, sd=None, rtol=0.0, oracle="synthetic",
                 energy=False, power=power, power_needed=0.8, needs="T >= 7 steps would")
    return [{"checks": {"sampling": check}, "c:sampling": np.array([value]),
             "params": {"T": 5}}]


def test_verdict_combination_on_synthetic_rows() -> None:
    """A holding row below the power threshold is unpowered with its 'what would decide';
    above it, powered; a failing row below it still fails (negative control)."""
    (low,) = _exact_verdicts("s", "T", _records(0.5, 0.2))
    assert low.holds and not low.powered and low.power == 0.5
    assert low.needs == "at T = 5: T >= 7 steps would"
    (high,) = _exact_verdicts("s", "T", _records(0.9, 0.2))
    assert high.holds and high.powered and high.needs == ""
    (bad,) = _exact_verdicts("s", "T", _records(0.5, 3.0))
    assert bad.failed and not bad.powered


def test_study_inconclusive_when_underpowered_pass_when_powered_mutant_fails() -> None:
    """yang.sgd at 16 trials: T = 100 is below the cyclic-order power of the inclusion-count
    test (INCONCLUSIVE, with the T that would decide); T = 300 PASSes; the cyclic-batches
    mutant at T = 100 FAILs. The quick grid's bound is vacuous (INCONCLUSIVE on its own),
    so the utility bound is replaced by 1e-9 to isolate the power logic. Without the power
    rule the T = 100 study would PASS."""
    from dpbounds.verify import scaling_study

    kw = dict(vary={"d": [2, 4]}, trials=16, replicates=50)

    def informative(r):
        return replace(r, bound={c: np.full_like(b, 1e-9) for c, b in r.bound.items()})

    def sampling(r):
        return [v for v in r.verdicts if v.case == "sampling over d"][0]

    low = informative(scaling_study("yang.sgd", fixed={"T": 100}, **kw))
    # its drawn-energy check is short of trials too at T = 100: mark it powered, so that
    # the sampling row alone decides the status
    low = replace(low, verdicts=tuple(replace(v, powered=True, needs="")
                                      if v.case.startswith("drawn") else v
                                      for v in low.verdicts))
    assert low.status == "INCONCLUSIVE" and sampling(low).power == 0.0
    (why,) = low.inconclusive
    assert why.startswith("sampling over d: power 0.00 < 0.8 against a cyclic order; T >= ")
    assert low.to_json()["verdicts"][[v.case for v in low.verdicts].index("sampling over d")][
        "power"] == 0.0
    ok = informative(scaling_study("yang.sgd", fixed={"T": 300}, **kw))
    assert ok.status == "PASS" and sampling(ok).power == 1.0 and sampling(ok).powered
    bad = informative(scaling_study("yang.sgd", fixed={"T": 100}, mutation="cyclic_batches",
                                    **kw))
    assert bad.status == "FAIL" and not sampling(bad).holds


def test_cli_cyclic_mutant_exits_1() -> None:
    """``verify yang.sgd --quick --mutation cyclic_batches`` exits 1 (the quick study's
    sampling power is 1.00 against a cyclic order); correct code does not exit 1."""
    from dpbounds.cli import main

    assert main(["verify", "yang.sgd", "--quick", "--mutation", "cyclic_batches",
                 "--json"]) == 1


def test_transcript_check_carries_power_and_fails_malformed_batches() -> None:
    """The study's ``sampling`` check from a real DP-SGD transcript (n = 64, B = 8, T = 100,
    2 trials) carries the weakest test's power (1.0 here: both tests reject a cyclic order at
    this length) and the threshold; a sample used twice in one step (malformed batches: no
    p-value, no power) makes the check fail (negative control; it read level/p = 0 before)."""
    from dpbounds.algorithms import dp_sgd
    from dpbounds.algorithms._transcript import Transcript
    from dpbounds.verify.problems import problem
    from dpbounds.verify.reaccount import transcript_checks

    inst = problem("huber_well").build(64, 3, seed=0)
    tr = Transcript()
    dp_sgd(inst.objective, epsilon=1.0, delta=1e-5, steps=100, batch_size=8, step_size=0.05,
           clip_threshold=0.5, trials=2, seed=0, x0=inst.x0, transcript=tr)
    d = tr.as_dict()
    ok = transcript_checks(d, epsilon=1.0, delta=1e-5)["sampling"]
    assert ok["power"] == 1.0 and ok["power_needed"] == 0.8 and ok["needs"] == ""
    assert ok["values"].max() <= ok["exact"]
    idx = np.array(d["indices"], copy=True)
    idx[0, 0, 1] = idx[0, 0, 0]
    bad = transcript_checks(dict(d, indices=idx), epsilon=1.0, delta=1e-5)["sampling"]
    assert bad["values"].max() > bad["exact"]
