"""A noise the accountant cannot certify mid-search counts as not meeting the target
(mutant hunt 14: a refusal cached as eps = 0 survived every test; PLD Laplace at eps = 300
over 10 steps meets refusals at scales near 1e-6 during its search).

Oracle: k Laplace releases of scale b and sensitivity 1 are (k/b)-DP (pure composition),
and their (eps, delta) at delta = 1e-6 is within 0.1% of k/b at these budgets (its delta
term is negligible there), so the calibrated b must give k/b in [target, 1.01 target]:
two-sided, computed without the accountants.
"""

from __future__ import annotations

import pytest

from dpbounds.privacy.calibrate import calibrate
from dpbounds.privacy.mechanisms import LaplaceMechanism


@pytest.mark.parametrize("accountant, target, count", [
    ("pld", 300.0, 1), ("pld", 1000.0, 10), ("pld", 300.0, 10), ("rdp", 300.0, 10),
    ("rdp", 30.0, 10)])
def test_laplace_calibration_at_large_budgets_is_two_sided(accountant, target, count):
    # (pld, 300, 1) and (pld, 1000, 10) meet refusals at scale 6.1e-5 in their search
    b = calibrate(lambda s: LaplaceMechanism(s), target, 1e-6, accountant, count)
    assert target * (1 - 1e-3) <= count / b <= target * 1.01
