"""Issue 34 item 4: every clipped or normalised algorithm is checked where its clip binds.

Oracle: the clipped (normalised) mean gradient from the Huber well's definition in NumPy
(``huber_sample_grads``), a hand-computed value for Algorithm 1's probe; negative control: the
``skip_clipping`` mutant (no clip, no normalisation) fails each probe and the study (exit 1)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.verify import scaling_study
from dpbounds.verify.problems import problem
from dpbounds.verify.studies._common import huber_sample_grads
from dpbounds.verify.studies.normalized_and_clipped_sgd import CLIP_BINDING_MIN
from dpbounds.verify.studies.tree_momentum import tree_clip_probe


def _z(check: dict) -> float:
    v = check["values"]
    se = float(v.std(ddof=1) / np.sqrt(v.size))
    return abs(float(v.mean()) - check["exact"]) / max(se, 1e-300)


def test_huber_sample_grads_match_the_objective() -> None:
    """Second method: the objective's own per-sample gradients (not used by the probes)."""
    inst = problem().build(50, 3, seed=1)
    f = inst.objective
    x = np.array([0.4, -0.2, 1.7])  # some samples in the linear zone, some in the quadratic
    mine = huber_sample_grads(f.offsets_np, inst.G, inst.L, x)
    theirs = np.asarray(f.sample_grads(f.initial_state(1, x)))[0]
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)


def test_alg1_probe_oracle_by_hand() -> None:
    """The probe's design: gradients +0.75 G e1 on 30% and -0.25 G e1 on 70%; the clip at
    0.3 G binds on exactly 30% and flips the mean from +0.05 G to -0.085 G (by hand)."""
    offsets = np.zeros((200, 2))
    offsets[:60, 0], offsets[60:, 0] = -0.7, 0.3
    g = huber_sample_grads(offsets, 1.0, 1.0, np.array([0.05, 0.0]))
    gn = np.linalg.norm(g, axis=1)
    assert np.mean(gn > 0.3) == pytest.approx(0.3)
    assert g.mean(axis=0)[0] == pytest.approx(0.05)
    clipped = (g * np.minimum(1.0, 0.3 / gn)[:, None]).mean(axis=0)
    assert clipped[0] == pytest.approx(0.3 * 0.3 - 0.7 * 0.25)


@pytest.mark.parametrize("algorithm,d,eps", [
    ("tree_momentum_nsgd", 1, 8.0), ("tree_momentum_nsgd", 4, 0.5),
    ("sensitivity_reduced_nsgd", 1, 8.0), ("sensitivity_reduced_nsgd", 4, 0.5)])
def test_tree_probes_pass_correct_code_and_catch_no_clipping(algorithm: str, d: int,
                                                             eps: float) -> None:
    """Algorithms 1 and 2 (its one probe step lies in the first epoch, noise sigma_1): the
    mean direction of the step matches the Monte Carlo oracle of the clipped mean within 3
    s.e. on an unseen seed; without clipping it takes the raw mean's opposite sign."""
    inst = problem().build(100, d, seed=0)
    point = {"eps": eps, "delta": 1e-5, "d": d, "N": 100}
    ok, params = tree_clip_probe(point, inst, 0.05, 7, None, algorithm)
    assert params["clip_binding_fraction"] >= CLIP_BINDING_MIN
    assert _z(ok) <= 3.0 or abs(ok["values"].mean() - ok["exact"]) <= 1e-9
    bad, _ = tree_clip_probe(point, inst, 0.05, 7, "skip_clipping", algorithm)
    # the unclipped step follows the raw mean: the opposite sign (measured z ~ 1e2 .. 1e17)
    assert bad["values"].mean() > 0 > ok["exact"] and _z(bad) > 20


@pytest.mark.parametrize("theorem,key", [("yang.sgd", "clip"), ("yang.nsgd", "normalise")])
def test_yang_probes_bind_and_catch_no_clipping(theorem: str, key: str) -> None:
    """At the study's own r (DP-NSGD) and C_p = median / 2 (DP-SGD), eps = 0.5: the probe
    holds on correct code and fails without the clip / normalisation (measured, seed 0, eps
    0.5 and 2: correct code within 1.0 s.e.; the mutant's gap is 21 / 38 s.e. (clip) and
    11 / 23 s.e. (normalise); binding fraction 1.0)."""
    kw = dict(vary={"eps": [0.5, 2.0]}, fixed={"T": 300}, trials=3, replicates=50)
    ok = scaling_study(theorem, **kw)
    bad = scaling_study(theorem, mutation="skip_clipping", **kw)

    def probe(res):  # type: ignore[no-untyped-def]
        (v,) = [v for v in res.verdicts if v.case.startswith(f"{key}_exact")]
        return v

    assert probe(ok).holds and not probe(bad).holds and bad.status == "FAIL"
    assert all(p[f"{key}_binding_fraction"] >= CLIP_BINDING_MIN for p in ok.params)


def test_skip_clipping_fails_the_alg1_study_correct_code_passes() -> None:
    kw = dict(vary={"d": [1, 4]}, fixed={"N": 200}, trials=4, replicates=50)
    ok = scaling_study("tran_cutkosky.alg1", **kw)
    bad = scaling_study("tran_cutkosky.alg1", mutation="skip_clipping", **kw)
    probe = [v for v in ok.verdicts if v.case.startswith("clip_exact")]
    assert probe and all(v.holds for v in probe)
    assert not [v for v in bad.verdicts if v.case.startswith("clip_exact")][0].holds
    assert any(v.failed for v in bad.verdicts)


