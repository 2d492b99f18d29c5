"""The privacy-loss-distribution accountant: ``dp_accounting``'s PLDs on a grid chosen from the
mechanisms' scales (pessimistic, with an optimistic twin for error bars); the Gaussian parts
exactly in closed form (the analytic Gaussian mechanism, Balle & Wang 2018).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbounds._validation import check_int, check_nonnegative, check_probability
from dpbounds.privacy import _pld
from dpbounds.privacy._util import log1p_times_expm1, nudge_up
from dpbounds.privacy.accountants.base import Accountant, UnsupportedMechanismError
from dpbounds.privacy.gaussian import gaussian_delta, gaussian_epsilon
from dpbounds.privacy.mechanisms import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    Neighbouring,
    PureDpMechanism,
    Sampling,
    SubsampledDiscreteGaussianMechanism,
    SubsampledGaussianMechanism,
    SubsampledLaplaceMechanism,
    TreeAggregationMechanism,
)

__all__ = [
    "MAX_PLD_COUNT",
    "MAX_PLD_STEP_LOSS",
    "PldAccountant",
]


# ----------------------------------------------------------------------------------- PLD


#: Largest count a PLD accountant composes (FFT powers lose ~count * 1e-16 of relative accuracy).
MAX_PLD_COUNT = 10**9


#: Largest per-step privacy loss dp_accounting can represent (it exponentiates losses).
MAX_PLD_STEP_LOSS = 700.0


#: Largest discrete Gaussian standard deviation (grid units) the PLD accountant builds:
#: dp_accounting tabulates the noise PMF on +-11.6 sigma integers (measured: 0.5 CPU-s at
#: sigma = 10^3, 5 CPU-s at 2^16, with a 1e-4 grid).
MAX_PLD_DISCRETE_SIGMA: float = 2.0**16


#: Largest grid interval (dp_accounting's connect-the-dots evaluates expm1(interval)).
_MAX_PLD_INTERVAL = 500.0


def _whose(err: BaseException) -> str:
    """``"dp_accounting"`` when ``err`` was raised inside that library (its innermost frame),
    else ``"the PLD accountant"`` (this package's own PLD code)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    inside = tb is not None and "dp_accounting" in tb.tb_frame.f_code.co_filename
    return "dp_accounting" if inside else "the PLD accountant"


class _PldPart:
    """One non-Gaussian ingredient of a PLD composition, with the scales that size its grid.

    ``width`` bounds the support of one step's privacy loss, ``scale`` its spread (about a
    standard deviation) and ``mean`` its mean (a KL divergence); they are estimates used only
    to choose the discretisation interval, never for the guarantee itself.
    """

    def __init__(self, kind: str, params: tuple[float, ...]) -> None:
        self.kind, self.params = kind, params
        if kind == "dgauss":  # (variance, integer sensitivity, sampling rate)
            variance, sens, rate = params
            z = math.sqrt(variance) / sens
            if rate < 1.0:  # sized as the continuous sampled Gaussian (an estimate only)
                kind, params = "sgm", (rate, z)
            else:  # as the Gaussian part: loss mean mu^2/2, spread mu, span mu^2 + 25 mu
                mu = 1.0 / z
                self.width, self.scale, self.mean = mu * mu + 25.0 * mu, mu, 0.5 * mu * mu
                return
        if kind in ("sgm", "wor"):  # "wor" mirrors the "sgm" losses: the same scales
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

        if self.kind == "dgauss":
            variance, sens, rate = self.params
            # sigma = sqrt(variance) rounded down (one ulp): never a wider noise than drawn
            sigma = math.sqrt(variance)
            if sigma * sigma > variance:
                sigma = math.nextafter(sigma, 0.0)
            return pldlib.from_discrete_gaussian_mechanism(
                sigma, sensitivity=int(sens), sampling_prob=rate,
                pessimistic_estimate=pessimistic, value_discretization_interval=interval,
                use_connect_dots=pessimistic)
        if self.kind in ("sgm", "wor"):
            q, z = self.params
            pld = pldlib.from_gaussian_mechanism(
                z, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=pessimistic,
                value_discretization_interval=interval, use_connect_dots=pessimistic)
            if self.kind == "sgm":
                return pld
            sym = _pld.symmetrise(_pld.from_dp_accounting_pmf(pld._pmf_remove))
            return sym, sym
        (eps0,) = self.params
        if self.kind == "laplace":
            return pldlib.from_laplace_mechanism(
                1.0 / eps0, sensitivity=1.0, pessimistic_estimate=pessimistic,
                value_discretization_interval=interval, use_connect_dots=pessimistic)
        return pldlib.from_privacy_parameters(common.DifferentialPrivacyParameters(eps0, 0.0),
                                              value_discretization_interval=interval)


def _pmf_pair(pld) -> tuple[_pld.DensePld, _pld.DensePld]:
    """(remove, add) PMFs of a dp_accounting PLD (the same object when symmetric), or the
    pair itself when a part built its own."""
    if isinstance(pld, tuple):
        return pld
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
    * A Gaussian step on a batch sampled **without replacement** (replace-one, rate
      :math:`\gamma = B/n`) enters as the symmetric pair of
      :func:`~dpbounds.privacy._pld.symmetrise` built on the one-direction pair
      :math:`(\gamma N(\Delta,\sigma^2) + (1-\gamma)N(0,\sigma^2),\ N(0,\sigma^2))`
      (:math:`\Delta` the replace-one sensitivity): an upper bound for every neighbouring pair,
      both orders and every :math:`\alpha`, so it composes adaptively (DERIVED there). It is
      within ~10% of the fixed worst-case data set's own epsilon (measured: 2.06 against 1.92
      at :math:`\gamma = 1/2`, :math:`\sigma/C = 3`, 10 steps, :math:`\delta = 0.05`), where
      the RDP bound of sampling without replacement reads 2.99 (at large step counts RDP can
      be the smaller: 24.2 against 26.1 at :math:`\gamma = 0.01`, :math:`z = 1.2`,
      :math:`10^5` steps, :math:`\delta = 10^{-6}`; the symmetric pair is loose at low Rényi
      orders). Its optimistic twin
      (:meth:`epsilon_interval`) brackets the symmetric pair's epsilon, not the mechanism's:
      a lower bound on the mechanism is the one-direction pair's own (the data set
      :math:`\{x, x', \ldots, x'\}` attains it).

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
        # cached (remove, add) PMFs of the non-Gaussian composition
        self._pld: tuple[_pld.DensePld, _pld.DensePld] | None = None

    def spawn(self) -> PldAccountant:
        return PldAccountant(self.neighbouring, self.value_discretization_interval,
                             self.pessimistic, max_points=self.max_points)

    def _part_key(self, mechanism: Mechanism) -> tuple | float | None:
        """``(kind, params)`` of a discretised part, a float ``mu^2`` for a Gaussian part,
        ``None`` for a mechanism that leaks nothing."""
        nb = self.neighbouring
        if isinstance(mechanism, (DiscreteGaussianMechanism, SubsampledDiscreteGaussianMechanism)):
            return self._discrete_gaussian_key(mechanism)
        if isinstance(mechanism, (GaussianMechanism, TreeAggregationMechanism)):
            sens = self._sensitivity(mechanism)
            ratio2 = float(nudge_up((sens / mechanism.sigma) ** 2))
            if isinstance(mechanism, TreeAggregationMechanism):
                return float(nudge_up(mechanism.node_count * ratio2))
            return ratio2
        if isinstance(mechanism, SubsampledGaussianMechanism):
            without = mechanism.sampling is not Sampling.POISSON
            if without and nb is not Neighbouring.REPLACE_ONE:
                raise self._unsupported(
                    mechanism, "sampling without replacement is analysed under replace_one")
            if not without and nb is not Neighbouring.ADD_REMOVE:
                raise self._unsupported(mechanism, "Poisson sampling is analysed under add_remove")
            sens = self._sensitivity(mechanism)
            if sens == 0:
                return None
            if mechanism.sampling_rate == 1.0:
                return float(nudge_up((sens / mechanism.sigma) ** 2))
            key: tuple[str, tuple[float, ...]] = ("wor" if without else "sgm", (
                mechanism.sampling_rate, mechanism.sigma / sens))
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
        if part.kind not in ("sgm", "wor", "dgauss") and not part.width <= 2 * MAX_PLD_STEP_LOSS:
            raise self._unsupported(
                mechanism, f"one step's privacy loss reaches {part.width / 2:.4g} > "
                f"{MAX_PLD_STEP_LOSS:g}, beyond dp_accounting's float range; use the 'pure' or "
                "'rdp' accountant")
        return key

    def _discrete_gaussian_key(self, mechanism: Any) -> tuple | None:
        """``("dgauss", (variance, integer sensitivity, rate))`` of a scalar discrete Gaussian."""
        if mechanism.dimension != 1:
            raise self._unsupported(
                mechanism, f"a {mechanism.dimension}-dimensional discrete Gaussian is not a "
                "scalar discrete Gaussian at its L2 shift (the lattice noise is not "
                "rotation-invariant), and no PLD of it is implemented; use the 'rdp' or "
                "'zcdp' accountant (its rho = s^2/(2 variance) holds in any dimension)")
        if math.sqrt(mechanism.variance) > MAX_PLD_DISCRETE_SIGMA:
            raise self._unsupported(
                mechanism, f"sigma = sqrt(variance) = {math.sqrt(mechanism.variance):.4g} grid "
                f"units > {MAX_PLD_DISCRETE_SIGMA:.0f}: dp_accounting tabulates the noise on "
                "+-11.6 sigma integers (too slow beyond); use the 'rdp' accountant")
        rate = 1.0
        if isinstance(mechanism, SubsampledDiscreteGaussianMechanism):
            if mechanism.sampling is not Sampling.POISSON:
                raise self._unsupported(
                    mechanism, "no PLD of a discrete Gaussian on a batch drawn without "
                    "replacement is implemented (the symmetric pair covers the continuous "
                    "Gaussian); use the 'rdp' accountant")
            if self.neighbouring is not Neighbouring.ADD_REMOVE:
                raise self._unsupported(mechanism, "Poisson sampling is analysed under add_remove")
            rate = float(mechanism.sampling_rate)
        # an integer under either relation (add/remove -> replace-one doubles it; the reverse,
        # halving, is refused: per_example_sum is False)
        sens = int(math.ceil(self._sensitivity(mechanism)))
        if sens == 0 or rate == 0.0:
            return None
        return ("dgauss", (float(mechanism.variance), float(sens), rate))

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
        if not parts and self.gaussian_mu2 == 0:
            return math.nan
        spreads = [part.scale for part, _ in parts]
        widths = [part.composed_width(count) for part, count in parts]
        step_width = max((part.width for part, _ in parts), default=0.0)
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
                    pair = self._compose_parts(interval, pldlib)
            except (OverflowError, FloatingPointError, MemoryError) as err:
                raise ValueError(
                    f"the PLD accountant cannot represent this composition ({err}); use the "
                    "'rdp' accountant") from None
            except UnsupportedMechanismError:
                raise
            except ValueError as err:  # e.g. dp_accounting's "a must be greater than b" at a
                # sampling rate of 1e-300: say whose check it was and what to do
                raise ValueError(
                    f"{_whose(err)} cannot discretise this composition's privacy loss (a "
                    f"sampling rate or noise this extreme is outside its range: {err}); use "
                    "the 'rdp' accountant") from None
            if pair is None:  # pragma: no cover - items always holds a part here
                raise ValueError("the PLD accountant has nothing to compose")
            self._pld = (pair[0], pair[1])
        return self._pld

    def _compose_parts(self, interval: float, pldlib: Any) -> list[_pld.DensePld] | None:
        """The (remove, add) PMFs of every part, self-composed by its count, then composed
        pairwise in a balanced tree: each composition is one FFT convolution over the two
        operands' supports, so composing in order made every step convolve with the
        whole composition so far (a Laplace noise schedule of T = 2e4 distinct scales took
        ~110 s: fuzz 16); the tree makes most of them small. The composition is the same
        distribution in any order, and every step keeps its pessimistic truncation and
        round-off terms (one per composition, T - 1 either way). A bar after 2 s."""
        from dpbounds._progress import progress_iter

        keys = list(self._parts.items())
        total = len(keys) + (self.gaussian_mu2 > 0)
        bar = progress_iter(None, total=max(1, 2 * total - 1), desc="PLD composition",
                            unit="PMF")
        try:
            level: list[list[_pld.DensePld]] = []
            for key, count in keys:
                one = _PldPart(*key).build(interval, self.pessimistic)
                level.append([_pld.self_compose(pmf, count) for pmf in _pmf_pair(one)])
                bar.update(1)
            if self.gaussian_mu2 > 0:
                level.append(list(_pmf_pair(pldlib.from_gaussian_mechanism(
                    1.0, sensitivity=self._gaussian_mu(),
                    pessimistic_estimate=self.pessimistic,
                    value_discretization_interval=interval,
                    use_connect_dots=self.pessimistic))))
                bar.update(1)
            while len(level) > 1:
                merged = []
                for i in range(0, len(level) - 1, 2):
                    merged.append([_pld.compose(a, b) for a, b in zip(level[i], level[i + 1])])
                    bar.update(1)
                if len(level) % 2:
                    merged.append(level[-1])
                level = merged
        finally:
            bar.close()
        return level[0] if level else None

    def _gaussian_mu(self) -> float:
        return float(nudge_up(math.sqrt(self.gaussian_mu2)))

    def get_epsilon(self, delta: float | None) -> float:
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

    def tradeoff(self, fpr: Any) -> tuple[np.ndarray, np.ndarray]:
        """The best attack's TPR at each ``fpr`` in the two directions (remove, add) of the
        composed PLD (:func:`~dpbounds.privacy._pld.tradeoff_tpr`; a Gaussian-only
        composition is discretised too, so that it is read the same way). Pessimistic
        accountant: upper bounds on the TPR; optimistic: lower bounds."""
        remove, add = self._composed_pld()
        return _pld.tradeoff_tpr(remove, fpr), _pld.tradeoff_tpr(add, fpr)

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(lower, upper) epsilon from the optimistic and pessimistic discretisations."""
        twin = PldAccountant(self.neighbouring, self.value_discretization_interval,
                             pessimistic=not self.pessimistic, max_points=self.max_points)
        for mech, count in self.entries:
            twin.compose(mech, count)
        pair = sorted((self.get_epsilon(delta), twin.get_epsilon(delta)))
        return pair[0], pair[1]
