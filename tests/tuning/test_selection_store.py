"""``select_privately(..., store=DIR)``: a killed selection resumes where it stopped, and its
release is the uninterrupted one's (trial k depends only on (seed, k)).

Oracle: the same selection run without a store, in one go (every released field compared
exactly); the runs made on resume counted by a wrapper of the algorithm.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpbounds.algorithms import dp_heavy_ball, dp_sgd
from dpbounds.cli.tune_runs_cmd import build_problem
from dpbounds.tuning import select_privately

F = build_problem("logistic", 300, 3, 0.02, None, 0)
TWIN = build_problem("logistic", 300, 3, 0.02, None, 1)


class Killed(KeyboardInterrupt):
    pass


def _counting(alg, kill_at=None):
    calls = []

    def run(objective, **kw):
        calls.append(1)
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return alg(objective, **kw)

    run.__name__ = alg.__name__
    run.__qualname__ = alg.__qualname__
    run.__module__ = alg.__module__
    return run, calls


def _same(a, b):
    assert a.best == b.best and np.array_equal(a.x, b.x) and a.score == b.score
    assert a.epsilon == b.epsilon and a.delta == b.delta and a.trials_run == b.trials_run


PURE = dict(grid={"step_size": [0.25, 0.5, 1.0], "steps": [3, 6]}, epsilon=1.0,
            score_epsilon=0.1, loss_bound=5.0, stop_probability=0.1, momentum=0.0)
RENYI = dict(grid={"step_size": [0.5, 1.0], "clip_threshold": [0.3, 1.0]}, epsilon=1.0,
             score_epsilon=0.1, loss_bound=4.0, stop_probability=0.1, target_delta=1e-5,
             shape=1.0, delta=1e-6, steps=10, batch_size=20, reference_objective=TWIN)


@pytest.mark.parametrize("alg, kw", [(dp_heavy_ball, PURE), (dp_sgd, RENYI)])
def test_a_killed_selection_resumes_to_the_uninterrupted_release(alg, kw, tmp_path):
    kw = dict(kw)
    grid = kw.pop("grid")
    whole = select_privately(alg, F, grid, seed=5, **kw)
    assert whole.trials_run >= 4
    first, calls = _counting(alg, kill_at=3)
    with pytest.raises(Killed):
        select_privately(first, F, grid, seed=5, store=tmp_path, **kw)
    again, calls = _counting(alg)
    resumed = select_privately(again, F, grid, seed=5, store=tmp_path, **kw)
    _same(resumed, whole)
    reference = 1 if "target_delta" in kw else 0
    stored = 3 - 1 - reference  # the runs that finished before the kill
    assert len(calls) == reference + whole.trials_run - stored
    # a third call runs nothing but the reference
    third, calls = _counting(alg)
    _same(select_privately(third, F, grid, seed=5, store=tmp_path, **kw), whole)
    assert len(calls) == reference


def test_a_secret_seed_is_kept_for_its_resume(tmp_path):
    kw = dict(PURE)
    grid = kw.pop("grid")
    first, _ = _counting(dp_heavy_ball, kill_at=2)
    with pytest.raises(Killed):
        select_privately(first, F, grid, seed=None, store=tmp_path, **kw)
    (path,) = tmp_path.glob("selection-*-secret.jsonl")
    root = json.loads(path.read_text().split("\n")[0])["root"]
    resumed = select_privately(dp_heavy_ball, F, grid, seed=None, store=tmp_path, **kw)
    _same(resumed, select_privately(dp_heavy_ball, F, grid, seed=root, **kw))


def test_other_inputs_do_not_resume_and_a_cut_line_is_run_again(tmp_path):
    kw = dict(PURE)
    grid = kw.pop("grid")
    select_privately(dp_heavy_ball, F, grid, seed=5, store=tmp_path, **kw)
    (path,) = tmp_path.glob("selection-*.jsonl")
    # another epsilon, another objective: other files, nothing read from the first
    other, calls = _counting(dp_heavy_ball)
    select_privately(other, F, grid, seed=5, store=tmp_path, **{**kw, "epsilon": 0.5})
    assert len(calls) >= 1 and len(list(tmp_path.glob("selection-*.jsonl"))) == 2
    select_privately(dp_heavy_ball, TWIN, grid, seed=5, store=tmp_path, **kw)
    assert len(list(tmp_path.glob("selection-*.jsonl"))) == 3
    # the last line cut by a kill: that trial runs again, the release is unchanged
    lines = path.read_text().split("\n")
    path.write_text("\n".join(lines[:-2]) + "\n" + lines[-2][: len(lines[-2]) // 2])
    again, calls = _counting(dp_heavy_ball)
    _same(select_privately(again, F, grid, seed=5, store=tmp_path, **kw),
          select_privately(dp_heavy_ball, F, grid, seed=5, **kw))
    assert len(calls) == 1
    # a damaged header is refused by name
    path.write_text("not json\n")
    with pytest.raises(ValueError, match="does not hold this selection's trials"):
        select_privately(dp_heavy_ball, F, grid, seed=5, store=tmp_path, **kw)


def test_the_shell_resumes_a_private_selection_from_its_store(tmp_path, capsys):
    from tests.tuning.test_by_runs import _cli

    argv = ["tune", "runs", "hb", "--N", "300", "--d", "3", "--private", "--loss-bound", "5",
            "--search", "alpha=0.5,1", "--steps", "3", "--beta", "0", "--seed", "2",
            "--store", str(tmp_path), "--json", "--quiet"]
    rc, out, _ = _cli(argv, capsys)
    assert rc == 0
    rc, again, _ = _cli(argv, capsys)
    assert rc == 0 and json.loads(again) == json.loads(out)
    assert len(list(tmp_path.glob("selection-*-seed-2.jsonl"))) == 1
