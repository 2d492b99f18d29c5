r"""Mechanisms as small frozen data objects (like the ``DpEvent`` objects of ``dp_accounting``).

A mechanism says *what* was released and how much noise it carried; an accountant
(:mod:`dpbounds.privacy.accountants`) turns a sequence of them into a guarantee. Every mechanism
names the :class:`Neighbouring` relation under which its ``sensitivity`` was measured.

Neighbouring relations and how sensitivities convert
----------------------------------------------------
* ``ADD_REMOVE``: datasets differ by adding or removing one record (Lee & Kifer).
* ``REPLACE_ONE``: datasets of equal size differ in one record (Kuru et al., Tran & Cutkosky,
  Yang et al.).

An accountant reports its guarantee under its own relation and converts each mechanism to it:

* add/remove → replace-one: ``sensitivity * 2`` (always valid: a replacement is a removal
  followed by an addition, triangle inequality);
* replace-one → add/remove: ``sensitivity / 2``. This is valid only for **per-example sums**
  :math:`f(D)=\sum_{x\in D}g(x)` with :math:`\lVert g\rVert\le C` (replace-one :math:`2C`,
  add/remove :math:`C`), not in general (a median, a mean over a fixed ``n`` or a bound that is
  tight already under add/remove would be understated). A mechanism therefore states it:
  ``per_example_sum=True`` allows the halving; with the default ``False`` the conversion raises
  ``ValueError`` (an accountant reports it as :class:`~dpbounds.privacy.accountants.
  UnsupportedMechanismError`). Account such a mechanism under replace-one instead.
* Guarantees given directly (:class:`PureDpMechanism`, :class:`ZcdpMechanism`) convert by group
  privacy from add/remove to replace-one (:math:`\varepsilon\to2\varepsilon`,
  :math:`\rho\to4\rho`); the reverse direction is refused.

Examples
--------
>>> from dpbounds.privacy.mechanisms import GaussianMechanism, Neighbouring
>>> m = GaussianMechanism(sigma=2.0, sensitivity=1.0, neighbouring="add_remove")
>>> m.sensitivity_under(Neighbouring.REPLACE_ONE)
2.0
>>> m.noise_multiplier
2.0
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpbounds._validation import (
    MAX_COUNT,
    check_closed_interval,
    check_flag,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "ApproxDpMechanism",
    "ComposedMechanism",
    "DiscreteGaussianMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "Neighbouring",
    "PureDpMechanism",
    "Sampling",
    "SubsampledDiscreteGaussianMechanism",
    "SubsampledGaussianMechanism",
    "SubsampledLaplaceMechanism",
    "SubsampledZcdpMechanism",
    "TreeAggregationMechanism",
    "ZcdpMechanism",
    "convert_sensitivity",
    "mechanism_from_dict",
]


class Neighbouring(enum.Enum):
    """Neighbouring relation between datasets (the one spelling; :meth:`coerce` also accepts
    the older ``"replace-one"``, ``"add/remove"`` and ``"add-remove"`` at API boundaries)."""

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"

    @classmethod
    def coerce(cls, value: Any, name: str = "neighbouring") -> Neighbouring:
        """Accept an enum member, its value or a legacy alias (``"replace-one"``,
        ``"add/remove"``, ``"add-remove"``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            key = value.strip().lower().replace("-", "_").replace("/", "_")
            for member in cls:
                if member.value == key:
                    return member
        choices = tuple(m.value for m in cls)
        raise ValueError(f"{name} must be one of {choices} (or 'replace-one', 'add/remove'), "
                         f"got {value!r}")

    @property
    def legacy(self) -> str:
        """The older hyphenated spelling (``"replace-one"``, ``"add/remove"``) that
        :class:`~dpbounds.algorithms.SpentBudget` still shows."""
        return "replace-one" if self is Neighbouring.REPLACE_ONE else "add/remove"

    def __str__(self) -> str:
        return self.value


class Sampling(enum.Enum):
    """How a mini-batch is drawn."""

    POISSON = "poisson"
    WITHOUT_REPLACEMENT = "without_replacement"

    @classmethod
    def coerce(cls, value: Any, name: str = "sampling") -> Sampling:
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            choices = tuple(m.value for m in cls)
            raise ValueError(f"{name} must be one of {choices}, got {value!r}") from None

    @property
    def natural_neighbouring(self) -> Neighbouring:
        """The relation its amplification theorem is stated for."""
        return Neighbouring.ADD_REMOVE if self is Sampling.POISSON else Neighbouring.REPLACE_ONE

    def __str__(self) -> str:
        return self.value


def convert_sensitivity(
    sensitivity: float, source: Any, target: Any, *, per_example_sum: bool = False
) -> float:
    """Sensitivity under ``target`` from one measured under ``source`` (see module notes).

    add/remove → replace-one doubles (always valid). replace-one → add/remove halves and is
    allowed only with ``per_example_sum=True`` (the query is a sum of per-record terms);
    otherwise it raises ``ValueError``.
    """
    source = Neighbouring.coerce(source, "source")
    target = Neighbouring.coerce(target, "target")
    sensitivity = check_nonnegative("sensitivity", sensitivity)
    per_example_sum = check_flag("per_example_sum", per_example_sum)  # "yes" is not True
    if source is target:
        return sensitivity
    if source is Neighbouring.ADD_REMOVE:
        if not 2.0 * sensitivity < float("inf"):
            raise ValueError(f"sensitivity={sensitivity!r} doubled (add/remove -> replace-one) "
                             "leaves the float range")
        return 2.0 * sensitivity
    if not per_example_sum:
        raise ValueError(
            "per_example_sum must be True to convert a replace-one sensitivity to add/remove "
            "(halving it is valid only for a sum of per-record terms); got False. Measure the "
            "sensitivity under add_remove or account under replace_one"
        )
    return sensitivity / 2.0


class Mechanism:
    """Base class of the mechanism descriptions (frozen dataclasses).

    Every mechanism with a ``sensitivity`` also has ``per_example_sum`` (default ``False``):
    set it to ``True`` only when the noised query is a sum of per-record terms (a DP-SGD-style
    clipped-gradient sum); it is what allows a replace-one sensitivity to be halved for an
    add/remove accountant (see the module notes).
    """

    neighbouring: Neighbouring
    per_example_sum: bool = False
    if TYPE_CHECKING:  # a field or a property in each subclass that has one
        @property
        def sensitivity(self) -> float: ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description; :func:`mechanism_from_dict` reads it back."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):  # ComposedMechanism.parts
                value = [[m.to_dict(), int(c)] for m, c in value]
            out[f.name] = value
        return out

    def sensitivity_under(self, target: Any) -> float:
        """The mechanism's sensitivity converted to ``target`` (see module notes); raises
        ``ValueError`` for replace-one → add/remove unless ``per_example_sum`` is True."""
        return convert_sensitivity(self.sensitivity, self.neighbouring, target,
                                   per_example_sum=self.per_example_sum)


def _set(obj: Any, name: str, value: Any) -> None:
    # every numeric field is one number: the checks accept arrays (for the vectorised
    # functions), and GaussianMechanism(np.array([1., 2.])) was accepted, failing later in a
    # composition with a broadcast error
    shape = getattr(value, "shape", None)  # an array (NumPy or another array library)
    if shape is not None and not isinstance(value, (int, float)):
        if tuple(shape):
            raise ValueError(f"{name} of {type(obj).__name__} must be a single number, got "
                             f"an array of shape {tuple(shape)}")
        value = value.item()
    object.__setattr__(obj, name, value)




@dataclass(frozen=True)
class GaussianMechanism(Mechanism):
    r"""Adds :math:`N(0, \sigma^2 I)` to a query of L2 ``sensitivity`` (one release)."""

    sigma: float
    sensitivity: float = 1.0
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
    per_example_sum: bool = False

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_nonnegative("sensitivity", self.sensitivity))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _set(self, "per_example_sum", check_flag("per_example_sum", self.per_example_sum))

    @property
    def noise_multiplier(self) -> float:
        """Noise std divided by the sensitivity (under this mechanism's relation)."""
        return self.sigma / self.sensitivity if self.sensitivity > 0 else float("inf")

    def subsampled(self, sampling_rate: float, sampling: Any = "poisson") -> Mechanism:
        """This mechanism run on a subsample (as ``dp_accounting``'s ``PoissonSampledDpEvent``
        wraps a ``GaussianDpEvent``): a :class:`SubsampledGaussianMechanism`."""
        return SubsampledGaussianMechanism(self.sigma, sampling_rate, self.sensitivity, sampling,
                                           self.neighbouring, self.per_example_sum)