def test_tree_probe_oracle_in_slices_is_the_one_block_oracle_bit_for_bit(monkeypatch) -> None:
    """The probe's Monte Carlo oracle now draws each 100,000-row block a slice of rows at a
    time (its memory was 0.8 MB x d per array, outside the plan): with slices of 7 rows, of
    the default 2^21 numbers and of a whole block, the oracle's value is the same float.
    Negative control: another oracle seed moves it. The plan counts the probe (its estimate
    grows with d and stays bounded by the slice)."""
    import dpbounds.verify.studies.tree_momentum as tm

    inst = problem().build(100, 32, seed=0)
    point = {"eps": 8.0, "delta": 1e-5, "d": 32, "N": 100}
    values = []
    for elements in (7 * 32, 1 << 21, 100_000 * 32):
        monkeypatch.setattr(tm, "_ORACLE_BLOCK_ELEMENTS", elements)
        values.append(tm.tree_clip_probe(point, inst, 0.05, 7, None)[0]["exact"])
    assert values[0] == values[1] == values[2]
    monkeypatch.setattr(tm, "_ORACLE_SEED", tm._ORACLE_SEED + 1)
    assert tm.tree_clip_probe(point, inst, 0.05, 7, None)[0]["exact"] != values[0]
    monkeypatch.undo()
    # beyond 2^21 / 100,000 dimensions only the probe run's states grow (linearly in d)
    assert tm.clip_probe_bytes(1) < tm.clip_probe_bytes(32) < tm.clip_probe_bytes(10**4)
    grow = tm.clip_probe_bytes(2 * 10**6) - tm.clip_probe_bytes(10**6)
    assert grow == pytest.approx(8.0 * 10**6 * (16 * tm._CLIP_TRIALS + tm._CLIP_N))


def test_tree_probe_oracle_is_remembered_bit_for_bit(monkeypatch) -> None:
    """The oracle (0.37 CPU-s at d = 64) is remembered per point, noise, means and settings:
    the planner's second run of each cost probe asked it again. A remembered value is the
    computed one, bit for bit; another noise, other means or another seed are computed
    afresh (controls: each moves the value), and so is another point (its value the same:
    each grid point pays the oracle, as the planner's estimate counts it)."""
    import dpbounds.verify.studies.tree_momentum as tm

    rng = np.random.default_rng(3)
    means = [rng.standard_normal(5) * 0.1, rng.standard_normal(5) * 0.1]
    tm._directions_of.cache_clear()
    first = tm._directions(0.7, *means)
    assert tm._directions_of.cache_info().misses == 1
    again = tm._directions(0.7, *[m.copy() for m in means])  # equal values, new arrays
    assert tm._directions_of.cache_info().hits == 1 and again == first
    fresh = tm._directions_of.__wrapped__(0.7, tuple(m.tobytes() for m in means),
                                         tm._ORACLE_SEED, tm._CLIP_ORACLE_DRAWS,
                                         tm._ORACLE_BLOCK_ELEMENTS)
    assert fresh == first
    assert tm._directions(0.7 * (1 + 1e-9), *means) != first
    assert tm._directions(0.7, means[0], means[1] + 1e-3) != first
    monkeypatch.setattr(tm, "_ORACLE_SEED", tm._ORACLE_SEED + 1)
    assert tm._directions(0.7, *means) != first
    monkeypatch.undo()
    hits = tm._directions_of.cache_info().hits
    assert tm._directions(0.7, *means, point={"N": 32, "d": 5}) == first  # computed afresh
    assert tm._directions_of.cache_info().hits == hits
    assert tm._directions(0.7, *means, point={"d": 5, "N": 32}) == first  # the same point
    assert tm._directions_of.cache_info().hits == hits + 1
    # only the last point is kept: a point asked again after another computes afresh
    tm._directions(0.7, *means, point={"N": 96, "d": 5})
    tm._directions(0.7, *means, point={"N": 32, "d": 5})
    assert tm._directions_of.cache_info().hits == hits + 1


def _oracle_one_block_at_a_time(sigma, means, seed, draws):
    """The probe's oracle as it was first written (each 100,000-row block drawn whole, one
    sum per block and mean): the reference for the remembered, sliced one."""
    rng = np.random.default_rng(seed)
    totals = [0.0] * len(means)
    for _ in range(draws // 100_000):
        noise = sigma * rng.standard_normal((100_000, means[0].size))
        for j, m in enumerate(means):
            v = m[None, :] + noise
            totals[j] += float(np.sum(v[:, 0] / np.maximum(np.linalg.norm(v, axis=1), 1e-300)))
    return tuple(t / draws for t in totals)


def test_remembered_oracle_is_the_one_block_oracle_and_its_settings_are_keys(monkeypatch
                                                                            ) -> None:
    """Review: the test above compared the remembered value with the same code's own
    uncached call. Here: with the one-block oracle, bit for bit (a mutant summing each block
    another way, math.fsum, gives other last bits); and changing the draws or the slice
    size at the same point computes afresh (a cache miss), not the remembered value."""
    import dpbounds.verify.studies.tree_momentum as tm

    rng = np.random.default_rng(3)
    means = [rng.standard_normal(5) * 0.1, rng.standard_normal(5) * 0.1]
    tm._directions_of.cache_clear()
    got = tm._directions(0.7, *means)
    assert got == _oracle_one_block_at_a_time(0.7, means, tm._ORACLE_SEED,
                                              tm._CLIP_ORACLE_DRAWS)
    for name, value in (("_ORACLE_BLOCK_ELEMENTS", 7 * 5), ("_CLIP_ORACLE_DRAWS", 200_000)):
        misses = tm._directions_of.cache_info().misses
        monkeypatch.setattr(tm, name, value)
        tm._directions(0.7, *means)
        assert tm._directions_of.cache_info().misses == misses + 1, name
        monkeypatch.undo()
    assert tm._directions(0.7, *means) == got

