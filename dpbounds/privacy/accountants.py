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
:class:`PldAccountant`      Gaussian and tree aggregation (exact, closed form), Laplace,
                            Poisson-subsampled Gaussian (add/remove), pure DP:
                            ``dp_accounting``'s privacy-loss distributions (pessimistic) on a grid
                            chosen from the mechanisms' scales, with an optimistic twin for error
                            bars (:meth:`~PldAccountant.epsilon_interval`).
:class:`PureDpAccountant`   Laplace, subsampled Laplace (Kuru et al. (11)), pure DP: basic
                            composition (Kuru et al. Thm A.2).
:class:`BasicAccountant`    The pure-DP mechanisms and (ε, δ) guarantees stated by a theorem
                            (:class:`~dpbounds.privacy.mechanisms.ApproxDpMechanism`): basic
                            composition of ε and δ.
==========================  =====================================================================

Every accountant composes a :class:`~dpbounds.privacy.mechanisms.ComposedMechanism` part by
part, takes a mechanism's own math from the mechanism (e.g.
:meth:`SubsampledLaplaceMechanism.epsilon_under
<dpbounds.privacy.mechanisms.SubsampledLaplaceMechanism.epsilon_under>`, the amplification)
and may offer a closed-form inverse (:meth:`Accountant.closed_form_noise`), the fast path of
:func:`~dpbounds.privacy.calibrate.calibrate`.

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

from dpbounds._validation import (
    MAX_COUNT,
    check_choice,
    check_int,
    check_nonnegative,
    check_probability,
)
from dpbounds.privacy import _pld
from dpbounds.privacy._util import log1p_times_expm1, nudge_up
from dpbounds.privacy.gaussian import gaussian_delta, gaussian_epsilon
from dpbounds.privacy.mechanisms import (
    ApproxDpMechanism,
    ComposedMechanism,
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
    EXTENDED_ORDERS,
    poisson_subsampled_gaussian_rdp,
    rdp_to_dp,
    without_replacement_gaussian_rdp,
)
from dpbounds.privacy.zcdp import zcdp_to_dp_delta, zcdp_to_dp_epsilon

__all__ = [
    "ACCOUNTANTS",
    "MAX_PLD_COUNT",
    "MAX_PLD_STEP_LOSS",
    "Accountant",
    "BasicAccountant",
    "PldAccountant",
    "PureDpAccountant",
    "RdpAccountant",
    "UnsupportedMechanismError",
    "ZcdpAccountant",
    "make_accountant",
]


class UnsupportedMechanismError(ValueError):
    """The accountant cannot account this mechanism (under its neighbouring relation)."""


def _finite(value: Any) -> Any:
    """``value`` if finite; else OverflowError (``Accountant.compose`` turns it into a
    ``ValueError`` and leaves the accountant unchanged)."""
    if not np.all(np.isfinite(value)):
        raise OverflowError("the composed budget is not finite")
    return value


