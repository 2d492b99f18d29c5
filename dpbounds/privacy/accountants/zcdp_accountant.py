"""The zCDP accountant of Lee & Kifer's ledger (Lemmas 3.5-3.8; conversion eq. (5))."""

from __future__ import annotations

from typing import Any

from dpbounds._validation import check_choice, check_probability
from dpbounds.privacy.accountants.base import Accountant, _finite, _half_ratio_squared
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    PureDpMechanism,
    SubsampledLaplaceMechanism,
    TreeAggregationMechanism,
    ZcdpMechanism,
)
from dpbounds.privacy.zcdp import zcdp_to_dp_delta, zcdp_to_dp_epsilon

__all__ = [
    "ZcdpAccountant",
]


# ---------------------------------------------------------------------------------- zCDP


class ZcdpAccountant(Accountant):
    r"""zCDP accountant (Lee & Kifer Lemmas 3.5-3.8): budgets add up; ``conversion`` is
    ``"standard"`` (Lemma 3.8) or ``"tight"`` (improved conversion, optimal order)."""

    name = "zcdp"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE,
                 conversion: str = "standard") -> None:
        super().__init__(neighbouring)
        self.conversion = check_choice("conversion", conversion, ("standard", "tight"))
        self.rho = 0.0

    def spawn(self) -> ZcdpAccountant:
        return ZcdpAccountant(self.neighbouring, self.conversion)

    def mechanism_rho(self, mechanism: Mechanism) -> float:
        nb = self.neighbouring
        if isinstance(mechanism, GaussianMechanism):
            return _half_ratio_squared(self._sensitivity(mechanism), mechanism.sigma)
        if isinstance(mechanism, TreeAggregationMechanism):
            sens = self._sensitivity(mechanism)
            return mechanism.node_count * _half_ratio_squared(sens, mechanism.sigma)
        if isinstance(mechanism, LaplaceMechanism):
            return (self._sensitivity(mechanism) / mechanism.scale) ** 2 / 2
        if isinstance(mechanism, (SubsampledLaplaceMechanism, PureDpMechanism)):
            return self._pure_epsilon(mechanism) ** 2 / 2
        if isinstance(mechanism, ZcdpMechanism):
            try:
                return mechanism.rho_under(nb)
            except ValueError as err:  # a refused relation conversion
                raise self._unsupported(mechanism, str(err)) from None
        raise self._unsupported(mechanism, "zCDP has no subsampling amplification; use rdp/pld")

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        self.rho = _finite(self.rho + count * self.mechanism_rho(mechanism))

    def budget(self, epsilon: float, delta: float) -> float:
        r"""Largest total :math:`\rho` this accountant converts to at most ``(epsilon, delta)``
        (Lee & Kifer eq. (5) for the standard conversion; rounded down)."""
        from dpbounds.privacy.zcdp import dp_to_zcdp_rho

        return float(dp_to_zcdp_rho(epsilon, delta, method=self.conversion))

    def closed_form_noise(self, mechanism_for: Any, epsilon: float, delta: float | None,
                          count: int) -> float | None:
        r"""Gaussian and tree aggregation: the budget :math:`\rho(\varepsilon,\delta)` of the
        conversion, inverted (Lee & Kifer eq. (5); Tran & Cutkosky Thm 10)."""
        from dpbounds.privacy.tree import tree_aggregation_sigma
        from dpbounds.privacy.zcdp import gaussian_sigma_for_zcdp

        probe = mechanism_for(1.0)
        if delta is None or not isinstance(probe, (GaussianMechanism, TreeAggregationMechanism)):
            return None
        sens = self._sensitivity(probe)
        if sens == 0:
            return None
        if isinstance(probe, TreeAggregationMechanism):
            return float(tree_aggregation_sigma(epsilon, delta, sens, probe.node_count * count,
                                                method=self.conversion))
        return float(gaussian_sigma_for_zcdp(self.budget(epsilon, delta) / count, sens))

    def get_epsilon(self, delta: float | None) -> float:
        delta = check_probability("delta", delta)  # an (eps, delta) accountant needs delta
        return float(zcdp_to_dp_epsilon(self.rho, delta, self.conversion))

    def get_delta(self, epsilon: float) -> float:
        return zcdp_to_dp_delta(self.rho, epsilon, self.conversion)