@dataclass(frozen=True)
class LaplaceMechanism(Mechanism):
    r"""Adds i.i.d. :math:`\mathrm{Laplace}(b)` (scale ``scale``, variance :math:`2b^2`) to a query
    of L1 ``sensitivity``: pure :math:`\Delta_1/b`-DP."""

    scale: float
    sensitivity: float = 1.0
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE
    per_example_sum: bool = False

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_nonnegative("sensitivity", self.sensitivity))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _set(self, "per_example_sum", check_flag("per_example_sum", self.per_example_sum))

    def subsampled(self, sample_size: int, dataset_size: int) -> Mechanism:
        """This mechanism run on a without-replacement subsample of ``sample_size`` of
        ``dataset_size`` records: a :class:`SubsampledLaplaceMechanism` (replace-one; an
        add/remove sensitivity is doubled)."""
        sens = self.sensitivity_under(Neighbouring.REPLACE_ONE)
        return SubsampledLaplaceMechanism(self.scale, sens, sample_size, dataset_size)


@dataclass(frozen=True)
class SubsampledGaussianMechanism(Mechanism):
    r"""Gaussian noise ``sigma`` on a per-example sum over a subsample (DP-SGD / DP-NSGD step).

    ``sampling="poisson"``: each record is included independently with ``sampling_rate``
    (analysed under add/remove); ``"without_replacement"``: a uniformly random batch of size
    ``sampling_rate * n`` (analysed under replace-one, Wang-Balle-Kasiviswanathan 2019).
    ``sensitivity`` is measured under ``neighbouring`` (default: the scheme's natural relation).
    A replace-one sensitivity is halved for an add/remove accountant only with
    ``per_example_sum=True`` (state it for a DP-SGD clipped-gradient sum).
    """

    sigma: float
    sampling_rate: float
    sensitivity: float = 1.0
    sampling: Sampling = Sampling.POISSON
    # None (the default) becomes the sampling's natural relation in __post_init__, so the
    # attribute is always a Neighbouring after construction
    neighbouring: Neighbouring | None = None  # type: ignore[assignment]
    per_example_sum: bool = False

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        q = check_closed_interval("sampling_rate", self.sampling_rate, 0.0, 1.0)
        if q == 0.0:
            raise ValueError("sampling_rate must lie in (0, 1], got 0.0")
        _set(self, "sampling_rate", q)
        _set(self, "sensitivity", check_nonnegative("sensitivity", self.sensitivity))
        _set(self, "sampling", Sampling.coerce(self.sampling))
        nb = self.sampling.natural_neighbouring if self.neighbouring is None else self.neighbouring
        _set(self, "neighbouring", Neighbouring.coerce(nb))
        _set(self, "per_example_sum", check_flag("per_example_sum", self.per_example_sum))

    @property
    def base(self) -> GaussianMechanism:
        """The Gaussian mechanism that is subsampled (``base.subsampled(q, sampling)`` gives
        this one back)."""
        return GaussianMechanism(self.sigma, self.sensitivity,
                                 Neighbouring.coerce(self.neighbouring), self.per_example_sum)

    def noise_multiplier_under(self, target: Any) -> float:
        """std / sensitivity with the sensitivity converted to ``target``."""
        sens = self.sensitivity_under(target)
        return self.sigma / sens if sens > 0 else float("inf")