class Accountant(abc.ABC):
    """Common interface: ``compose(mechanism, count)``, ``get_epsilon(delta)``,
    ``get_delta(epsilon)``, ``supports(mechanism)`` and ``spawn()`` (an empty copy)."""

    name: str = "accountant"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE) -> None:
        self.neighbouring = Neighbouring.coerce(neighbouring)
        self.entries: list[tuple[Mechanism, int]] = []

    def compose(self, mechanism: Mechanism, count: int = 1) -> Accountant:
        """Account ``count`` runs of ``mechanism`` (``0 <= count <= MAX_COUNT`` = 10^15);
        returns ``self`` for chaining. A budget beyond the float range raises ``ValueError``
        and leaves the accountant unchanged."""
        count = check_int("count", count, minimum=0, maximum=MAX_COUNT)
        if not isinstance(mechanism, Mechanism):
            raise UnsupportedMechanismError(f"mechanism must be a Mechanism, got {mechanism!r}")
        if isinstance(mechanism, ComposedMechanism):  # a composition composes its parts
            for part, n in mechanism.parts:
                self.compose(part, check_int("count", count * n, maximum=MAX_COUNT))
            return self
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                self._compose(mechanism, count)
        except (OverflowError, ZeroDivisionError, FloatingPointError) as err:
            raise ValueError(
                f"count={count} runs of {mechanism!r}: the {self.name} accountant's budget leaves "
                f"the floating-point range ({err}); sensitivity/noise is too large") from None
        self.entries.append((mechanism, count))
        return self

    def supports(self, mechanism: Mechanism) -> bool:
        """Whether :meth:`compose` would accept ``mechanism``."""
        parts = mechanism.parts if isinstance(mechanism, ComposedMechanism) else ((mechanism, 1),)
        try:
            for part, _ in parts:
                self.spawn()._compose(part, 1)
        except UnsupportedMechanismError:
            return False
        return True

    def closed_form_noise(self, mechanism_for: Any, epsilon: float, delta: float | None,
                          count: int) -> float | None:
        """A closed-form noise level for ``count`` runs of the family ``mechanism_for`` at the
        target, or ``None`` (no closed form). :func:`~dpbounds.privacy.calibrate.calibrate`
        uses it as its fast path and verifies it with :meth:`get_epsilon` before returning it."""
        return None

    def _pure_epsilon(self, mechanism: Mechanism) -> float:
        """Pure ε of one run of a pure-DP mechanism under this relation (the mechanism's own
        :meth:`epsilon_under`, e.g. the subsampled-Laplace amplification); a relation it is not
        stated for becomes :class:`UnsupportedMechanismError`."""
        try:
            return float(mechanism.epsilon_under(self.neighbouring))
        except ValueError as err:
            raise self._unsupported(mechanism, str(err)) from None

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
        self.orders = DEFAULT_ORDERS if orders is DEFAULT_ORDERS else np.asarray(orders, float)
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

    def get_epsilon(self, delta: float) -> float:
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
        if isinstance(mechanism, (SubsampledLaplaceMechanism, PureDpMechanism)):
            return self._pure_epsilon(mechanism) ** 2 / 2
        if isinstance(mechanism, ZcdpMechanism):
            return mechanism.rho_under(nb)
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

    def get_epsilon(self, delta: float) -> float:
        return float(zcdp_to_dp_epsilon(self.rho, delta, self.conversion))

    def get_delta(self, epsilon: float) -> float:
        return zcdp_to_dp_delta(self.rho, epsilon, self.conversion)


# ----------------------------------------------------------------------------------- PLD


#: Largest count a PLD accountant composes (FFT powers lose ~count * 1e-16 of relative accuracy).
MAX_PLD_COUNT = 10**9
#: Largest per-step privacy loss dp_accounting can represent (it exponentiates losses).
MAX_PLD_STEP_LOSS = 700.0
#: Largest grid interval (dp_accounting's connect-the-dots evaluates expm1(interval)).
_MAX_PLD_INTERVAL = 500.0


class _PldPart:
    """One non-Gaussian ingredient of a PLD composition, with the scales that size its grid.

    ``width`` bounds the support of one step's privacy loss, ``scale`` its spread (about a
    standard deviation) and ``mean`` its mean (a KL divergence); they are estimates used only
    to choose the discretisation interval, never for the guarantee itself.
    """

    def __init__(self, kind: str, params: tuple[float, ...]) -> None:
        self.kind, self.params = kind, params
        if kind == "sgm":
            q, z = params
            # losses for noise within +-10 z of either mean (dp_accounting truncates the noise
            # at a mass of e^-50, about 10 z), with a factor 2 to spare
            u = (1.0 + 20.0 * z) / (2.0 * z * z)
            top = float(log1p_times_expm1(u, q))
            self.width = top + max(-math.log1p(-q), 0.0) if q < 1 else 2 * top
            inv2 = 1.0 / (z * z)
            # small loss (large z): L ~ q (e^{...} - 1), spread q sqrt(e^{1/z^2} - 1); large
            # loss: L is ~width with probability ~q and ~0 otherwise
            spread = q * math.sqrt(math.expm1(inv2)) if inv2 < 700 else math.inf
            self.scale = min(spread, math.sqrt(q) * self.width)
            self.mean = min(0.5 * self.scale**2, q * self.width)
        else:  # "laplace" / "pure": losses in [-eps0, eps0]
            (eps0,) = params
            self.width, self.scale = 2.0 * eps0, eps0
            self.mean = min(0.5 * eps0**2, eps0)

    def composed_width(self, count: int) -> float:
        """Support of ``count`` steps once tails of mass 1e-15 are cut (about 12 spreads
        each side of the mean), the estimate that sizes the grid."""
        return min(count * self.width,
                   count * self.mean + 25.0 * math.sqrt(count) * self.scale + self.width)

    def build(self, interval: float, pessimistic: bool):
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pldlib

        if self.kind == "sgm":
            q, z = self.params
            return pldlib.from_gaussian_mechanism(
                z, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=pessimistic,
                value_discretization_interval=interval, use_connect_dots=pessimistic)
        (eps0,) = self.params
        if self.kind == "laplace":
            return pldlib.from_laplace_mechanism(
                1.0 / eps0, sensitivity=1.0, pessimistic_estimate=pessimistic,
                value_discretization_interval=interval, use_connect_dots=pessimistic)
        return pldlib.from_privacy_parameters(common.DifferentialPrivacyParameters(eps0, 0.0),
                                              value_discretization_interval=interval)


