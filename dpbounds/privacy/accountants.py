r"""Interchangeable privacy accountants.

Each accountant reports its guarantee under its own :class:`~dpbounds.privacy.mechanisms.
Neighbouring` relation, converts every mechanism to it (see :mod:`~dpbounds.privacy.mechanisms`)
and raises :class:`UnsupportedMechanismError` (a ``ValueError``) for what it cannot account.

==========================  =====================================================================
accountant                  mechanisms
==========================  =====================================================================
:class:`RdpAccountant`      Gaussian, Laplace, subsampled Gaussian (Poisson: add/remove;
                            without replacement: replace-one), subsampled Laplace (via pure DP),
                            tree aggregation, zCDP, pure DP. Own code, optimal order.
:class:`ZcdpAccountant`     Gaussian, Laplace and pure DP (:math:`\varepsilon^2/2`), tree
                            aggregation, zCDP. Lee & Kifer's ledger.
:class:`PldAccountant`      Gaussian, Laplace, Poisson-subsampled Gaussian (add/remove), tree
                            aggregation,
                            pure DP; ``dp_accounting``'s privacy-loss distributions (pessimistic),
                            with an optimistic twin for error bars (:meth:`~PldAccountant.
                            epsilon_interval`).
:class:`PureDpAccountant`   Laplace, subsampled Laplace (Kuru et al. (11)), pure DP: basic
                            composition (Kuru et al. Thm A.2).
==========================  =====================================================================

Examples
--------
>>> from dpbounds.privacy.accountants import RdpAccountant
>>> from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism
>>> acc = RdpAccountant().compose(SubsampledGaussianMechanism(1.1, 0.01), 1000)
>>> round(acc.get_epsilon(1e-5), 3)
1.725
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np

from dpbounds._validation import check_choice, check_int, check_nonnegative, check_probability
from dpbounds.privacy.laplace import amplify_without_replacement
from dpbounds.privacy.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    PureDpMechanism,
    Sampling,
    SubsampledGaussianMechanism,
    SubsampledLaplaceMechanism,
    TreeAggregationMechanism,
    ZcdpMechanism,
)
from dpbounds.privacy.rdp import (
    DEFAULT_ORDERS,
    poisson_subsampled_gaussian_rdp,
    rdp_to_dp_epsilon,
    without_replacement_gaussian_rdp,
)
from dpbounds.privacy.zcdp import zcdp_to_dp_delta, zcdp_to_dp_epsilon

__all__ = [
    "ACCOUNTANTS",
    "Accountant",
    "PldAccountant",
    "PureDpAccountant",
    "RdpAccountant",
    "UnsupportedMechanismError",
    "ZcdpAccountant",
    "make_accountant",
]


class UnsupportedMechanismError(ValueError):
    """The accountant cannot account this mechanism (under its neighbouring relation)."""


class Accountant(abc.ABC):
    """Common interface: ``compose(mechanism, count)``, ``get_epsilon(delta)``,
    ``get_delta(epsilon)``, ``supports(mechanism)`` and ``spawn()`` (an empty copy)."""

    name: str = "accountant"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE) -> None:
        self.neighbouring = Neighbouring.coerce(neighbouring)
        self.entries: list[tuple[Mechanism, int]] = []

    def compose(self, mechanism: Mechanism, count: int = 1) -> Accountant:
        """Account ``count`` runs of ``mechanism``; returns ``self`` for chaining."""
        count = check_int("count", count, minimum=0)
        if not isinstance(mechanism, Mechanism):
            raise UnsupportedMechanismError(f"mechanism must be a Mechanism, got {mechanism!r}")
        self._compose(mechanism, count)
        self.entries.append((mechanism, count))
        return self

    def supports(self, mechanism: Mechanism) -> bool:
        """Whether :meth:`compose` would accept ``mechanism``."""
        try:
            self.spawn()._compose(mechanism, 1)
        except UnsupportedMechanismError:
            return False
        return True

    @abc.abstractmethod
    def _compose(self, mechanism: Mechanism, count: int) -> None: ...

    @abc.abstractmethod
    def get_epsilon(self, delta: float) -> float:
        """Smallest epsilon this accountant certifies at ``delta``."""

    @abc.abstractmethod
    def get_delta(self, epsilon: float) -> float:
        """Smallest delta this accountant certifies at ``epsilon``."""

    @abc.abstractmethod
    def spawn(self) -> Accountant:
        """A fresh, empty accountant with the same settings."""

    def _sensitivity(self, mechanism: Mechanism) -> float:
        """``mechanism.sensitivity_under(self.neighbouring)``; a refused conversion (replace-one
        → add/remove without ``per_example_sum``) becomes :class:`UnsupportedMechanismError`."""
        try:
            return mechanism.sensitivity_under(self.neighbouring)
        except ValueError as err:
            raise self._unsupported(mechanism, str(err)) from None

    def _unsupported(self, mechanism: Mechanism, why: str = "") -> UnsupportedMechanismError:
        text = f"{self.name} accountant ({self.neighbouring}) does not support {mechanism!r}"
        return UnsupportedMechanismError(text + (f": {why}" if why else ""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(neighbouring={self.neighbouring.value!r}, " \
               f"entries={len(self.entries)})"


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
        self.orders = np.asarray(orders, dtype=float)
        if self.orders.ndim != 1 or np.any(self.orders <= 1) or not np.all(
                np.isfinite(self.orders)):
            raise ValueError(f"orders must be a 1-d array of finite numbers > 1, got {orders!r}")
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
            return self._sensitivity(mechanism) ** 2 / (2 * mechanism.sigma**2)
        if isinstance(mechanism, TreeAggregationMechanism):
            sens = self._sensitivity(mechanism)
            return mechanism.node_count * sens**2 / (2 * mechanism.sigma**2)
        if isinstance(mechanism, ZcdpMechanism):
            return mechanism.rho_under(nb)
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
        if isinstance(mechanism, SubsampledLaplaceMechanism):
            if nb is not Neighbouring.REPLACE_ONE:
                raise self._unsupported(mechanism, "Theorem A.3 is stated for replace-one")
            eps0 = self._sensitivity(mechanism) / mechanism.scale
            eps = amplify_without_replacement(eps0, mechanism.sample_size,
                                              mechanism.dataset_size)
            return _pure_rdp(eps, o)
        if isinstance(mechanism, PureDpMechanism):
            return _pure_rdp(mechanism.epsilon_under(nb), o)
        raise self._unsupported(mechanism)

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        rho = self.mechanism_rho(mechanism)
        if rho is not None:
            self.rho += count * rho
        else:
            self._grid = self._grid + count * self.mechanism_rdp(mechanism)

    def _zcdp_method(self) -> str:
        return "tight" if self.conversion == "improved" else "standard"

    def get_epsilon(self, delta: float) -> float:
        eps = rdp_to_dp_epsilon(self.rdp, self.orders, delta, self.conversion)
        if not np.any(self._grid):  # purely linear curve: optimise over every order
            eps = min(eps, float(zcdp_to_dp_epsilon(self.rho, delta, self._zcdp_method())))
        return eps

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        if not np.any(self._grid):
            return min(self._grid_delta(epsilon),
                       zcdp_to_dp_delta(self.rho, epsilon, self._zcdp_method()))
        return self._grid_delta(epsilon)

    def _grid_delta(self, epsilon: float) -> float:
        a, r = self.orders, self.rdp
        log_delta = (a - 1) * (r - epsilon)  # Mironov
        if self.conversion == "improved":
            improved = (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a)
            log_delta = np.where(a > 1.01, np.minimum(log_delta, improved), log_delta)
            with np.errstate(divide="ignore"):
                kl = 0.5 * np.log1p(-np.exp(-r))  # delta <= sqrt(1 - e^{-KL}), KL <= D_alpha
            log_delta = np.minimum(log_delta, kl)
        return float(min(1.0, math.exp(min(0.0, float(np.min(log_delta))))))


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
            return self._sensitivity(mechanism) ** 2 / (2 * mechanism.sigma**2)
        if isinstance(mechanism, TreeAggregationMechanism):
            sens = self._sensitivity(mechanism)
            return mechanism.node_count * sens**2 / (2 * mechanism.sigma**2)
        if isinstance(mechanism, LaplaceMechanism):
            return (self._sensitivity(mechanism) / mechanism.scale) ** 2 / 2
        if isinstance(mechanism, SubsampledLaplaceMechanism):
            if nb is not Neighbouring.REPLACE_ONE:
                raise self._unsupported(mechanism, "Theorem A.3 is stated for replace-one")
            eps0 = self._sensitivity(mechanism) / mechanism.scale
            eps = amplify_without_replacement(eps0, mechanism.sample_size,
                                              mechanism.dataset_size)
            return eps**2 / 2
        if isinstance(mechanism, PureDpMechanism):
            return mechanism.epsilon_under(nb) ** 2 / 2
        if isinstance(mechanism, ZcdpMechanism):
            return mechanism.rho_under(nb)
        raise self._unsupported(mechanism, "zCDP has no subsampling amplification; use rdp/pld")

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        self.rho += count * self.mechanism_rho(mechanism)

    def get_epsilon(self, delta: float) -> float:
        return float(zcdp_to_dp_epsilon(self.rho, delta, self.conversion))

    def get_delta(self, epsilon: float) -> float:
        return zcdp_to_dp_delta(self.rho, epsilon, self.conversion)


# ----------------------------------------------------------------------------------- PLD


class PldAccountant(Accountant):
    r"""Privacy-loss-distribution accountant backed by ``dp_accounting`` (tight numerical
    accounting; pessimistic discretisation, so its epsilon is an upper bound).

    Tree aggregation enters as a Gaussian of noise multiplier :math:`\sigma/(\Delta\sqrt K)`:
    each node is a :math:`(\Delta/\sigma)`-GDP mechanism in the record, at most :math:`K`
    of them involve it, and adaptive GDP composition (Dong, Roth & Su 2022) gives
    :math:`\sqrt K\Delta/\sigma`-GDP.
    """

    name = "pld"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE,
                 value_discretization_interval: float = 1e-4,
                 pessimistic: bool = True) -> None:
        super().__init__(neighbouring)
        self.value_discretization_interval = float(
            check_nonnegative("value_discretization_interval", value_discretization_interval))
        if self.value_discretization_interval <= 0:
            raise ValueError("value_discretization_interval must be > 0")
        self.pessimistic = bool(pessimistic)
        self._pld = None

    def spawn(self) -> PldAccountant:
        return PldAccountant(self.neighbouring, self.value_discretization_interval,
                             self.pessimistic)

    def _mechanism_pld(self, mechanism: Mechanism):
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pldlib

        nb = self.neighbouring
        kw = dict(pessimistic_estimate=self.pessimistic,
                  value_discretization_interval=self.value_discretization_interval)
        if isinstance(mechanism, (GaussianMechanism, TreeAggregationMechanism)):
            sens = self._sensitivity(mechanism)
            if isinstance(mechanism, TreeAggregationMechanism):
                sens *= math.sqrt(mechanism.node_count)
            if sens == 0:
                return pldlib.identity(**kw)
            return pldlib.from_gaussian_mechanism(mechanism.sigma, sensitivity=sens,
                                                  use_connect_dots=self.pessimistic, **kw)
        if isinstance(mechanism, LaplaceMechanism):
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return pldlib.identity(**kw)
            return pldlib.from_laplace_mechanism(mechanism.scale, sensitivity=sens,
                                                 use_connect_dots=self.pessimistic, **kw)
        if isinstance(mechanism, SubsampledGaussianMechanism):
            if mechanism.sampling is not Sampling.POISSON:
                raise self._unsupported(
                    mechanism, "dp_accounting has no PLD for sampling without replacement")
            if nb is not Neighbouring.ADD_REMOVE:
                raise self._unsupported(mechanism, "Poisson sampling is analysed under add_remove")
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return pldlib.identity(**kw)
            return pldlib.from_gaussian_mechanism(
                mechanism.sigma, sensitivity=sens, sampling_prob=mechanism.sampling_rate,
                use_connect_dots=self.pessimistic, **kw)
        if isinstance(mechanism, (PureDpMechanism, SubsampledLaplaceMechanism)):
            if isinstance(mechanism, PureDpMechanism):
                eps = mechanism.epsilon_under(nb)
            else:
                if nb is not Neighbouring.REPLACE_ONE:
                    raise self._unsupported(mechanism, "Theorem A.3 is stated for replace-one")
                eps0 = self._sensitivity(mechanism) / mechanism.scale
                eps = amplify_without_replacement(eps0, mechanism.sample_size,
                                                  mechanism.dataset_size)
            if eps == 0:
                return pldlib.identity(**kw)
            return pldlib.from_privacy_parameters(
                common.DifferentialPrivacyParameters(eps, 0.0),
                value_discretization_interval=self.value_discretization_interval)
        raise self._unsupported(mechanism)

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        if count == 0:
            return
        pld = self._mechanism_pld(mechanism)
        if count > 1:
            pld = pld.self_compose(count)
        self._pld = pld if self._pld is None else self._pld.compose(pld)

    def get_epsilon(self, delta: float) -> float:
        delta = check_probability("delta", delta)
        if self._pld is None:
            return 0.0
        return max(0.0, float(self._pld.get_epsilon_for_delta(delta)))

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        if self._pld is None:
            return 0.0
        return float(min(1.0, max(0.0, self._pld.get_delta_for_epsilon(epsilon))))

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(lower, upper) epsilon from the optimistic and pessimistic discretisations."""
        twin = PldAccountant(self.neighbouring, self.value_discretization_interval,
                             pessimistic=not self.pessimistic)
        for mech, count in self.entries:
            twin.compose(mech, count)
        pair = sorted((self.get_epsilon(delta), twin.get_epsilon(delta)))
        return pair[0], pair[1]