@dataclass(frozen=True)
class SubsampledLaplaceMechanism(Mechanism):
    r"""Laplace noise of scale ``scale`` on a query of L1 ``sensitivity`` evaluated on a
    without-replacement subsample of ``sample_size`` of ``dataset_size`` records (replace-one):
    Kuru et al. eq. (11), pure :math:`\ln(1+\frac mn(e^{\Delta_1/b}-1))`-DP.

    For Kuru et al.'s mini-batch *average*, ``sensitivity = S_1 / m``; use :meth:`kuru`.
    """

    scale: float
    sensitivity: float
    sample_size: int
    dataset_size: int
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    per_example_sum: bool = False

    def __post_init__(self) -> None:
        _set(self, "scale", check_positive("scale", self.scale))
        _set(self, "sensitivity", check_nonnegative("sensitivity", self.sensitivity))
        n = check_int("dataset_size", self.dataset_size, minimum=1, maximum=MAX_COUNT)
        m = check_int("sample_size", self.sample_size, minimum=1, maximum=n)
        _set(self, "sample_size", m)
        _set(self, "dataset_size", n)
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _set(self, "per_example_sum", check_flag("per_example_sum", self.per_example_sum))

    def epsilon_under(self, target: Any) -> float:
        r"""Pure ε of one run, amplified by subsampling without replacement (Kuru et al.
        Thm A.3): :math:`\ln(1+\frac mn(e^{\Delta_1/b}-1))`. Stated for replace-one only:
        another ``target`` raises ``ValueError``. Every accountant uses this one method."""
        from dpbounds.privacy.laplace import amplify_without_replacement

        if Neighbouring.coerce(target, "target") is not Neighbouring.REPLACE_ONE:
            raise ValueError("subsampled Laplace amplification (Kuru et al. Theorem A.3) is "
                             "stated for replace_one")
        eps0 = self.sensitivity_under(Neighbouring.REPLACE_ONE) / self.scale
        return float(amplify_without_replacement(eps0, self.sample_size, self.dataset_size))

    @property
    def base(self) -> LaplaceMechanism:
        """The Laplace mechanism that is subsampled."""
        return LaplaceMechanism(self.scale, self.sensitivity, self.neighbouring,
                                self.per_example_sum)

    @classmethod
    def kuru(cls, sensitivity_function: float, scale: float, n: int, m: int):
        """Kuru et al.'s step: Laplace(b) on the average of m gradients with L1 bound S_1."""
        m = check_int("m", m, minimum=1, maximum=MAX_COUNT)
        s = check_nonnegative("sensitivity_function", sensitivity_function)
        return cls(scale=scale, sensitivity=s / m, sample_size=m, dataset_size=n)


