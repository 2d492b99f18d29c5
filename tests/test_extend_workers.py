"""Plug-ins in spawned sweep workers: a plug-in file loaded with ``load_plugins`` (what
``dpbounds --plugin FILE`` does) travels to the worker processes of a sweep, which load it
before a cell resolves a plug-in's method, theorem, study or problem by name, or runs a
function defined in the plug-in itself. The control sends no plug-in: the same cells fail. A
worker whose copy of a plug-in file has other bytes than the parent loaded refuses its task."""

from __future__ import annotations

import os
import textwrap

import pytest

from dpbounds import extend as ex
from dpbounds.sweep import Cell, LocalProcesses, SweepError, engine, run_sweep
from tests.plugin_state import plugins_loaded

PLUGIN = textwrap.dedent('''
    import os

    import numpy as np
    import sympy as sp

    from dpbounds import extend as ex
    from dpbounds.objectives import HuberWell

    d, N, eps, G, L, R, T = ex.symbols("d N eps G L R T")
    thm = ex.theorem("nonconvex.worker_toy", sp.sqrt(L * R / T) + G * sp.sqrt(d) / (N * eps),
                     quantity="(1/T) sum_t E||grad F(x_t)||", problem_class="nonconvex",
                     hyperparameters={"T": sp.Integer(3), "eta": 1 / L, "B": sp.Integer(5)},
                     source=ex.Source("a test", "toy", ex.DERIVED))
    method = ex.Method("worker_sgd", lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
                       sampling="poisson", clip=1.0)


    def build(N, d, seed, spec):
        return HuberWell.random(N, d, G=1.0, L=2.0, spread=0.1, seed=seed), np.zeros(d)


    ex.verify_problem("worker_well", build, problem_class="convex", defaults={"L": 2.0})
    ex.study(method, thm, problems=("worker_well",))


    def where():  # a cell function of the plug-in itself: found by name
        c = ex.calibrate("worker_sgd", epsilon=1.0, delta=1e-5, steps=10, problem={"N": 100},
                         params={"B": 10})
        return {"pid": os.getpid(), "noise": c.noise_scale}
''')


@pytest.fixture()
def plugin(tmp_path):
    """The plug-in file, loaded in this process for this test only."""
    path = tmp_path / "worker_plugin.py"
    path.write_text(PLUGIN)
    with plugins_loaded([path]):
        yield path


