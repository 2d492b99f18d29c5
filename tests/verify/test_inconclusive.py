"""Say when nothing was shown (issue 34 item 6): a study whose utility points are all vacuous,
or whose noise-energy check cannot resolve a 10% change, ends INCONCLUSIVE (exit 3), never
PASS; correct code that shows something still passes (exit 0)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpbounds.verify import scaling_study
from dpbounds.verify.verdicts import POWER_CHANGE, Z, energy_power


@pytest.mark.parametrize("se, trials", [(0.01, 6), (0.02, 6), (0.05, 40)])
def test_energy_power_against_monte_carlo(se: float, trials: int) -> None:
    """Oracle: simulated check means shifted by 10% of ``exact`` fail the two-sided check
    ``|mean - exact| <= Z se`` at the rate ``energy_power`` promises -- >= 90% when it says
    powered, and at the count it asks for (``se`` scaled by ``sqrt(trials / need)``).
    Negative control: at half that count the power falls below 90%."""
    exact = 1.0
    rng = np.random.default_rng(0)

    def power(s: float) -> float:
        means = exact * (1 + POWER_CHANGE) + s * rng.standard_normal(20000)
        return float(np.mean(np.abs(means - exact) > Z * s))

    tol = 3 * math.sqrt(0.09 / 20000)  # 3 s.e. of a simulated rate near 0.9
    powered, need = energy_power(se, exact, 0.0, trials)
    if powered:
        assert need == trials and power(se) >= 0.9 - tol
    else:
        assert need > trials and power(se) < 0.9
        assert power(se * math.sqrt(trials / need)) >= 0.9 - tol
        assert power(se * math.sqrt(trials / (need / 2))) < 0.9 - tol  # negative control


def test_energy_power_tolerance_wider_than_the_change() -> None:
    """A check whose relative tolerance alone exceeds 10% is powered by no trial count."""
    assert energy_power(0.0, 1.0, 0.2, 6) == (False, 0)
    assert energy_power(0.0, 1.0, 0.0, 6) == (True, 6)


def test_frozen_algorithm_1_is_not_a_pass() -> None:
    """The issue's finding: Algorithm 1's quick study passed (exit 0) with an algorithm that
    never moves, every utility verdict vacuous. Correct code there ends INCONCLUSIVE and says
    what would decide (an informative grid); the frozen mutant now FAILs, by the clipping
    probe's exact step direction (a step of 1e-9 eta has none: a "moves at all" check)."""
    ok = scaling_study("tran_cutkosky.alg1", vary={"d": None}, quick=True)
    assert ok.holds and ok.status == "INCONCLUSIVE"
    assert not any(ok.informative)
    assert any("--grid informative" in why for why in ok.inconclusive)
    assert ok.to_json()["status"] == "INCONCLUSIVE"
    res = scaling_study("tran_cutkosky.alg1", vary={"d": None}, quick=True, mutation="frozen")
    assert res.status == "FAIL"
    assert [v for v in res.verdicts if v.failed][0].case.startswith("clip_exact")


def test_informative_correct_study_passes_and_frozen_fails() -> None:
    """Negative control of the status: DP-NAG's quick grid is informative and its energy
    checks resolve a 10% change, so correct code PASSes; the frozen mutant FAILs there."""
    ok = scaling_study("strongly_convex.nag", vary={"N": None}, quick=True)
    assert ok.status == "PASS" and ok.inconclusive == ()
    assert all(v.powered for v in ok.verdicts)
    bad = scaling_study("strongly_convex.nag", vary={"N": None}, quick=True, mutation="frozen")
    assert bad.status == "FAIL"


def test_underpowered_energy_check_names_the_trials() -> None:
    """DP-NAG at 20 trials: its Laplace energy check cannot resolve a 10% change; the study
    says INCONCLUSIVE and how many trials would; at that many it PASSes."""
    few = scaling_study("strongly_convex.nag", vary={"N": [300, 1000]}, trials=20)
    assert few.holds and few.status == "INCONCLUSIVE"
    needs = [v for v in few.verdicts if not v.powered]
    assert needs and all("--trials" in v.needs for v in needs)
    n = max(int(v.needs.split("--trials ")[1].split()[0]) for v in needs)
    assert 20 < n <= 1500
    enough = scaling_study("strongly_convex.nag", vary={"N": [300, 1000]}, trials=n + 50)
    assert enough.status == "PASS"