@dataclass(frozen=True)
class TreeAggregationMechanism(Mechanism):
    r"""Tree aggregation with Gaussian node noise ``sigma`` (Tran & Cutkosky Thm 10):
    every node has L2 ``sensitivity`` at most :math:`\Delta`, one record lies in at most
    ``node_count`` = :math:`K` nodes; :math:`(\lambda,\lambda K\Delta^2/(2\sigma^2))`-RDP."""

    sigma: float
    sensitivity: float
    node_count: int
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    per_example_sum: bool = False

    def __post_init__(self) -> None:
        _set(self, "sigma", check_positive("sigma", self.sigma))
        _set(self, "sensitivity", check_nonnegative("sensitivity", self.sensitivity))
        _set(self, "node_count", check_int("node_count", self.node_count, minimum=1,
                                           maximum=MAX_COUNT))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _set(self, "per_example_sum", check_flag("per_example_sum", self.per_example_sum))


def _group_privacy_factor(source: Neighbouring, target: Any, factor: float) -> float:
    """Multiplier turning a guarantee under ``source`` into one under ``target``.

    One replace-one step is two add/remove steps, so an add/remove guarantee holds under
    replace-one at group size 2 (``factor`` = 2 for eps, 4 for zCDP rho); the converse fails.
    """
    target = Neighbouring.coerce(target, "target")
    if target is source:
        return 1.0
    if source is Neighbouring.ADD_REMOVE:
        return factor
    raise ValueError("a replace-one guarantee does not imply an add/remove one (neighbouring)")


