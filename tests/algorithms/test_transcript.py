"""The run transcript (issue 34 item 1): recording changes nothing in the run, and what it
records matches closed forms computed here from the data alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpbounds.algorithms import dp_gd, dp_nsgd, dp_sgd
from dpbounds.algorithms._transcript import Transcript
from dpbounds.objectives import LogisticRegression
from dpbounds.verify.mutants import mutated

CLIP = 0.3


def _objective(n: int = 60) -> tuple[LogisticRegression, np.ndarray]:
    rng = np.random.default_rng(0)
    A = rng.uniform(size=(n, 4))
    y = np.sign(A @ np.array([1.0, -1, 1, -1]) + 1e-3)
    return LogisticRegression(A, y, l2=1e-2), A


def _sgd(f: LogisticRegression, transcript: Transcript | None, sampling: str, **kw: object):
    extra = {"public_n": f.n} if sampling == "poisson" else {}
    return dp_sgd(f, epsilon=1.0, delta=1e-5, steps=30, batch_size=6, step_size=0.5,
                  clip_threshold=CLIP, trials=3, seed=0, sampling=sampling,
                  x0=np.zeros(4), transcript=transcript, **extra, **kw)


@pytest.mark.parametrize("sampling", ["without_replacement", "poisson"])
def test_recording_leaves_the_run_unchanged(sampling: str) -> None:
    """The recording path (NumPy, per-sample gradients) reproduces the default run (the
    compiled loop without replacement) to rounding; the negative control: another seed
    differs."""
    f, _ = _objective()
    tr = Transcript()
    a, b = _sgd(f, tr, sampling).x, _sgd(f, None, sampling).x
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert np.abs(a - dp_sgd(f, epsilon=1.0, delta=1e-5, steps=30, batch_size=6,
                              step_size=0.5, clip_threshold=CLIP, trials=3, seed=1,
                              sampling=sampling, x0=np.zeros(4),
                              **({"public_n": f.n} if sampling == "poisson" else {})).x
                  ).max() > 1e-6
    d = tr.as_dict()
    assert d["indices"].shape[:2] == (3, 30) and d["release_std"].shape == (30,)
    rows = d["indices"].reshape(-1, d["indices"].shape[-1])
    assert all(len(set(r[r >= 0])) == int((r >= 0).sum()) for r in rows)  # distinct members
    if sampling == "without_replacement":
        assert (rows >= 0).all()


def test_first_step_norms_match_the_closed_form() -> None:
    """Oracle: at x0 = 0 the logistic per-sample gradient is -y a / 2, norm ||a|| / 2; the
    recorded step-0 maxima over the recorded batch equal it, and the clipped one min(C, .)."""
    f, A = _objective()
    tr = Transcript()
    _sgd(f, tr, "without_replacement")
    d = tr.as_dict()
    expect = np.linalg.norm(A, axis=1)[d["indices"][:, 0, :]].max(axis=1) / 2
    np.testing.assert_allclose(d["max_norm_raw"][:, 0], expect, rtol=1e-12)
    np.testing.assert_allclose(d["max_norm"][:, 0], np.minimum(CLIP, expect), rtol=1e-12)
    assert (d["max_norm"] <= CLIP * (1 + 1e-12)).all()


def test_a_scaled_contribution_shows_in_the_transcript() -> None:
    """Negative control: the scaled_contribution mutant's contributions reach 2C."""
    f, _ = _objective()
    tr = Transcript()
    with mutated("scaled_contribution", "dp_sgd"):
        _sgd(f, tr, "without_replacement")
    assert np.isclose(tr.as_dict()["max_norm"].max(), 2 * CLIP)


