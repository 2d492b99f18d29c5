r"""The basic-composition accountants: pure DP, and (epsilon, delta) stated by a theorem.

Pure DP adds the :math:`\varepsilon` (Kuru et al. Thm A.2); stated guarantees add
:math:`\varepsilon` and :math:`\delta` (Dwork & Roth Thm 3.16).
"""

from __future__ import annotations

import math
from typing import Any

from dpbounds._validation import check_nonnegative, check_probability
from dpbounds.privacy._util import nudge_up
from dpbounds.privacy.accountants.base import Accountant, UnsupportedMechanismError, _finite
from dpbounds.privacy.mechanisms import (
    ApproxDpMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    PureDpMechanism,
    SubsampledLaplaceMechanism,
)

__all__ = [
    "BasicAccountant",
    "PureDpAccountant",
]


# ------------------------------------------------------------------------------- pure DP


def _exactly_free(mechanism: Mechanism, raw: float) -> bool:
    """Whether ``mechanism`` costs exactly 0: a pure-DP mechanism stated at epsilon 0 (its
    epsilon under any relation is 0 times a group factor, exact). A zero computed from
    positive inputs (``sens / scale`` underflowing) is not: it is still rounded up."""
    return raw == 0.0 and isinstance(mechanism, PureDpMechanism) and mechanism.epsilon == 0.0


class PureDpAccountant(Accountant):
    r"""Basic composition of pure-DP mechanisms (Kuru et al. Thm A.2): :math:`\sum\varepsilon`.

    ``get_epsilon`` ignores ``delta`` (the guarantee holds with :math:`\delta = 0`).
    """

    name = "pure"

    def __init__(self, neighbouring: Any = Neighbouring.REPLACE_ONE) -> None:
        super().__init__(neighbouring)
        self.epsilon = 0.0

    def spawn(self) -> PureDpAccountant:
        return PureDpAccountant(self.neighbouring)

    def mechanism_epsilon(self, mechanism: Mechanism) -> float:
        if isinstance(mechanism, LaplaceMechanism):
            return self._sensitivity(mechanism) / mechanism.scale
        if isinstance(mechanism, (SubsampledLaplaceMechanism, PureDpMechanism)):
            return self._pure_epsilon(mechanism)
        raise self._unsupported(mechanism, "not a pure-DP mechanism")

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        # rounded up (sens/scale, the product and the sum each round to nearest): the reported
        # epsilon is never below the exact sum, so a calibration against it never overshoots
        raw = self.mechanism_epsilon(mechanism)
        if _exactly_free(mechanism, raw):
            return  # adding 0 is exact (nudged, pure:eps=0 read 1.48e-323)
        eps = float(nudge_up(raw, 1))
        self.epsilon = _finite(float(nudge_up(self.epsilon + count * eps, 2)))

    def get_epsilon(self, delta: float | None = None) -> float:
        if delta is not None:
            check_probability("delta", delta)
        return self.epsilon

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        return 0.0 if epsilon >= self.epsilon else 1.0


# ----------------------------------------------------------------- basic (eps, delta)


class BasicAccountant(Accountant):
    r"""Basic composition of :math:`(\varepsilon,\delta)` guarantees: :math:`\sum\varepsilon_i`
    at :math:`\sum\delta_i` (Dwork & Roth Thm 3.16). Accounts pure-DP mechanisms and
    :class:`~dpbounds.privacy.mechanisms.ApproxDpMechanism` (guarantees from a theorem).
    At a ``delta`` below the composed :math:`\sum\delta_i` nothing is certified: ``inf``.
    """

    name = "basic"

    def __init__(self, neighbouring: Any = Neighbouring.REPLACE_ONE) -> None:
        super().__init__(neighbouring)
        self.epsilon = 0.0
        self.delta = 0.0

    def spawn(self) -> BasicAccountant:
        return BasicAccountant(self.neighbouring)

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        if isinstance(mechanism, ApproxDpMechanism):
            try:
                eps = mechanism.epsilon_under(self.neighbouring)
                dlt = mechanism.delta_under(self.neighbouring)
            except ValueError as err:
                raise self._unsupported(mechanism, str(err)) from None
        else:  # computed (sens / scale, amplification): rounded up as the pure accountant does
            try:
                raw = PureDpAccountant(self.neighbouring).mechanism_epsilon(mechanism)
                if _exactly_free(mechanism, raw):
                    return  # nothing to add: exact
                eps = float(nudge_up(raw))
            except UnsupportedMechanismError:  # in this accountant's name, not "pure"
                raise self._unsupported(mechanism, "not a pure-DP or (eps, delta)-DP "
                                                   "mechanism") from None
            dlt = 0.0
        total = self.epsilon + count * eps
        # a stated guarantee taken once is exact; any sum is rounded up (never below the truth)
        exact = self.epsilon == 0.0 and count == 1
        self.epsilon = _finite(total if exact else float(nudge_up(total, 2)))
        self.delta = min(1.0, self.delta + count * dlt)

    def get_epsilon(self, delta: float | None = None) -> float:
        delta = self.delta if delta is None else check_probability("delta", delta)
        return self.epsilon if delta >= self.delta else math.inf

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        return self.delta if epsilon >= self.epsilon else 1.0