@dataclass(frozen=True)
class PureDpMechanism(Mechanism):
    r"""Any :math:`\varepsilon`-DP mechanism (e.g. NoisyMax, Lee & Kifer Alg. 1)."""

    epsilon: float
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))

    def epsilon_under(self, target: Any) -> float:
        """Group privacy: an add/remove guarantee gives 2 eps under replace-one."""
        return self.epsilon * _group_privacy_factor(self.neighbouring, target, 2.0)


@dataclass(frozen=True)
class ApproxDpMechanism(Mechanism):
    r"""Any :math:`(\varepsilon,\delta)`-DP mechanism whose guarantee comes from a theorem
    (e.g. objective perturbation, Kifer-Smith-Thakurta Thm 2); ``label`` names it. Only the
    ``'basic'`` accountant accounts it (the PLD, RDP and zCDP accountants refuse it: an
    (eps, delta) pair does not fix a privacy-loss distribution)."""

    epsilon: float
    delta: float
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    label: str = ""

    def __post_init__(self) -> None:
        _set(self, "epsilon", check_nonnegative("epsilon", self.epsilon))
        _set(self, "delta", check_closed_interval("delta", self.delta, 0.0, 1.0))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _set(self, "label", str(self.label))

    def epsilon_under(self, target: Any) -> float:
        """Group privacy: an add/remove guarantee gives 2 eps under replace-one (and the delta
        of :meth:`delta_under`)."""
        return self.epsilon * _group_privacy_factor(self.neighbouring, target, 2.0)

    def delta_under(self, target: Any) -> float:
        r"""Group privacy for a group of 2: :math:`(1+e^{\varepsilon})\delta`."""
        if _group_privacy_factor(self.neighbouring, target, 2.0) == 1.0:
            return self.delta
        return min(1.0, (1.0 + math.exp(min(self.epsilon, 700.0))) * self.delta)


@dataclass(frozen=True)
class ComposedMechanism(Mechanism):
    """Sequential composition of ``parts`` = ``((mechanism, count), ...)`` (as
    ``dp_accounting``'s ``ComposedDpEvent``): an accountant composes every part. Useful to
    calibrate one noise factor across mechanisms of different scales (see
    :func:`~dpbounds.privacy.calibrate.calibrate`)."""

    parts: tuple = ()
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        parts = []
        for item in self.parts:
            mech, count = item if isinstance(item, (tuple, list)) else (item, 1)
            if not isinstance(mech, Mechanism):
                raise ValueError(f"parts must hold Mechanisms, got {mech!r}")
            parts.append((mech, check_int("count", count, minimum=0, maximum=MAX_COUNT)))
        _set(self, "parts", tuple(parts))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))

    @property
    def sensitivity(self) -> float:
        """Largest sensitivity of a part (the scale :func:`calibrate` starts from)."""
        return max((getattr(m, "sensitivity", 0.0) for m, _ in self.parts), default=0.0)


#: Mechanism classes by name, for :func:`mechanism_from_dict`.
_MECHANISMS: dict[str, type] = {}