# ------------------------------------------------------------------------------- pure DP


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
        nb = self.neighbouring
        if isinstance(mechanism, LaplaceMechanism):
            return self._sensitivity(mechanism) / mechanism.scale
        if isinstance(mechanism, SubsampledLaplaceMechanism):
            if nb is not Neighbouring.REPLACE_ONE:
                raise self._unsupported(mechanism, "Theorem A.3 is stated for replace-one")
            eps0 = self._sensitivity(mechanism) / mechanism.scale
            return float(amplify_without_replacement(eps0, mechanism.sample_size,
                                                     mechanism.dataset_size))
        if isinstance(mechanism, PureDpMechanism):
            return mechanism.epsilon_under(nb)
        raise self._unsupported(mechanism, "not a pure-DP mechanism")

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        self.epsilon += count * self.mechanism_epsilon(mechanism)

    def get_epsilon(self, delta: float | None = None) -> float:
        if delta is not None:
            check_probability("delta", delta)
        return self.epsilon

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        return 0.0 if epsilon >= self.epsilon else 1.0


#: Accountant classes by name.
ACCOUNTANTS: dict[str, type[Accountant]] = {
    "rdp": RdpAccountant,
    "zcdp": ZcdpAccountant,
    "pld": PldAccountant,
    "pure": PureDpAccountant,
}


def make_accountant(name: Any, neighbouring: Any = None, **options: Any) -> Accountant:
    """An empty accountant from a name (``'rdp'``, ``'zcdp'``, ``'pld'``, ``'pure'``), an
    :class:`Accountant` (its :meth:`~Accountant.spawn`) or a zero-argument factory."""
    if isinstance(name, Accountant):
        return name.spawn()
    if callable(name) and not isinstance(name, str):
        acc = name()
        if not isinstance(acc, Accountant):
            raise ValueError(f"accountant factory must return an Accountant, got {acc!r}")
        return acc
    name = check_choice("accountant", name, tuple(ACCOUNTANTS))
    cls = ACCOUNTANTS[name]
    if neighbouring is None:
        return cls(**options)
    return cls(neighbouring, **options)