def test_nsgd_and_gd_record_bounded_contributions() -> None:
    """Normalised contributions g/(||g||+r) have norm < 1; DP-GD's full batch: weight 1/n,
    the std the ledger names, norms matching the closed form at x0 = 0."""
    f, A = _objective()
    tr = Transcript()
    dp_nsgd(f, epsilon=1.0, delta=1e-5, steps=10, batch_size=6, step_size=0.5,
            regulariser=0.1, seed=0, transcript=tr)
    assert (tr.as_dict()["max_norm"] < 1).all()
    tr = Transcript()
    r = dp_gd(f, epsilon=1.0, delta=1e-5, steps=5, mechanism="gaussian", clip_threshold=CLIP,
              trials=2, seed=0, x0=np.zeros(4), transcript=tr)
    d = tr.as_dict()
    assert d["indices"] is None and d["sampling"] == "full"
    np.testing.assert_allclose(d["weight"], 1 / f.n)
    np.testing.assert_allclose(d["release_std"], r.params["sigma"])
    np.testing.assert_allclose(d["max_norm_raw"][:, 0], np.linalg.norm(A, axis=1).max() / 2)


def test_a_transcript_records_one_run() -> None:
    f, _ = _objective()
    tr = Transcript()
    _sgd(f, tr, "without_replacement")
    with pytest.raises(ValueError, match="fresh Transcript"):
        _sgd(f, tr, "without_replacement")
    # the Laplace DP-GD records too (the momentum loop's transcript: pure DP, scale per step)
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    A, y = kuru_synthetic(n=40, d=3, seed=0)
    g = LogisticRegression.kuru(A, y, lam=0.01, l1_radius=5.0)
    tr = Transcript()
    r = dp_gd(g, epsilon=1.0, steps=2, transcript=tr)
    d = tr.as_dict()
    assert d["noise"] == "laplace" and d["sampling"] == "full"
    np.testing.assert_allclose(d["release_std"], r.params["laplace_scales"])
    np.testing.assert_allclose(d["bound"], g.l1_sensitivity / 2)


def test_tree_node_weights_compose_to_the_momentum() -> None:
    """Oracle: the released momentum at t is the sum over COMPOSE(1, t) -- the nodes of the
    set bits of t, enumerated here by hand -- of (1-alpha)^(t-b) times each node; with the
    transcript's node weights this must give alpha (1-alpha)^(t-j) for every j <= t (the
    exponential momentum), and each step j in exactly one node per level."""
    from dpbounds.algorithms._transcript import tree_node_weights

    T, alpha = 37, 0.15
    rel, step, w = tree_node_weights(T, alpha, 1.0)
    for t in range(1, T + 1):
        total = np.zeros(T)
        end, bit = 0, 1 << t.bit_length()
        while bit:
            if t & bit:
                end += bit  # node [end - bit + 1, end], formed at step end (release end - 1)
                sel = rel == end - 1
                total[step[sel]] += (1 - alpha) ** (t - end) * w[sel]
            bit >>= 1
        want = np.where(np.arange(T) < t, alpha * (1 - alpha) ** (t - 1 - np.arange(T)), 0)
        np.testing.assert_allclose(total, want, rtol=1e-12, atol=1e-15)
    # negative control: a wrong weight (alpha doubled) breaks the identity at t = 3
    _, _, w2 = tree_node_weights(T, 2 * alpha, 1.0)
    assert not np.allclose(w2[rel == 2], w[rel == 2])


def test_tree_algorithms_record_their_nodes() -> None:
    """Algorithms 1 and 2: one release per step, the sigma(s) the run reports, batches from
    one permutation per epoch (Algorithm 2: the same every epoch), bounded contributions."""
    from dpbounds.algorithms import sensitivity_reduced_nsgd, tree_momentum_nsgd
    from dpbounds.verify.problems import problem

    inst = problem("huber_well").build(32, 3, seed=0)
    for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
        tr = Transcript()
        r = alg(inst.objective, epsilon=2.0, delta=1e-5, epochs=3, step_size=0.01, trials=2,
                seed=0, x0=inst.x0, transcript=tr)
        plain = alg(inst.objective, epsilon=2.0, delta=1e-5, epochs=3, step_size=0.01,
                    trials=2, seed=0, x0=inst.x0)
        np.testing.assert_allclose(r.x, plain.x, rtol=0, atol=1e-12)
        d = tr.as_dict()
        assert d["release_std"].size == 96
        sig = {r.params.get("sigma", 0), r.params.get("sigma_1", 0), r.params.get("sigma_2", 0)}
        assert set(np.unique(d["release_std"])) <= sig
        epochs = d["indices"][:, :, 0].reshape(2, 3, 32)
        assert all(sorted(e) == list(range(32)) for e in epochs.reshape(6, 32))
        if alg is sensitivity_reduced_nsgd:
            assert (epochs == epochs[:, :1]).all()
        assert (d["max_norm"] <= d["bound"][None, :] * (1 + 1e-12)).all()