def mechanism_from_dict(data: dict[str, Any]) -> Mechanism:
    """Inverse of :meth:`Mechanism.to_dict`."""
    if not isinstance(data, dict) or data.get("type") not in _MECHANISMS:
        raise ValueError(f"data must be a Mechanism.to_dict() with a known type "
                         f"{sorted(_MECHANISMS)}, got {data!r}")
    cls = _MECHANISMS[data["type"]]
    derived = {f.name for f in fields(cls) if not f.init}  # e.g. a discrete Gaussian's rho
    kwargs = {k: v for k, v in data.items() if k != "type" and k not in derived}
    unknown = sorted(set(kwargs) - {f.name for f in fields(cls) if f.init})
    if unknown:  # was a TypeError in Python's words ("unexpected keyword argument")
        raise ValueError(f"{data['type']} has no field(s) {unknown}; its fields are "
                         f"{sorted(f.name for f in fields(cls) if f.init)}")
    if "parts" in kwargs:
        parts = kwargs["parts"]
        if not isinstance(parts, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in parts):
            raise ValueError(f"parts of {data['type']} must be a list of [mechanism, count] "
                             f"pairs, got {parts!r}")
        # counts checked, not truncated: int(2.99) composed 2 runs (fuzz round 9)
        kwargs["parts"] = tuple((mechanism_from_dict(m), check_int(f"parts[{i}] count", c,
                                                                   minimum=0,
                                                                   maximum=MAX_COUNT))
                                for i, (m, c) in enumerate(parts))
    from dataclasses import MISSING

    missing = [f.name for f in fields(cls) if f.init and f.name not in kwargs
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:  # was a TypeError in Python's words ("missing 1 required positional ...")
        raise ValueError(f"{data['type']} needs the field(s) {missing}, got {data!r}")
    return cls(**kwargs)


@dataclass(frozen=True)
class ZcdpMechanism(Mechanism):
    r"""Any :math:`\rho`-zCDP mechanism."""

    rho: float
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        _set(self, "rho", check_nonnegative("rho", self.rho))
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))

    def rho_under(self, target: Any) -> float:
        """Group privacy for zCDP: a group of 2 costs 4 rho."""
        return self.rho * _group_privacy_factor(self.neighbouring, target, 4.0)


@dataclass(frozen=True)
class SubsampledZcdpMechanism(Mechanism):
    r"""Any :math:`\rho`-zCDP mechanism (e.g. the discrete Gaussian of a grid release) run on
    a subsample of rate ``sampling_rate``. Only the RDP accountant reads it; a continuous
    Gaussian's sharper subsampling bounds do not apply.

    ``sampling="without_replacement"`` (the default; replace-one): Wang, Balle &
    Kasiviswanathan 2019, Theorem 9 (amplification for any mechanism of known RDP).
    ``sampling="poisson"`` (add/remove): the smaller of Zhu & Wang 2019, Theorem 6 (the
    general Poisson bound) and each direction bounded on its own (DERIVED, see
    :func:`~dpbounds.privacy.rdp.poisson_zcdp_rdp`). ``neighbouring`` defaults to the
    sampling's natural relation and must be it."""

    rho: float
    sampling_rate: float
    # None (the default) becomes the sampling's natural relation in __post_init__
    neighbouring: Neighbouring | None = None  # type: ignore[assignment]
    sampling: Sampling = Sampling.WITHOUT_REPLACEMENT

    def __post_init__(self) -> None:
        _set(self, "rho", check_positive("rho", self.rho))
        _set(self, "sampling_rate", check_closed_interval("sampling_rate", self.sampling_rate,
                                                          0.0, 1.0))
        _set(self, "sampling", Sampling.coerce(self.sampling))
        natural = self.sampling.natural_neighbouring
        nb = natural if self.neighbouring is None else self.neighbouring
        _set(self, "neighbouring", Neighbouring.coerce(nb))
        if self.neighbouring is not natural:
            raise ValueError(f"neighbouring must be {natural.value!r} for "
                             f"SubsampledZcdpMechanism with sampling={self.sampling.value!r} "
                             f"(its amplification theorem is stated for {natural.value})")


