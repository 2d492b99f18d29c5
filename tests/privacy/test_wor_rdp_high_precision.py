"""The without-replacement Gaussian RDP (Wang, Balle & Kasiviswanathan 2019, Theorem 27) at high
orders against an independent 80-digit evaluation of the same theorem (mpmath, written here from
the theorem: forward differences of exp(x(x-1)/(2 z^2)) summed directly). Where dp_accounting
loses precision (q = 1/2, z = 13.75: order 80 reads above its own unsubsampled Gaussian bound),
this is the oracle that ``tests/privacy/test_run_privacy.py``'s wider window rests on.
Negative control: the generic Theorem 9 (no forward differences) is strictly larger."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from dpbounds.privacy.rdp import _wor_log_a_integers

Z, Q = 27.503772402058843 / 2.0, 0.5


def _log_a(alpha: int) -> float:
    with mp.workdps(80):
        z, q = mp.mpf(Z), mp.mpf(Q)

        def fd(l: int) -> mp.mpf:  # l-th forward difference at 0
            return mp.fsum((-1) ** (l - i) * mp.binomial(l, i) * mp.e ** ((i - 1) * i / (2 * z * z))
                           for i in range(l + 1))

        eps2 = 1 / (z * z)
        s = 1 + q**2 * mp.binomial(alpha, 2) * min(4 * (mp.e**eps2 - 1), 2 * mp.e**eps2)
        for j in range(3, alpha + 1):
            lo, hi = 2 * (j // 2), 2 * ((j + 1) // 2)
            s += q**j * mp.binomial(alpha, j) * min(4 * mp.sqrt(abs(fd(lo)) * abs(fd(hi))),
                                                    2 * mp.e ** ((j - 1) * j / (2 * z * z)))
        return float(mp.log(s))


@pytest.mark.parametrize("alpha", [40, 55, 70])
def test_theorem_27_matches_an_80_digit_evaluation(alpha):
    ours = _wor_log_a_integers(Q, Z, np.array([float(alpha)]))[0]
    # an upper bound (the exact table's 1e-11 log margin), within 1e-10 of the theorem
    assert _log_a(alpha) <= ours <= _log_a(alpha) * (1 + 1e-10)
    generic = _wor_log_a_integers(Q, Z, np.array([float(alpha)]), generic=True)[0]
    assert generic > ours * (1 + 1e-6)  # the control: a looser theorem is told apart
