"""Edges found in stop 77 (fuzz round 11, the researcher walkthrough), each with the check
that failed before."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dpbounds.cli import main


def _cli(argv, capsys):
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


NAG = ["tune", "nag", "--mu", "0.01", "--L", "0.0367", "--d", "10", "--N", "5000", "--eps",
       "1", "--S1", "6.32", "--E0", "0.0323", "--max-horizon", "50"]


def test_tune_nag_prints_the_budgets_that_run_its_pick(capsys):
    # was: the table omitted the per-step budgets needed to run the pick (walkthrough)
    from dpbounds.tuning import tune_nesterov

    rc, out, _ = _cli(NAG, capsys)
    assert rc == 0
    line = next(x for x in out.splitlines() if x.startswith("to run DP-NAG tuned by worst"))
    steps = int(re.search(r"steps=(\d+)", line).group(1))
    budgets = [float(v) for v in re.search(r"budgets=\[([^\]]*)\]", line).group(1).split(",")]
    # oracle: the library's choice, bit for bit (the printed text is repr)
    lib = tune_nesterov(0.01, 0.0367, d=10, n=5000, epsilon=1.0, sensitivity=6.32,
                        initial_gap=0.0323, max_horizon=50)
    pick = lib.choices[0]
    assert steps == pick.horizon and budgets == [float(e) for e in pick.epsilons]
    assert sum(budgets) == pytest.approx(1.0, rel=1e-12)
    assert "inputs read as public" in out
    # the printed call runs as printed (it raised TypeError without epsilon: review)
    from dpbounds.algorithms import dp_nag
    from dpbounds.data import kuru_synthetic
    from dpbounds.objectives import LogisticRegression

    ds = kuru_synthetic(n=300, d=3, seed=0)
    f = LogisticRegression.kuru(*ds, lam=0.01, **ds.domain())
    res = eval(line.split(": ", 1)[1], {"dp_nag": dp_nag, "f": f})  # noqa: S307
    assert res.privacy.epsilon == pytest.approx(1.0, rel=1e-9)


def test_tune_hb_says_its_inputs_are_read_as_public(capsys):
    rc, out, _ = _cli(["tune", "hb", *NAG[2:]], capsys)
    assert rc == 0 and out.rstrip().endswith("(or their release paid for)")
    rc, out, _ = _cli(["tune", "hb", *NAG[2:], "--json"], capsys)
    assert rc == 0 and "inputs read as public" not in out  # JSON stays JSON


def test_a_sensitivity_from_an_unbounded_gradient_names_the_objective():
    # was: "must return a positive, finite number, got inf" and nothing on why
    from dpbounds import extend as ex
    from dpbounds.objectives import QuadraticObjective

    m = ex.Method("edge77_unbounded", step=lambda x, grad, noise, p: x - 0.5 * (grad(x) + noise),
                  mechanism="gaussian", sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)
    f = QuadraticObjective.random(d=3, mu=0.1, L=1.0, n=50, offset_scale=1.0, seed=0)
    with pytest.raises(ValueError, match="QuadraticObjective declares gradient_bound = inf"):
        m.run(f, epsilon=1.0, delta=1e-5, steps=2)
    assert np.isinf(f.gradient_bound)


def test_a_zero_width_terminal_gets_lines_or_a_fixed_width_bar(monkeypatch):
    # `script` without `stty cols`: a terminal that reports 0 columns, where tqdm's dynamic
    # width drew nothing at all (walkthrough of stop 77); a sized terminal keeps its bar
    import io
    import os
    import sys

    from dpbounds import _progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

        def fileno(self):
            return 2

    monkeypatch.setattr(sys, "stderr", Tty())
    for cols, line_kind, ncols in [(0, _progress.LineBar, 80), (120, None, None)]:
        monkeypatch.setattr(os, "get_terminal_size", lambda fd, c=cols: os.terminal_size((c, 40)))
        bar = _progress.progress_bar(True, range(3), lines=True)
        if line_kind is None:
            assert not isinstance(bar, _progress.LineBar)
        else:
            assert isinstance(bar, line_kind)
        plain = _progress.progress_bar(None, range(3))
        if ncols is None:
            assert plain.dynamic_ncols  # the terminal's own width
        else:
            assert plain.ncols == ncols and not plain.dynamic_ncols
        plain.close()


THEOREM_T = '''
import sympy as sp
from dpbounds import extend as ex

N, R, T = ex.symbols("N R T")
ex.theorem("nonconvex.edge77_range", R / T + T / N, quantity="E F(x_T) - F*",
           problem_class="nonconvex", hyperparameters={"T": sp.sqrt(R * N)},
           tunable={"T": (1.0, 1e7)},
           source=ex.Source("me", "1", ex.DERIVED), title="a horizon below its range")
'''


def test_bound_notes_a_closed_form_outside_its_declared_range(tmp_path, capsys):
    # walkthrough of stop 77: "tuned: T=0.439" beside a declared range (1, 1e7)
    from tests.plugin_state import plugins_loaded

    plug = tmp_path / "edge77_range.py"
    plug.write_text(THEOREM_T)
    with plugins_loaded([]):
        rc, out, _ = _cli(["--plugin", str(plug), "bound", "nonconvex.edge77_range", "--N",
                           "100", "--R", "0.0001"], capsys)
        assert rc == 0
        # oracle: sqrt(R N) = sqrt(0.01) = 0.1 < 1
        assert "note: T = 0.1 lies below its declared range [1, " in out
        rc, out, _ = _cli(["--plugin", str(plug), "bound", "nonconvex.edge77_range", "--N",
                           "100", "--R", "1"], capsys)
        assert rc == 0 and "note:" not in out  # sqrt(100) = 10 is inside