def _float_up(q: Fraction) -> float:
    """The smallest float >= ``q``."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def _integer_units(name: str, value: Any) -> int:
    """``value`` (a real >= 0) rounded UP to an integer number of grid units."""
    v = check_nonnegative(name, value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return int(math.ceil(Fraction(v)))


def _float_down(q: Fraction) -> float:
    """The largest float <= ``q``."""
    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


def _discrete_gaussian_fields(obj: Any) -> None:
    variance = obj.variance
    try:
        exact = Fraction(variance)  # int, float (dyadic, exact) or Fraction
    except (TypeError, ValueError):
        raise ValueError(f"variance must be a positive real (grid units squared), got "
                         f"{variance!r}") from None
    if isinstance(variance, bool) or not 0 < exact <= MAX_DISCRETE_VARIANCE:
        raise ValueError(f"variance must be in (0, 2^52] grid units squared, got {variance!r}")
    # stored as a float rounded DOWN: less noise than drawn, never more
    _set(obj, "variance", _float_down(exact))
    _set(obj, "sensitivity", _integer_units("sensitivity", obj.sensitivity))
    _set(obj, "dimension", check_int("dimension", obj.dimension, minimum=1))
    _set(obj, "per_example_sum", check_flag("per_example_sum", obj.per_example_sum))
    _set(obj, "rho", _discrete_rho(obj.sensitivity, obj.variance))


def _discrete_rho(sensitivity: float, variance: float | Fraction) -> float:
    """Canonne, Kamath & Steinke 2020: an integer query of L2 sensitivity s plus independent
    discrete Gaussians of variance parameter v per coordinate is s^2/(2v)-zCDP (a
    converted sensitivity rounded up to an integer first; rho rounded up)."""
    s = math.ceil(Fraction(sensitivity))
    return _float_up(Fraction(s) ** 2 / (2 * Fraction(variance)))


#: Largest variance parameter (grid units squared) of a discrete Gaussian mechanism (2^52:
#: the exact sampler's range, ``2 t m <= 2^52``).
MAX_DISCRETE_VARIANCE: int = 2**52


@dataclass(frozen=True)
class _DiscreteGaussianParameters:
    """The keyword fields both discrete Gaussian mechanisms share (validated by
    :func:`_discrete_gaussian_fields`)."""

    variance: float | Fraction = field(kw_only=True, default=1.0)  # stored as a float
    sensitivity: float = field(kw_only=True, default=0)  # stored as an int (rounded up)
    dimension: int = field(kw_only=True, default=1)
    per_example_sum: bool = field(kw_only=True, default=False)

    if TYPE_CHECKING:
        def sensitivity_under(self, target: Any) -> float: ...

    def rho_under(self, target: Any) -> float:
        """:math:`s'^2/(2v)` with the sensitivity converted to ``target`` (module notes)."""
        return _discrete_rho(self.sensitivity_under(target), self.variance)


@dataclass(frozen=True)
class DiscreteGaussianMechanism(_DiscreteGaussianParameters, ZcdpMechanism):
    r"""An integer-valued query plus discrete Gaussian noise (a grid release such as
    :meth:`~dpbounds.privacy.discrete.GridGaussian.mechanism`).

    :math:`P[Z=z]\propto e^{-z^2/(2v)}` per coordinate, ``v = variance`` (grid units squared,
    e.g. the exact sampler's :math:`tm`; a rational is stored as the float below it), on a
    query whose L2 change between neighbours is at most ``sensitivity`` grid units (a real
    is rounded **up** to an integer). It is :math:`\rho = s^2/(2v)`-zCDP (Canonne, Kamath &
    Steinke 2020, multivariate discrete Gaussian; RECONSTRUCTED theorem number), so the zCDP
    and RDP accountants read it as a :class:`ZcdpMechanism` of that :math:`\rho` (``rho`` is
    derived, not passed). The PLD accountant reads a scalar one (``dimension=1``, standard
    deviation at most ``MAX_PLD_DISCRETE_SIGMA`` = :math:`2^{16}` grid units) through
    dp_accounting's ``DiscreteGaussianPrivacyLoss`` at the integer shift ``sensitivity``
    (pessimistic discretisation), the worst shift (DERIVED: the discrete Gaussian is
    log-concave on :math:`\mathbb Z`, so its integer shifts have monotone likelihood ratios,
    the best tests are thresholds, and the trade-off curve between :math:`Z` and :math:`Z+k`
    falls as the integer :math:`k` grows). A ``dimension > 1`` release is not a scalar
    discrete Gaussian at its L2 shift (lattice noise is not rotation-invariant), and the PLD
    accountant refuses it.

    Example
    -------
    >>> from dpbounds.privacy.mechanisms import DiscreteGaussianMechanism
    >>> m = DiscreteGaussianMechanism(variance=9, sensitivity=2.5)   # 2.5 grid units -> 3
    >>> m.sensitivity, m.rho
    (3, 0.5)
    """

    rho: float = field(init=False, default=0.0)
    neighbouring: Neighbouring = Neighbouring.ADD_REMOVE

    def __post_init__(self) -> None:
        _set(self, "neighbouring", Neighbouring.coerce(self.neighbouring))
        _discrete_gaussian_fields(self)


@dataclass(frozen=True)
class SubsampledDiscreteGaussianMechanism(_DiscreteGaussianParameters, SubsampledZcdpMechanism):
    r"""A :class:`DiscreteGaussianMechanism` run on a subsample of rate ``sampling_rate``.

    The RDP accountant reads it as a :class:`SubsampledZcdpMechanism` of :math:`\rho =
    s^2/(2v)`, its sensitivity converted to the sampling's relation as a continuous one's is;
    without replacement it also takes the discrete Gaussian's own bound
    (:func:`~dpbounds.privacy.rdp.without_replacement_discrete_gaussian_rdp`: its
    integer-order moments at integer shifts are the continuous Gaussian's), whichever is
    smaller. The PLD accountant reads a scalar one under
    Poisson sampling (add/remove) through dp_accounting's
    ``DiscreteGaussianPrivacyLoss`` with ``sampling_prob`` (the worst-case pair of the
    Poisson-subsampled discrete Gaussian, both directions); sampling without replacement has
    no PLD there and is refused (pessimistic discretisation, as for every PLD part). The
    integer shift ``sensitivity`` is again the worst
    (DERIVED: the mixture pair's trade-off curve is :math:`qf_k(\alpha)+(1-q)(1-\alpha)`,
    Dong, Roth & Su 2022's mixture identity, and falls with :math:`f_k`, the unsampled
    pair's; the reverse pair's curve is its inverse).
    """

    rho: float = field(init=False, default=0.0)
    sampling_rate: float = 1.0
    neighbouring: Neighbouring | None = None
    sampling: Sampling = Sampling.POISSON

    def __post_init__(self) -> None:
        _discrete_gaussian_fields(self)
        if self.rho <= 0:
            raise ValueError("sensitivity must be > 0 for a subsampled discrete Gaussian "
                             "(a zero-sensitivity release leaks nothing: leave it out)")
        _set(self, "sampling_rate", check_closed_interval("sampling_rate", self.sampling_rate,
                                                          0.0, 1.0))
        _set(self, "sampling", Sampling.coerce(self.sampling))
        # the sensitivity may be measured under either relation (as for the continuous
        # SubsampledGaussianMechanism); accountants convert it to the sampling's natural one
        nb = self.sampling.natural_neighbouring if self.neighbouring is None \
            else self.neighbouring
        _set(self, "neighbouring", Neighbouring.coerce(nb))


_MECHANISMS.update({cls.__name__: cls for cls in (
    GaussianMechanism, LaplaceMechanism, SubsampledGaussianMechanism, SubsampledLaplaceMechanism,
    TreeAggregationMechanism, PureDpMechanism, ZcdpMechanism, ApproxDpMechanism,
    ComposedMechanism, SubsampledZcdpMechanism, DiscreteGaussianMechanism,
    SubsampledDiscreteGaussianMechanism)})
