r"""The Rényi-DP accountant: Gaussian, Laplace, subsampled, tree and pure DP, at the optimal order.

Laplace's RDP is Mironov (2017), Prop. 6; pure DP enters through Bun & Steinke's
:math:`\varepsilon^2/2`-zCDP and :math:`D_\lambda\le\varepsilon`; the conversion to
:math:`(\varepsilon,\delta)` is Mironov's (each cited where it is used).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import (
    check_choice,
    check_nonnegative,
    check_probability,
    holds_text,
)
from dpbounds.privacy.accountants.base import Accountant, _finite, _half_ratio_squared
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    PureDpMechanism,
    Sampling,
    SubsampledDiscreteGaussianMechanism,
    SubsampledGaussianMechanism,
    SubsampledLaplaceMechanism,
    SubsampledZcdpMechanism,
    TreeAggregationMechanism,
    ZcdpMechanism,
)
from dpbounds.privacy.rdp import (
    DEFAULT_ORDERS,
    EXTENDED_ORDERS,
    poisson_subsampled_gaussian_rdp,
    poisson_zcdp_rdp,
    rdp_to_dp,
    without_replacement_discrete_gaussian_rdp,
    without_replacement_gaussian_rdp,
    without_replacement_zcdp_rdp,
)
from dpbounds.privacy.zcdp import zcdp_to_dp_delta, zcdp_to_dp_epsilon

__all__ = [
    "RdpAccountant",
]


# ----------------------------------------------------------------------------------- RDP


def laplace_rdp(noise_multiplier: float, orders: np.ndarray) -> np.ndarray:
    r"""RDP of the Laplace mechanism with scale/sensitivity ``noise_multiplier`` = :math:`\lambda`
    (Mironov 2017, Prop. 6), capped at the pure :math:`1/\lambda`:

    .. math:: \frac{1}{\alpha-1}\ln\Big(\frac{\alpha}{2\alpha-1}e^{(\alpha-1)/\lambda}
       + \frac{\alpha-1}{2\alpha-1}e^{-\alpha/\lambda}\Big).
    """
    a = np.asarray(orders, dtype=float)
    inv = 1.0 / noise_multiplier
    val = np.logaddexp(np.log(a / (2 * a - 1)) + (a - 1) * inv,
                       np.log((a - 1) / (2 * a - 1)) - a * inv) / (a - 1)
    return np.minimum(np.maximum(val, 0.0), inv)


def _pure_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    # eps-DP => (eps^2/2)-zCDP (Bun & Steinke) and D_alpha <= eps
    return np.minimum(orders * epsilon**2 / 2.0, epsilon)


def _shown(value: Any) -> str:
    """``value`` for an error message, at most 200 characters (``repr`` of an integer past
    4300 digits raises)."""
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} holding a huge integer"
    return text if len(text) <= 200 else text[:197] + "..."


class RdpAccountant(Accountant):
    r"""Rényi-DP accountant (own implementation) with the optimal order.

    Parameters
    ----------
    neighbouring : 'add_remove' or 'replace_one'
        Relation of the reported guarantee.
    orders : array
        RDP orders (> 1).
    conversion : 'improved' or 'mironov'
        RDP → (ε, δ) conversion (:func:`dpbounds.privacy.rdp.rdp_to_dp`).
    """

    name = "rdp"

    def __init__(
        self,
        neighbouring: Any = Neighbouring.ADD_REMOVE,
        orders: Any = DEFAULT_ORDERS,
        conversion: str = "improved",
    ) -> None:
        super().__init__(neighbouring)
        bad = "orders must be a non-empty 1-d array of finite numbers > 1, got "
        if isinstance(orders, str | bytes) or holds_text(orders):  # "23" read as [2, 3]
            raise ValueError(bad + _shown(orders))
        try:
            self.orders = (DEFAULT_ORDERS if orders is DEFAULT_ORDERS
                           else np.asarray(orders, float))
        except (TypeError, ValueError, OverflowError):  # 10**400: OverflowError (fuzz 18)
            raise ValueError(bad + _shown(orders)) from None
        if self.orders.ndim != 1 or self.orders.size == 0 or np.any(self.orders <= 1) or not \
                np.all(np.isfinite(self.orders)):
            raise ValueError(bad + _shown(orders))
        self.conversion = check_choice("conversion", conversion, ("improved", "mironov"))
        self._grid = np.zeros_like(self.orders)  # non-linear part, on the order grid
        self.rho = 0.0  # linear part alpha * rho (Gaussian, tree, zCDP): any order, exactly

    @property
    def rdp(self) -> np.ndarray:
        """Total RDP on the order grid."""
        return self._grid + self.orders * self.rho

    def spawn(self) -> RdpAccountant:
        return RdpAccountant(self.neighbouring, self.orders, self.conversion)

    def mechanism_rho(self, mechanism: Mechanism) -> float | None:
        """Slope rho of a mechanism whose RDP is alpha * rho (else None)."""
        nb = self.neighbouring
        if isinstance(mechanism, GaussianMechanism):
            return _half_ratio_squared(self._sensitivity(mechanism), mechanism.sigma)
        if isinstance(mechanism, TreeAggregationMechanism):
            sens = self._sensitivity(mechanism)
            return mechanism.node_count * _half_ratio_squared(sens, mechanism.sigma)
        if isinstance(mechanism, ZcdpMechanism):
            try:
                return mechanism.rho_under(nb)
            except ValueError as err:  # a refused relation conversion
                raise self._unsupported(mechanism, str(err)) from None
        return None

    def mechanism_rdp(self, mechanism: Mechanism) -> np.ndarray:
        """RDP curve of one run of ``mechanism`` under this accountant's relation."""
        o, nb = self.orders, self.neighbouring
        rho = self.mechanism_rho(mechanism)
        if rho is not None:
            return o * rho
        if isinstance(mechanism, LaplaceMechanism):
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return np.zeros_like(o)
            return laplace_rdp(mechanism.scale / sens, o)
        if isinstance(mechanism, SubsampledGaussianMechanism):
            natural = mechanism.sampling.natural_neighbouring
            if nb is not natural:
                raise self._unsupported(
                    mechanism, f"{mechanism.sampling.value} sampling is analysed under {natural}")
            sens = self._sensitivity(mechanism)
            z = mechanism.sigma / sens if sens > 0 else math.inf
            if not math.isfinite(z):
                return np.zeros_like(o)
            if mechanism.sampling is Sampling.POISSON:
                return np.asarray(poisson_subsampled_gaussian_rdp(mechanism.sampling_rate, z, o))
            return np.asarray(without_replacement_gaussian_rdp(mechanism.sampling_rate, z, o))
        if isinstance(mechanism, SubsampledZcdpMechanism):
            natural = mechanism.sampling.natural_neighbouring
            if nb is not natural:
                raise self._unsupported(
                    mechanism, f"{mechanism.sampling.value} sampling is analysed under {natural}")
            rho = mechanism.rho
            if isinstance(mechanism, SubsampledDiscreteGaussianMechanism):
                try:  # its sensitivity converted to the sampling's relation
                    rho = mechanism.rho_under(nb)
                except ValueError as err:
                    raise self._unsupported(mechanism, str(err)) from None
            if mechanism.sampling is Sampling.POISSON:
                return np.asarray(poisson_zcdp_rdp(mechanism.sampling_rate, rho, o))
            if isinstance(mechanism, SubsampledDiscreteGaussianMechanism):
                # integer shifts: its integer-order moments are the continuous Gaussian's
                return np.asarray(without_replacement_discrete_gaussian_rdp(
                    mechanism.sampling_rate, rho, o))
            return np.asarray(without_replacement_zcdp_rdp(mechanism.sampling_rate, rho, o))
        if isinstance(mechanism, (SubsampledLaplaceMechanism, PureDpMechanism)):
            return _pure_rdp(self._pure_epsilon(mechanism), o)
        raise self._unsupported(mechanism)

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        rho = self.mechanism_rho(mechanism)
        if rho is not None:
            self.rho = _finite(self.rho + count * rho)
        else:
            self._grid = _finite(self._grid + count * self.mechanism_rdp(mechanism))

    def _zcdp_method(self) -> str:
        return "tight" if self.conversion == "improved" else "standard"

    def get_epsilon(self, delta: float | None) -> float:
        delta = check_probability("delta", delta)  # an (eps, delta) accountant needs delta
        eps, best = rdp_to_dp(self.rdp, self.orders, delta, self.conversion)
        if not np.any(self._grid):  # purely linear curve: optimise over every order
            eps = min(eps, float(zcdp_to_dp_epsilon(self.rho, delta, self._zcdp_method())))
        elif best == self.orders[-1] and self.orders is DEFAULT_ORDERS:
            # tiny budgets need very large orders; look there too (any order is a valid bound)
            big = RdpAccountant(self.neighbouring, EXTENDED_ORDERS, self.conversion)
            for mechanism, count in self.entries:
                big.compose(mechanism, count)
            eps = min(eps, rdp_to_dp(big.rdp, big.orders, delta, self.conversion)[0])
        return float(eps)

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        if not np.any(self._grid):
            return min(self._grid_delta(epsilon),
                       zcdp_to_dp_delta(self.rho, epsilon, self._zcdp_method()))
        return self._grid_delta(epsilon)

    def _grid_delta(self, epsilon: float) -> float:
        a, r = self.orders, self.rdp
        # an epsilon near 1e308 overflows to -inf: the limit (delta 0), not a warning on
        # stderr (`--curve 1e300` printed numpy's RuntimeWarning; fuzz round 8)
        with np.errstate(over="ignore"):
            log_delta = (a - 1) * (r - epsilon)  # Mironov
            if self.conversion == "improved":
                improved = (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a)
                log_delta = np.where(a > 1.01, np.minimum(log_delta, improved), log_delta)
            with np.errstate(divide="ignore"):
                kl = 0.5 * np.log1p(-np.exp(-r))  # delta <= sqrt(1 - e^{-KL}), KL <= D_alpha
            log_delta = np.minimum(log_delta, kl)
        return float(min(1.0, math.exp(min(0.0, float(np.min(log_delta))))))