def _timeless(value):
    """A verify result's JSON without its timings (wall and CPU seconds differ run to run)
    and its memory estimate (it counts the worker processes: stop 74)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items()
                if "seconds" not in k and k != "estimated_memory_bytes"}
    return [_timeless(v) for v in value] if isinstance(value, list) else value


def test_a_spawned_worker_loads_the_plugins_and_resolves_their_names(plugin, monkeypatch,
                                                                     capsys):
    from dpbounds.verify.problems import problem
    from dpbounds.verify.study import _cell

    files, entry_points = ex.loaded_plugins()
    assert files == (str(plugin.resolve()),) and entry_points is False
    assert engine._PLUGIN_PREFIX == ex.PLUGIN_MODULE_PREFIX  # the engine's copy of the prefix
    mod = next(m for k, m in ex._LOADED.items() if k == files[0])
    where = __import__("sys").modules[mod].where
    here = where()["noise"]
    point = dict(d=2, N=40, eps=1.0, delta=1e-5)
    cells = [Cell(where, {}),  # the plug-in's own function (its module, loaded in the worker)
             # a verify cell of the plug-in's study on the plug-in's problem, by name
             Cell(_cell, dict(theorem="nonconvex.worker_toy",
                              problem=problem("worker_well").as_dict(), point=point,
                              mutation=None), trials=2, seed=(0, 0))]
    with LocalProcesses(workers=2, mp_context="spawn") as pool:
        # control: the plug-ins not sent (what happened before), the worker cannot run them
        with monkeypatch.context() as m:
            m.setattr(engine, "_plugins_here", lambda: ((), False))
            m.setattr(engine, "_plugin_digests_here", lambda: ())
            with pytest.raises(SweepError) as err:
                run_sweep(cells, executor=pool, progress=False, code_version="")
        text = " ".join(str(tb) for _, tb in err.value.failures)
        assert len(err.value.failures) == 2 and "dpbounds_plugin_" in text, text
        assert "nonconvex.worker_toy" in text, text
        res = run_sweep(cells, executor=pool, progress=False, code_version="")
        # dpbounds verify --workers 2 on the plug-in's study: the CLI asks the sweep engine for
        # 2 local processes (this started pool stands in for them: the workers' imports are
        # paid once; a sweep leaves a started pool open), every point runs there, and the
        # result is that of --workers 1 (this process) but for its timings
        import json

        from dpbounds import sweep
        from dpbounds.cli import main

        asked, sent = [], []
        monkeypatch.setattr(sweep, "LocalProcesses", lambda n: asked.append(n) or pool)
        submit = pool.submit
        monkeypatch.setattr(pool, "submit", lambda *a: sent.append(a) or submit(*a))
        argv = ["--plugin", str(plugin), "verify", "nonconvex.worker_toy", "--problem",
                "worker_well", "--vary", "N", "--values", "40", "80", "--trials", "2",
                "--d", "2", "--json", "--quiet", "--workers"]
        out, rc = {}, {}
        for w in ("1", "2"):
            rc[w] = main([*argv, w])  # (the toy's bound fails: exit 1 both times)
            out[w] = json.loads(capsys.readouterr().out)
        assert asked == [1, 2] and len(sent) == 2  # --workers 1: no task sent to the pool
        assert _timeless(out["2"]) == _timeless(out["1"]) and rc["2"] == rc["1"]
        assert len(out["2"]["values"]) == 2 and len(out["2"]["measured"]["grad_avg"]) == 2
    assert res[0]["pid"] != os.getpid()  # it ran in the spawned worker
    assert res[0]["noise"] == here  # the plug-in's sampled method, calibrated there
    ref = _cell(theorem="nonconvex.worker_toy", problem=problem("worker_well").as_dict(),
                point=point, mutation=None, trials=2, seed=(0, 0))
    assert res[1]["params"] == ref["params"] and res[1]["b:grad_avg"] == ref["b:grad_avg"]
    assert (res[1]["m:grad_avg"] == ref["m:grad_avg"]).all()  # the same seeded runs there
    # the store's key follows the plug-in's bytes as this process runs them (loaded before an
    # edit: unchanged by it here; a process that loads the edited file keys it otherwise, see
    # test_store_keys_follow_the_plugins_sources); no plug-in: the key as before
    from dpbounds.sweep.cells import cell_key, code_fingerprint

    key = engine._Plan([cells[1]], "v", None).keys[0]
    plugin.write_text(PLUGIN + "# edited\n")
    assert engine._Plan([cells[1]], "v", None).keys[0] == key
    monkeypatch.setattr(engine, "_plugin_digests_here", lambda: ())
    assert engine._Plan([cells[1]], "v", None).keys[0] == cell_key(
        cells[1], "v", code_fingerprint(_cell)) != key


#: a plug-in of one cell function (no imports: the check is about its bytes, not its content)
SMALL = "RELEASE = 1\n\n\ndef which():\n    return {'release': RELEASE}\n"


def test_a_worker_refuses_a_plugin_file_edited_after_the_sweep_was_submitted(tmp_path,
                                                                              monkeypatch):
    """The task carries the SHA-256 of each plug-in file as the parent loaded it; a worker
    (here the worker entry function, called in a state where nothing is loaded, as in a fresh
    process) that loads other bytes refuses the task, naming the file. Controls: the same
    bytes run; with the check switched off the edited file silently gives another record."""
    import hashlib
    import sys

    def fresh_process() -> None:  # the plug-in tables as in a process that loaded nothing
        for table in ("_LOADED", "_DIGESTS", "_MODULE_ORIGINS"):  # (restored after the test)
            monkeypatch.setattr(ex, table, {})

    path = tmp_path / "edited_plugin.py"
    path.write_text(SMALL)
    resolved = str(path.resolve())
    fresh_process()
    ex.load_plugins([path], entry_points=False)  # the parent
    which = sys.modules[ex._LOADED[resolved]].which
    plan = engine._Plan([Cell(which, {})], "v", "")
    task = plan.task(plan.tasks()[0], remote=True)
    # the digest is that of the text the test wrote (hashed here, not by dpbounds)
    assert task.plugin_digests == ((resolved, hashlib.sha256(SMALL.encode()).hexdigest()),)
    fresh_process()  # control: a fresh worker, the same bytes: the cell runs
    out = engine._run_task(task)
    assert out.mismatch is None and out.results[0][:2] == (True, {"release": 1}), out.results
    path.write_text(SMALL.replace("RELEASE = 1", "RELEASE = 2"))  # edited after the submit
    fresh_process()
    out = engine._run_task(task)
    assert out.results == [] and out.mismatch is not None
    assert resolved in out.mismatch and "edited after the sweep was submitted" in out.mismatch
    print(out.mismatch)
    # negative control: without the check the worker runs the edited code, another record
    monkeypatch.setattr(engine, "_plugin_mismatch", lambda expected: None)
    fresh_process()
    out = engine._run_task(task)
    assert out.results[0][:2] == (True, {"release": 2})


def test_store_keys_follow_the_plugins_sources(tmp_path, monkeypatch):
    """A cell's store key includes the sources of the loaded plug-ins: a ``--plugin`` file's
    bytes and an installed entry point's package (``*.py`` files of its top-level package).
    Editing the file, or a module of the entry point's package (not the entry point's own
    module), changes the key in a process that loads it; an edit outside the package (another
    module on the path, a data file inside it) does not. Control: nothing loaded, no digest."""
    import sys

    from dpbounds.sweep import cells as sweep_cells

    def fresh_process() -> None:  # tables (and the source digests' cache) of a new process
        for table in ("_LOADED", "_DIGESTS", "_MODULE_ORIGINS"):
            monkeypatch.setattr(ex, table, {})
        monkeypatch.setattr(ex, "_ENTRY_POINTS_LOADED", [False])
        sweep_cells._digest_py_files.cache_clear()
        sys.modules.pop("dpb_key_plugin", None)
        sys.modules.pop("dpb_key_plugin.helper", None)

    site = tmp_path / "site"
    pkg = site / "dpb_key_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from dpb_key_plugin.helper import RATE\n")
    (pkg / "helper.py").write_text("RATE = 1\n")
    (pkg / "notes.txt").write_text("not a source\n")
    (site / "unrelated.py").write_text("X = 1\n")
    dist = site / "dpb_key_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dpb-key-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dpbounds.plugins]\nkeyed = dpb_key_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    file = tmp_path / "key_plugin.py"
    file.write_text(SMALL)
    cell = Cell(sweep_cells.canonical_json, {"value": 1})

    def key(files: tuple = (), entry_points: bool = False) -> str:
        fresh_process()
        ex.load_plugins(list(files), entry_points=entry_points)
        return engine._Plan([cell], "v", None).keys[0]

    try:
        none = key()
        assert none == sweep_cells.cell_key(cell, "v", sweep_cells.code_fingerprint(
            sweep_cells.canonical_json))  # control: no plug-in, the key of before
        by_ep = key(entry_points=True)
        ep = "entry point keyed (dpb_key_plugin)"
        assert ep in ex.plugin_digests()
        # a worker with another version of the installed plug-in refuses the task too
        assert engine._plugin_mismatch(((ep, ex.plugin_digests()[ep]),)) is None
        assert "another version is installed here" in engine._plugin_mismatch(((ep, "0" * 64),))
        by_file = key((file,))
        assert len({none, by_ep, by_file}) == 3
        (site / "unrelated.py").write_text("X = 2\n")  # not the plug-in's package
        (pkg / "notes.txt").write_text("edited\n")  # not a source file
        assert key(entry_points=True) == by_ep
        (pkg / "helper.py").write_text("RATE = 2\n")  # a module the entry point imports
        assert key(entry_points=True) != by_ep
        file.write_text(SMALL + "# edited\n")
        assert key((file,)) != by_file
    finally:
        fresh_process()
