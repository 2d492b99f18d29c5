"""A run calibrated to a radius the objective took from the private data says so.

A margin loss built on one's own arrays without ``l1_radius`` / ``l2_radius`` takes the data's
largest row norms; a run that calibrates its noise (or its clip) to them has noise that
depends on the data, so its guarantee holds only if those values are public bounds (a
researcher's walkthrough of stop 81: the runs said nothing). Each run warns with
:class:`DataDerivedCalibrationWarning`, names the radius, and prints the value it calibrated
to; the same run on an objective that declares the same radii is bit-identical and silent,
as are runs given a public ``sensitivity=`` or clip, and non-private runs.

Oracle: the value in the warning against the closed form ``2 max_i ||a_i||_1`` (``l1``) and
``max_i ||a_i||_2`` (``l2``) of the logistic loss (|psi'| <= 1) computed here from the array.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from dpbounds.algorithms import (
    dp_gd,
    dp_heavy_ball,
    dp_masg,
    dp_nag,
    noisy_projected_sgd,
    objective_perturbation,
    output_perturbation,
    sensitivity_reduced_nsgd,
    tree_momentum_nsgd,
)
from dpbounds.objectives import LogisticRegression, QuadraticObjective
from dpbounds.privacy.limits import DataDerivedCalibrationWarning

RNG = np.random.default_rng(3)
A = RNG.uniform(-1.0, 1.0, size=(40, 3))
Y = np.where(A @ np.array([1.0, -2.0, 0.5]) >= 0, 1.0, -1.0)
L1 = float(np.max(np.abs(A).sum(axis=1)))
L2 = float(np.max(np.linalg.norm(A, axis=1)))
# the logistic loss's smoothness: psi'' <= 1/4 times lambda_max(A^T A / n), plus l2 = 0.1
SMOOTH = 0.25 * float(np.linalg.eigvalsh(A.T @ A / len(A))[-1]) + 0.1
#: the runs that take a default step size c / L (or MASG's schedule) from the smoothness
STEPPED = {"dp_heavy_ball", "dp_nag", "dp_masg", "dp_gd", "dp_gd gaussian", "dp_gd add/remove"}


def _undeclared() -> LogisticRegression:
    return LogisticRegression(A, Y, l2=0.1)


def _declared() -> LogisticRegression:
    # the same values, declared: the run must be the same bits, and silent
    return LogisticRegression(A, Y, l2=0.1, l1_radius=L1, l2_radius=L2,
                              smoothness=_undeclared().smoothness)


RUNS = {  # name -> (run, the radius it reads, the value it calibrates to)
    "dp_heavy_ball": (lambda f, **k: dp_heavy_ball(f, epsilon=1.0, steps=3, **k),
                      "l1_radius", 2 * L1),
    "dp_nag": (lambda f, **k: dp_nag(f, epsilon=1.0, steps=3, **k), "l1_radius", 2 * L1),
    "dp_masg": (lambda f, **k: dp_masg(f, epsilon=1.0, steps=4, **k), "l1_radius", 2 * L1),
    "dp_gd": (lambda f, **k: dp_gd(f, epsilon=1.0, steps=3, **k), "l1_radius", 2 * L1),
    "dp_gd gaussian": (lambda f, **k: dp_gd(f, epsilon=1.0, steps=3, mechanism="gaussian",
                                            delta=1e-5, **k), "l2_radius", 2 * L2),
    "dp_gd add/remove": (lambda f, **k: dp_gd(f, epsilon=1.0, steps=3, mechanism="gaussian",
                                              delta=1e-5, neighbouring="add/remove",
                                              public_n=40, **k), "l2_radius", L2),
    "noisy_projected_sgd": (lambda f, **k: noisy_projected_sgd(
        f, epsilon=1.0, delta=1e-5, radius=1.0, steps=5, calibration="rdp", **k),
        "l2_radius", L2 + 0.1),  # G = |psi'| r_2 plus the regulariser's l2 R on the ball
    "output_perturbation": (lambda f, **k: output_perturbation(f, epsilon=1.0, delta=1e-5, **k),
                            "l2_radius", L2),
    "objective_perturbation": (lambda f, **k: objective_perturbation(
        f, epsilon=1.0, delta=1e-5, **k), "l2_radius", L2),
    "tree_momentum_nsgd": (lambda f, **k: tree_momentum_nsgd(
        f, epsilon=1.0, delta=1e-5, epochs=1, step_size=0.1, batch_size=8, **k),
        "l2_radius", L2),
    # an explicit clip: the difference clip D = psi'' r_2^2 eta S still reads the radius
    "sensitivity_reduced_nsgd": (lambda f, **k: sensitivity_reduced_nsgd(
        f, epsilon=1.0, delta=1e-5, epochs=1, step_size=0.1, batch_size=8,
        **{"clip_threshold": 1.0, **k}), "l2_radius", L2),
}


def _caught(run, f, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run(f, seed=5, **kw)
    return res, [w for w in caught if issubclass(w.category, DataDerivedCalibrationWarning)]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_run_on_undeclared_radii_says_so_and_declaring_them_changes_nothing(name):
    run, radius, value = RUNS[name]
    res, said = _caught(run, _undeclared())
    noise = [w for w in said if "the noise is calibrated" in str(w.message)]
    step = [w for w in said if "default step size" in str(w.message)]
    assert len(noise) == 1 and len(step) == (name in STEPPED), [str(w.message) for w in said]
    assert len(said) == len(noise) + len(step)
    text = str(noise[0].message)
    assert radius in text and "declare" in text and "private data" in text
    if value is not None:  # the value it calibrated to, against the closed form
        shown = float(re.search(r"= ([0-9.e+-]+), taken", text).group(1))
        assert shown == pytest.approx(value, rel=1e-5)
    if step:  # L against 1/4 lambda_max(A^T A / n) + l2
        shown = float(re.search(r"smoothness L = ([0-9.e+-]+),", str(step[0].message)).group(1))
        assert shown == pytest.approx(SMOOTH, rel=1e-5)
    # the warning is attributed to the caller's line (this file), not the package's wrapper
    assert {w.filename for w in said} == {__file__}
    same, quiet = _caught(run, _declared())
    assert quiet == []
    np.testing.assert_array_equal(np.asarray(res.x), np.asarray(same.x))


@pytest.mark.parametrize("name", ["dp_heavy_ball", "dp_gd gaussian", "tree_momentum_nsgd",
                                  "sensitivity_reduced_nsgd"])
def test_a_public_bound_or_no_privacy_is_silent(name):
    run, _, value = RUNS[name]
    public = ({"clip_threshold": 1.0} if name == "tree_momentum_nsgd"
              else {"smoothness": 0.5} if name == "sensitivity_reduced_nsgd"
              else {"sensitivity": value, "step_size": 0.5})
    _, said = _caught(run, _undeclared(), **public)
    assert said == []
    if name == "dp_heavy_ball":  # epsilon = inf: no noise to calibrate
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataDerivedCalibrationWarning)
            dp_heavy_ball(_undeclared(), epsilon=float("inf"), steps=3, seed=1)


def test_a_quadratic_with_undeclared_offsets_says_its_offset_radius():
    e = RNG.normal(size=(10, 2))
    f = QuadraticObjective([1.0, 2.0], offsets=e)
    _, said = _caught(lambda g, **k: dp_heavy_ball(g, epsilon=1.0, steps=2, **k), f)
    # (a quadratic's L is its public spectrum's: no word on the step size)
    assert len(said) == 1 and "offset_l1_radius" in str(said[0].message)
    declared = QuadraticObjective([1.0, 2.0], offsets=e, offset_l1_radius=f.offset_l1_radius,
                                  offset_l2_radius=f.offset_l2_radius)
    _, quiet = _caught(lambda g, **k: dp_heavy_ball(g, epsilon=1.0, steps=2, **k), declared)
    assert quiet == []


def _plugin(sensitivity):
    from dpbounds import extend as ex

    def step(x, grad, noise, p, memory):
        return x - p["alpha"] * (grad(x) + noise)

    return ex.Method("dp_gd_data_radius_probe", step=step, mechanism="laplace",
                     neighbouring="replace_one", sensitivity=sensitivity)


def test_a_plugin_whose_sensitivity_reads_an_undeclared_radius_says_so():
    method = _plugin(lambda f, p: f.l1_sensitivity / f.n)

    def run(f, **k):
        return method.run(f, epsilon=1.0, steps=3, alpha=0.1, **k)

    f = _undeclared()
    res, said = _caught(run, f)
    assert len(said) == 1
    text = str(said[0].message)
    assert "dp_gd_data_radius_probe" in text and "l1_radius" in text
    assert said[0].filename == __file__
    # the class is restored, and the run calibrated to the closed form 2 max ||a||_1 / n
    assert type(f) is LogisticRegression
    assert res.params["sensitivity"] == pytest.approx(2 * L1 / 40, rel=1e-12)
    same, quiet = _caught(run, _declared())
    assert quiet == []
    np.testing.assert_array_equal(np.asarray(res.x), np.asarray(same.x))
    # a public number: silent
    _, quiet = _caught(lambda f, **k: _plugin(2 * L1 / 40).run(f, epsilon=1.0, steps=3,
                                                                alpha=0.1, **k), _undeclared())
    assert quiet == []


def test_the_papers_smoothness_is_the_datas_and_a_default_step_says_so():
    """``kuru(paper_smoothness=True)``'s L is Section 5's lambda_max(A^T A / n) + 2 lam of the
    records themselves (review of stop 82: counted as declared, silent); the computation and
    the bits are unchanged, and an explicit step size is silent."""
    lam = 0.05
    f = LogisticRegression.kuru(A, Y, lam=lam, paper_smoothness=True, l1_radius=L1,
                                l2_radius=L2)
    paper_L = float(np.linalg.eigvalsh(A.T @ A / len(A))[-1]) + 2 * lam  # the closed form
    assert f.smoothness == pytest.approx(paper_L, rel=1e-12)
    run = RUNS["dp_heavy_ball"][0]
    res, said = _caught(run, f)
    assert len(said) == 1 and "paper_smoothness=True" in str(said[0].message)
    shown = float(re.search(r"smoothness L = ([0-9.e+-]+),", str(said[0].message)).group(1))
    assert shown == pytest.approx(paper_L, rel=1e-5)
    same, quiet = _caught(run, f, step_size=1.0 / paper_L)
    assert quiet == []
    np.testing.assert_array_equal(np.asarray(res.x), np.asarray(same.x))


def test_a_data_only_constant_and_small_radii_say_so_too():
    """mutant hunt 18 (M02, M06, M31): a DATA_ONLY constant (CoshCosine's sensitivities, read
    from its records), read by a built-in run or a plug-in, and a radius below 1 were untested.
    Oracle: 2 max ||r_i||_1 of the centred records, and 2 max ||a_i||_1 of rows of norm 1/4."""
    from dpbounds.objectives import CoshCosineObjective

    e = np.random.default_rng(1).normal(size=(20, 3))
    f = CoshCosineObjective(3, offsets=e)
    r = e - e.mean(axis=0)
    want = 2 * float(np.abs(r).sum(axis=1).max())
    _, said = _caught(lambda g, **k: dp_heavy_ball(g, epsilon=1.0, steps=2, step_size=0.1,
                                                   momentum=0.5, **k), f)
    assert len(said) == 1 and "l1_sensitivity" in str(said[0].message)
    shown = float(re.search(r"= ([0-9.e+-]+), taken", str(said[0].message)).group(1))
    assert shown == pytest.approx(want, rel=1e-5)
    plug = _plugin(lambda g, p: g.l1_sensitivity / g.n)
    _, said = _caught(lambda g, **k: plug.run(g, epsilon=1.0, steps=2, alpha=0.1, **k), f)
    assert len(said) == 1 and "l1_sensitivity" in str(said[0].message)
    half = A / (4 * np.linalg.norm(A, axis=1, keepdims=True))  # every row of norm 1/4
    small = LogisticRegression(half, Y, l2=0.1)
    _, said = _caught(RUNS["dp_gd"][0], small, step_size=0.1)
    shown = float(re.search(r"= ([0-9.e+-]+), taken", str(said[0].message)).group(1))
    assert shown == pytest.approx(2 * float(np.abs(half).sum(axis=1).max()), rel=1e-5)
    assert shown < 1.0


def test_a_gaussian_plugin_reading_an_undeclared_radius_says_so():
    """mutant hunt 18 (M07): only the Laplace plug-in's read was tested."""
    from dpbounds import extend as ex

    def step(x, grad, noise, p, memory):
        return x - p["alpha"] * (grad(x) + noise)

    plug = ex.Method("gaussian_radius_probe", step=step, mechanism="gaussian",
                     neighbouring="replace_one", sensitivity=lambda f, p: 2 * f.l2_radius / f.n)
    _, said = _caught(lambda g, **k: plug.run(g, epsilon=1.0, delta=1e-5, steps=2, alpha=0.1,
                                              **k), _undeclared())
    assert len(said) == 1 and "l2_radius" in str(said[0].message)
    _, quiet = _caught(lambda g, **k: plug.run(g, epsilon=1.0, delta=1e-5, steps=2, alpha=0.1,
                                               **k), _declared())
    assert quiet == []


def test_an_objective_without_a_declaration_record_counts_as_undeclared():
    """mutant hunt 18 (M01): an objective of one's own that lists CALIBRATION_RADII but keeps
    no ``radius_declared`` record must read as undeclared (a mutant reading a missing record
    as declared silenced the warning; the package's own objectives always keep one)."""
    e = RNG.normal(size=(10, 2))

    class NoRecord(QuadraticObjective):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            del self.radius_declared

    f = NoRecord([1.0, 2.0], offsets=e)
    _, said = _caught(lambda g, **k: dp_heavy_ball(g, epsilon=1.0, steps=2, **k), f)
    assert len(said) == 1 and "offset_l1_radius" in str(said[0].message)