def _pmf_pair(pld) -> tuple[_pld.DensePld, _pld.DensePld]:
    """(remove, add) PMFs of a dp_accounting PLD (the same object when symmetric)."""
    remove = _pld.from_dp_accounting_pmf(pld._pmf_remove)
    return remove, remove if pld._symmetric else _pld.from_dp_accounting_pmf(pld._pmf_add)


class PldAccountant(Accountant):
    r"""Privacy-loss-distribution accountant: exact for Gaussians, ``dp_accounting``'s
    discretised PLDs (pessimistic, so its epsilon is an upper bound) for everything else.

    * Gaussian mechanisms compose exactly into one Gaussian of
      :math:`\mu = \sqrt{\sum_i c_i(\Delta_i/\sigma_i)^2}`, whose privacy profile is closed
      form (:func:`~dpbounds.privacy.gaussian.gaussian_delta`, Balle & Wang 2018); a
      Gaussian-only composition is therefore exact and instant for any :math:`\sigma`.
    * Tree aggregation enters as a Gaussian of noise multiplier :math:`\sigma/(\Delta\sqrt K)`:
      each node is a :math:`(\Delta/\sigma)`-GDP mechanism in the record, at most :math:`K`
      of them involve it, and adaptive GDP composition (Dong, Roth & Su 2022) gives
      :math:`\sqrt K\Delta/\sigma`-GDP.
    * Laplace, pure-DP and Poisson-subsampled Gaussian steps are discretised by dp_accounting
      (connect-the-dots, pessimistic) on one common grid, self-composed by one FFT power each
      and composed with each other and with the Gaussian part (:mod:`dpbounds.privacy._pld`).

    The grid is chosen from the mechanisms' scales when the PLD is first needed: the interval is
    ``value_discretization_interval``, refined to a tenth of the smallest per-step loss spread
    (coarser grids lose accuracy, about ``(interval / spread)^2``), and coarsened as far as
    needed to keep the composed PLD within ``max_points`` grid points (memory ~ 100 bytes a
    point) and one step's PLD within ``max_points / 128`` (building one costs ~10 us a point).
    A coarser grid is still pessimistic: the epsilon stays an upper bound, only looser.

    Limits (``ValueError``, :class:`UnsupportedMechanismError` for the second): a count above
    ``MAX_PLD_COUNT`` = :math:`10^9` (FFT powers lose about ``count * 1e-16`` of accuracy), and
    a Laplace or pure-DP step whose privacy loss can exceed ``MAX_PLD_STEP_LOSS`` = 700
    (sensitivity/scale or epsilon > 700), which dp_accounting cannot exponentiate; use the pure
    or RDP accountant for those.
    """

    name = "pld"

    def __init__(self, neighbouring: Any = Neighbouring.ADD_REMOVE,
                 value_discretization_interval: float = 1e-4,
                 pessimistic: bool = True, *, max_points: int = 2**21) -> None:
        super().__init__(neighbouring)
        self.value_discretization_interval = float(
            check_nonnegative("value_discretization_interval", value_discretization_interval))
        if self.value_discretization_interval <= 0:
            raise ValueError("value_discretization_interval must be > 0")
        self.pessimistic = bool(pessimistic)
        self.max_points = check_int("max_points", max_points, minimum=2**12, maximum=2**26)
        self.gaussian_mu2 = 0.0  # sum of count * (sensitivity / sigma)^2 of the Gaussian part
        self._parts: dict[tuple, int] = {}
        self._total_count = 0
        self._pld = None  # cached (remove, add) PMFs of the non-Gaussian composition

    def spawn(self) -> PldAccountant:
        return PldAccountant(self.neighbouring, self.value_discretization_interval,
                             self.pessimistic, max_points=self.max_points)

    def _part_key(self, mechanism: Mechanism) -> tuple | float | None:
        """``(kind, params)`` of a discretised part, a float ``mu^2`` for a Gaussian part,
        ``None`` for a mechanism that leaks nothing."""
        nb = self.neighbouring
        if isinstance(mechanism, (GaussianMechanism, TreeAggregationMechanism)):
            sens = self._sensitivity(mechanism)
            ratio2 = float(nudge_up((sens / mechanism.sigma) ** 2))
            if isinstance(mechanism, TreeAggregationMechanism):
                return float(nudge_up(mechanism.node_count * ratio2))
            return ratio2
        if isinstance(mechanism, SubsampledGaussianMechanism):
            if mechanism.sampling is not Sampling.POISSON:
                raise self._unsupported(
                    mechanism, "dp_accounting has no PLD for sampling without replacement")
            if nb is not Neighbouring.ADD_REMOVE:
                raise self._unsupported(mechanism, "Poisson sampling is analysed under add_remove")
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return None
            if mechanism.sampling_rate == 1.0:
                return float(nudge_up((sens / mechanism.sigma) ** 2))
            key = ("sgm", (mechanism.sampling_rate, mechanism.sigma / sens))
        elif isinstance(mechanism, LaplaceMechanism):
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return None
            key = ("laplace", (sens / mechanism.scale,))
        elif isinstance(mechanism, (PureDpMechanism, SubsampledLaplaceMechanism)):
            eps = self._pure_epsilon(mechanism)
            if eps == 0:
                return None
            key = ("pure", (float(eps),))
        else:
            raise self._unsupported(mechanism)
        part = _PldPart(*key)
        if part.kind != "sgm" and not part.width <= 2 * MAX_PLD_STEP_LOSS:
            raise self._unsupported(
                mechanism, f"one step's privacy loss reaches {part.width / 2:.4g} > "
                f"{MAX_PLD_STEP_LOSS:g}, beyond dp_accounting's float range; use the 'pure' or "
                "'rdp' accountant")
        return key

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        key = self._part_key(mechanism)
        total = self._total_count + count
        if total > MAX_PLD_COUNT:
            raise ValueError(
                f"count must keep the PLD accountant's total at most {MAX_PLD_COUNT:.0e} "
                f"compositions (got {total}); use the 'rdp' accountant beyond")
        if count == 0 or key is None:
            return
        self._total_count = total
        if isinstance(key, float):
            # rounded up at every step: the closed form must never see a smaller mu
            self.gaussian_mu2 = float(nudge_up(self.gaussian_mu2 + float(nudge_up(count * key))))
            if not math.isfinite(self.gaussian_mu2):
                raise ValueError("sensitivity/sigma out of floating-point range for the PLD "
                                 "accountant: the composed Gaussian's mu^2 overflows")
        else:
            self._parts[key] = self._parts.get(key, 0) + count
        self._pld = None

    def closed_form_noise(self, mechanism_for: Any, epsilon: float, delta: float | None,
                          count: int) -> float | None:
        """One Gaussian release: the analytic Gaussian mechanism (Balle & Wang 2018)."""
        from dpbounds.privacy.gaussian import analytic_gaussian_sigma

        probe = mechanism_for(1.0)
        if delta is None or count != 1 or type(probe) is not GaussianMechanism:
            return None
        sens = self._sensitivity(probe)
        return float(analytic_gaussian_sigma(epsilon, delta, sens)) if sens > 0 else None

    def discretization_interval(self) -> float:
        """The grid interval :meth:`get_epsilon` uses for the current composition (see the
        class notes); ``nan`` when no part needs a grid."""
        parts = [(_PldPart(*key), count) for key, count in self._parts.items()]
        if not parts:
            return math.nan
        spreads = [part.scale for part, _ in parts]
        widths = [part.composed_width(count) for part, count in parts]
        step_width = max(part.width for part, _ in parts)
        mu2 = self.gaussian_mu2
        if mu2 > 0:
            mu = math.sqrt(mu2)
            spreads.append(mu)
            widths.append(mu2 + 25.0 * mu)  # dp_accounting's Gaussian PLD spans +-(mu^2/2 + 10 mu)
            step_width = max(step_width, mu2 + 25.0 * mu)
        interval = min(self.value_discretization_interval, 0.1 * min(spreads))
        interval = max(interval, sum(widths) / self.max_points, step_width * 128 / self.max_points)
        if not (0 < interval <= _MAX_PLD_INTERVAL):
            raise ValueError(
                f"the PLD accountant's grid would need an interval of {interval:.3g} > "
                f"{_MAX_PLD_INTERVAL:g} for these mechanisms (privacy losses too large for "
                f"max_points={self.max_points}); use the 'rdp' accountant")
        return interval

    def _composed_pld(self) -> tuple[_pld.DensePld, _pld.DensePld]:
        """(remove, add) PMFs of the whole composition (cached until the next compose)."""
        if self._pld is None:
            from dp_accounting.pld import privacy_loss_distribution as pldlib

            interval = self.discretization_interval()
            try:
                with np.errstate(over="ignore", under="ignore", divide="ignore",
                                 invalid="ignore"):
                    items = [(_PldPart(*key).build(interval, self.pessimistic), count)
                             for key, count in self._parts.items()]
                    if self.gaussian_mu2 > 0:
                        items.append((pldlib.from_gaussian_mechanism(
                            1.0, sensitivity=self._gaussian_mu(),
                            pessimistic_estimate=self.pessimistic,
                            value_discretization_interval=interval,
                            use_connect_dots=self.pessimistic), 1))
                    pair = None
                    for one, count in items:
                        new = [_pld.self_compose(pmf, count) for pmf in _pmf_pair(one)]
                        pair = new if pair is None else [_pld.compose(a, b)
                                                         for a, b in zip(pair, new)]
            except (OverflowError, FloatingPointError, MemoryError) as err:
                raise ValueError(
                    f"the PLD accountant cannot represent this composition ({err}); use the "
                    "'rdp' accountant") from None
            self._pld = tuple(pair)
        return self._pld

    def _gaussian_mu(self) -> float:
        return float(nudge_up(math.sqrt(self.gaussian_mu2)))

    def get_epsilon(self, delta: float) -> float:
        delta = check_probability("delta", delta)
        if not self._parts:
            if self.gaussian_mu2 == 0:
                return 0.0
            return float(gaussian_epsilon(1.0, delta, self._gaussian_mu()))
        pair = self._composed_pld()
        eps = max(_pld.epsilon_for_delta(pmf, delta) for pmf in pair)
        if not math.isfinite(eps):
            floor = max(pmf.infinity_mass for pmf in pair)
            raise ValueError(
                f"delta={delta!r} is below what the PLD accountant resolves for this "
                f"composition (mass {floor:.3g} at infinite loss, from truncation and FFT "
                "round-off); use a larger delta or the 'rdp' accountant")
        return eps

    def get_delta(self, epsilon: float) -> float:
        epsilon = check_nonnegative("epsilon", epsilon)
        if not self._parts:
            if self.gaussian_mu2 == 0:
                return 0.0
            return float(gaussian_delta(1.0, epsilon, self._gaussian_mu()))
        return max(_pld.delta_for_epsilon(pmf, epsilon) for pmf in self._composed_pld())

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(lower, upper) epsilon from the optimistic and pessimistic discretisations."""
        twin = PldAccountant(self.neighbouring, self.value_discretization_interval,
                             pessimistic=not self.pessimistic, max_points=self.max_points)
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
        if isinstance(mechanism, LaplaceMechanism):
            return self._sensitivity(mechanism) / mechanism.scale
        if isinstance(mechanism, (SubsampledLaplaceMechanism, PureDpMechanism)):
            return self._pure_epsilon(mechanism)
        raise self._unsupported(mechanism, "not a pure-DP mechanism")

    def _compose(self, mechanism: Mechanism, count: int) -> None:
        # rounded up (sens/scale, the product and the sum each round to nearest): the reported
        # epsilon is never below the exact sum, so a calibration against it never overshoots
        eps = float(nudge_up(self.mechanism_epsilon(mechanism), 1))
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
            eps = float(nudge_up(PureDpAccountant(self.neighbouring).mechanism_epsilon(mechanism)))
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


#: Accountant classes by name.
ACCOUNTANTS: dict[str, type[Accountant]] = {
    "rdp": RdpAccountant,
    "zcdp": ZcdpAccountant,
    "pld": PldAccountant,
    "pure": PureDpAccountant,
    "basic": BasicAccountant,
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