def test_compiled_and_numpy_paths_record_the_same_norms() -> None:
    """Second method: the compiled loops (norms filled in the kernel) of the tree methods,
    DP-SGD and DP-NSGD and their NumPy paths (queries=True forces them) record the same
    norms (and the tree methods the same batches and releases)."""
    from dpbounds.algorithms import _step_kernels, sensitivity_reduced_nsgd, tree_momentum_nsgd
    from dpbounds.verify.problems import problem

    inst = problem("huber_well").build(32, 3, seed=0)
    if _step_kernels.active(inst.objective, inst.objective.initial_state(2, inst.x0)) is None:
        pytest.skip("no compiled loop (the fast extra is not installed)")
    for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
        a, b = Transcript(), Transcript(queries=True)
        for tr in (a, b):
            alg(inst.objective, epsilon=2.0, delta=1e-5, epochs=3, step_size=0.05, trials=2,
                seed=0, x0=inst.x0, transcript=tr)
        da, db = a.as_dict(), b.as_dict()
        for key in ("max_norm_raw", "max_norm"):
            np.testing.assert_allclose(da[key], db[key], rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(da["indices"], db["indices"])
        np.testing.assert_array_equal(da["release_std"], db["release_std"])
    for sgd, kw in ((dp_sgd, {"clip_threshold": 0.5}), (dp_nsgd, {"regulariser": 0.1})):
        a, b = Transcript(), Transcript(queries=True)
        xs = [sgd(inst.objective, epsilon=1.0, delta=1e-5, steps=40, batch_size=4,
                  step_size=0.05, trials=2, seed=0, x0=inst.x0, transcript=tr,
                  **kw).x for tr in (a, b)]
        np.testing.assert_allclose(xs[0], xs[1], rtol=0, atol=1e-12)
        for key in ("max_norm_raw", "max_norm"):
            np.testing.assert_allclose(a.as_dict()[key], b.as_dict()[key], rtol=1e-12)


@pytest.mark.parametrize("epochs", [4, 16])
def test_verify_plans_bound_the_transcripts_memory(epochs: int) -> None:
    """Oracle: the arrays a real transcript holds (``nbytes``, twice: the records and the
    checks' copies beside them; the traced peak of whole points is
    ``tests/verify/test_transcript_memory.py``) after runs of the tree methods and of
    DP-SGD; the verify plans' transcript term
    (``_plan(..., transcript=)``, minus its part without a transcript) bounds them, within
    5x; control: the same plan without the transcript term does not (it was 51 MiB for
    Algorithm 2's full study, killed at 21 GB)."""
    from dpbounds.algorithms import sensitivity_reduced_nsgd, tree_momentum_nsgd
    from dpbounds.verify.problems import problem
    from dpbounds.verify.studies._common import _plan

    inst = problem("huber_well").build(32, 3, seed=0)
    point = {"d": 3, "N": 32}
    for alg in (tree_momentum_nsgd, sensitivity_reduced_nsgd):
        tr = Transcript()
        alg(inst.objective, epsilon=2.0, delta=1e-5, epochs=epochs, step_size=0.01, trials=2,
            seed=0, x0=inst.x0, transcript=tr)
        held = 2 * tr.nbytes
        T = 32 * epochs
        base = _plan(1.0, 1.0, 1.0, T, T, 2, point)["memory_bytes"]
        est = _plan(1.0, 1.0, 1.0, T, T, 2, point, transcript="tree")["memory_bytes"] - base
        assert held <= est <= 5 * held, (alg.__name__, held, est)
        assert base < held  # control: the plan without the transcript term
    f, _ = _objective()
    tr = Transcript()
    _sgd(f, tr, "without_replacement")
    base = _plan(1.0, 1.0, 1.0, 30, 180, 3, point)["memory_bytes"]
    est = _plan(1.0, 1.0, 1.0, 30, 180, 3, point, transcript="steps", batch=6)["memory_bytes"]
    assert 2 * tr.nbytes <= est - base <= 5 * 2 * tr.nbytes


def _blocks_by_hand(trials: int, releases: int,
                    blocks: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """The drawn-noise record as the transcript kept it before stop 60 (the oracle): blocks
    of statistics laid into a NaN array of the releases, later blocks over earlier ones."""
    out = np.full((trials, releases), np.nan)
    for r, v in blocks:
        out[:, r:r + v.shape[1]] = v
    return out


@pytest.mark.parametrize("grid", [False, True])
def test_the_drawn_record_is_the_blocks_laid_out(grid: bool) -> None:
    """The drawn-noise statistics are kept in one array filled in place (it held each number
    twice before: blocks, then the array joined from them). Oracle: the blocks laid out by
    hand; blocks out of order, one written over, releases beyond the steps (the array grows)
    and one release never drawn (NaN); ``as_dict`` twice gives the same record; a record
    beyond the releases made is an error, as it was."""
    rng = np.random.default_rng(3)
    tr = Transcript()
    tr.begin("test", trials=2, steps=4, n=10, batch_size=1, sampling="full",
             sampling_rate=1.0, neighbouring="replace_one", bound=1.0,
             grid_bits=3 if grid else None)
    tr.releases(np.arange(7), 1.0, (np.arange(7), np.arange(7) % 4, 1.0))
    blocks = [(2, rng.normal(size=(2, 2, 3))), (0, rng.normal(size=(2, 1, 3))),
              (2, rng.normal(size=(2, 1, 3))), (4, rng.normal(size=(2, 3, 3)))]
    for r, z in blocks:
        tr.drawn_block(r, z)
    d = tr.as_dict()
    stat = [(r, (z * z).sum(-1)) for r, z in blocks]
    want = _blocks_by_hand(2, 7, stat)
    np.testing.assert_allclose(d["noise_drawn"], want, rtol=1e-14)  # NaN where NaN
    assert np.isnan(d["noise_drawn"][:, 1]).all() and d["noise_dim"] == 3
    if grid:
        np.testing.assert_array_equal(d["noise_drawn_first"], _blocks_by_hand(
            2, 7, [(r, np.abs(z[:, :, 0])) for r, z in blocks]))
    else:
        assert "noise_drawn_first" not in d
    again = tr.as_dict()
    for key in ("noise_drawn", "release_step", "release_std", "weight_release", "weight_step",
                "weight") + (("noise_drawn_first",) if grid else ()):
        np.testing.assert_array_equal(again[key], d[key])
        # held once: the second call returns what the first joined, not a fresh copy
        assert np.shares_memory(again[key], d[key]), key
    tr.releases(np.arange(2), 1.0, (np.arange(2), np.arange(2), 1.0))  # 9 releases now
    np.testing.assert_allclose(tr.as_dict()["noise_drawn"][:, :7], want, rtol=1e-14)
    assert tr.as_dict()["noise_drawn"].shape == (2, 9)
    np.testing.assert_array_equal(tr.as_dict()["release_step"], np.r_[np.arange(7),
                                                                      np.arange(2)])
    # two blocks of releases joined once, then kept: a later call copies nothing
    assert np.shares_memory(tr.as_dict()["weight"], tr.as_dict()["weight"])
    tr.drawn_block(9, rng.normal(size=(2, 1, 3)))
    with pytest.raises(ValueError, match="release 9"):
        tr.as_dict()


def test_a_dp_sgd_transcript_holds_its_records_once() -> None:
    """After a DP-SGD run and ``as_dict``, what the transcript holds is its records once: the
    indices, two norms and the drawn statistic (4 B + 24 bytes a step and trial), the bound
    and the releases' weights (48 bytes a step). Before stop 60 it also held the drawn blocks
    and the weight blocks beside their joined copies (64 bytes a step more here, 1.33x).
    Oracle: the records' sizes counted here against the memory ``tracemalloc`` sees held
    (two-sided: at least the records, at most 1.15x them)."""
    import gc
    import tracemalloc

    f, _ = _objective()
    trials, steps, batch = 3, 3000, 6
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tr = Transcript()
        res = dp_sgd(f, epsilon=1.0, delta=1e-5, steps=steps, batch_size=batch,
                     step_size=0.05, clip_threshold=CLIP, trials=trials, seed=0,
                     x0=np.zeros(4), transcript=tr)
        d = tr.as_dict()
        del res
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    records = trials * steps * (4 * batch + 24) + steps * 48
    assert tr.nbytes == records
    assert records <= held <= 1.15 * records, (held, records)
    assert tr._drawn is not None and tr._drawn.shape == (trials, steps)  # allocated once
    first = Transcript()  # as wide as the steps at the first draw, not grown draw by draw
    first.begin("t", trials=2, steps=10, n=5, batch_size=1, sampling="full",
                sampling_rate=1.0, neighbouring="replace_one", bound=1.0)
    first.drawn_block(0, np.ones((2, 1, 3)))
    assert first._drawn is not None and first._drawn.shape == (2, 10)
    assert np.shares_memory(d["noise_drawn"], tr.as_dict()["noise_drawn"])


@given(trials=st.integers(1, 3), steps=st.integers(0, 6), grid=st.booleans(),
       ops=st.lists(st.tuples(st.sampled_from(["releases", "block", "as_dict"]),
                              st.integers(0, 9), st.integers(0, 3)), max_size=12),
       seed=st.integers(0, 2**16))
@settings(max_examples=150, deadline=None)
def test_the_records_are_the_calls_laid_out(trials: int, steps: int, grid: bool,
                                            ops: list[tuple[str, int, int]],
                                            seed: int) -> None:
    """Property (the oracle: the calls kept here and laid out by hand, as the transcript did
    before stop 60): after any sequence of ``releases``, ``drawn_block`` (empty blocks,
    blocks out of order or past the steps) and ``as_dict`` calls, ``as_dict`` returns the
    releases joined and the draws laid out over the releases made (NaN where none), or
    raises where a draw names a release not made; its arrays are read-only."""
    rng = np.random.default_rng(seed)
    tr = Transcript()
    tr.begin("t", trials=trials, steps=steps, n=10, batch_size=1, sampling="full",
             sampling_rate=1.0, neighbouring="replace_one", bound=1.0,
             grid_bits=3 if grid else None)
    rel: list[np.ndarray] = []
    blocks: list[tuple[int, np.ndarray]] = []
    for kind, a, b in ops:
        if kind == "releases":
            mine = np.arange(a)
            tr.releases(mine, 1.5, (np.arange(a), np.arange(a), rng.normal(size=a)))
            rel.append(mine)
            mine += 100  # the caller's array is not the transcript's
        elif kind == "block":
            z = rng.normal(size=(trials, b, 2))
            tr.drawn_block(a, z)
            blocks.append((a, z))
        else:
            made = sum(r.size for r in rel)
            if any(z.shape[1] and r + z.shape[1] > made for r, z in blocks):
                with pytest.raises(ValueError, match="releases"):
                    tr.as_dict()
                return
            d = tr.as_dict()
            np.testing.assert_array_equal(
                d["release_step"], np.concatenate(rel) - 100 if rel else np.zeros(0))
            if blocks:
                want = _blocks_by_hand(trials, made, [(r, (z * z).sum(-1)) for r, z in blocks])
                np.testing.assert_allclose(d["noise_drawn"], want, rtol=1e-14)
                if grid:
                    np.testing.assert_array_equal(d["noise_drawn_first"], _blocks_by_hand(
                        trials, made, [(r, np.abs(z[:, :, 0])) for r, z in blocks]))
            else:
                assert "noise_drawn" not in d
            for key in ("release_step", "weight", "noise_drawn"):
                if key in d and d[key].size:
                    with pytest.raises(ValueError, match="read-only"):
                        d[key][..., 0] = 0.0
