r"""Mechanisms and ledgers to and from ``dp_accounting``'s ``DpEvent`` objects.

:func:`to_dp_event` turns a :class:`~dpbounds.privacy.mechanisms.Mechanism` or a
:class:`~dpbounds.privacy.ledger.PrivacyLedger` into the ``DpEvent`` that ``dp_accounting``'s
accountants compose; :func:`from_dp_event` reads an event (or its ``to_named_tuple()`` form)
back as a mechanism. Neither guesses a relation: the neighbouring relation is an argument and
every sensitivity is converted to it explicitly
(:meth:`~dpbounds.privacy.mechanisms.Mechanism.sensitivity_under`).

Conventions of ``dp_accounting`` (checked on 0.6.0 in ``tests/privacy/test_events.py``)
-----------------------------------------------------------------------------------------
A ``DpEvent`` carries a *noise multiplier* (noise scale over a sensitivity) and no relation;
the relation belongs to the accountant (``NeighboringRelation``). DERIVED from reading its
source and confirmed numerically:

* Under ``ADD_OR_REMOVE_ONE`` both accountants read ``GaussianDpEvent(z)`` as the pair
  :math:`N(0,z^2)` vs :math:`N(1,z^2)`: ``z`` is the noise over the add/remove sensitivity
  :math:`C` (a clipped per-example sum), as its docstring says.
* Under ``REPLACE_ONE`` its **RDP** accountant still uses :math:`\alpha/(2z^2)` for a
  ``GaussianDpEvent``, and Wang-Balle-Kasiviswanathan's bound for
  ``SampledWithoutReplacementDpEvent`` takes ``z`` relative to the replace-one sensitivity:
  for both, ``z`` must be the noise over the **replace-one** sensitivity :math:`2C`, i.e.
  half the add/remove multiplier. Its **PLD** accountant instead builds the pair
  :math:`N(-1,z^2)` vs :math:`N(1,z^2)` (``AdjacencyType.REPLACE``): it reads ``z`` relative to
  :math:`C` and doubles the sensitivity itself. The same event therefore means a different
  mechanism to its two accountants under ``REPLACE_ONE``, so :func:`to_dp_event` takes the
  accountant the event is for (``accountant='rdp'`` or ``'pld'``; they coincide under
  ``add_remove``).
* ``SampledWithoutReplacementDpEvent(n, m, ...)`` is written with the sampling rate's smallest
  fraction ``m/n`` (``(10, 1)`` for 200 of 2000: a mechanism keeps the rate, not the sizes;
  Wang-Balle-Kasiviswanathan's bound reads the rate only). dp_accounting's RDP accountant
  reads it at that general bound, which is looser than dpbounds' own for the Gaussian: a
  DP-SGD run of 200 steps at rate 0.1 calibrated to eps = 0.5 (delta 1e-5, dpbounds' RDP)
  reads 0.84 there (walkthrough of stop 78); the exported event is valid, only loose.
* ``LaplaceDpEvent(z)``: ``z`` is the scale over the L1 sensitivity; RDP reads it as pure
  :math:`1/z`-DP under any relation; PLD refuses it under ``REPLACE_ONE``.

Mapping (dpbounds → dp_accounting; ``count`` becomes ``SelfComposedDpEvent``)
------------------------------------------------------------------------------
=================================  ====================================================
GaussianMechanism                  ``GaussianDpEvent(sigma / sensitivity)``
LaplaceMechanism                   ``LaplaceDpEvent(scale / sensitivity)``
SubsampledGaussian, Poisson        ``PoissonSampledDpEvent(q, GaussianDpEvent(z))``
                                   (add/remove only, as both libraries analyse it)
SubsampledGaussian, w/o repl.      ``SampledWithoutReplacementDpEvent(n, m, Gaussian(z))``
                                   with ``m/n == q`` exactly (replace-one; RDP only)
TreeAggregationMechanism           ``SelfComposedDpEvent(GaussianDpEvent(sigma/Delta), K)``
                                   (each record in at most ``K`` Gaussian nodes, the
                                   composition dpbounds accounts)
ZcdpMechanism                      ``ZCDpEvent(rho)`` (RDP only)
ComposedMechanism, PrivacyLedger   ``ComposedDpEvent`` of ``SelfComposedDpEvent`` parts
sensitivity 0                      ``NoOpDpEvent()``
GridLaplace (release primitive)    ``DiscreteLaplaceDpEvent(1/scale, units)``: the
                                   discrete Laplace on integer grid indices of L1
                                   sensitivity ``units`` (PLD only; add/remove)
GridGaussian (release primitive)   ``ZCDpEvent(rho_spent)``: its accounting (RDP only;
                                   dp_accounting has no discrete Gaussian event)
SubsampledZcdpMechanism,           ``ZCDpEvent(rho')`` of the mechanism **without** its
SubsampledDiscreteGaussian         subsampling (RDP only; a ``noise="grid"`` run's
(``noise="grid"`` runs)            ledger): sound but loose (below)
=================================  ====================================================

A subsampled zCDP mechanism (a ``noise="grid"`` run's discrete Gaussian on a subsample) has
no ``dp_accounting`` event: it has no subsampled discrete Gaussian, and its sampled events'
Gaussian reading is not known to bound the discrete one at fractional Rényi orders. Its event
is therefore the unsampled :math:`\rho'`-zCDP release, valid because subsampling never
increases a Rényi divergence (DERIVED from the joint quasi-convexity of Rényi divergence,
van Erven & Harremoës 2014, Theorem 13: couple the two neighbours' samples so that each
pair of samples differs in at most one record; the two output laws are mixtures, with
equal weights, of pairs of the base mechanism on neighbouring inputs, so
:math:`D_\alpha\le\max D_\alpha\le\rho'\alpha`). :math:`\rho'` is the base
mechanism's :math:`\rho` for the pairs that coupling produces: under Poisson sampling a
pair differs as the accountant's relation does (an added, removed or replaced record keeps
its coin); without replacement it differs by a replacement under either relation (the
sample that holds the added record is coupled with one that holds another in its place).
The event forgoes the amplification, so ``dp_accounting`` reads a larger epsilon than
dpbounds (a DP-SGD run of 50 steps at rate 0.05 calibrated to eps = 1 at delta = 1e-6
reads 15.7 there without replacement, 17.1 with Poisson sampling); compare it with
the run's own ``result.privacy.epsilon``.

A :class:`~dpbounds.privacy.mechanisms.SubsampledLaplaceMechanism` of the whole data set
(``sample_size == dataset_size``, a full-batch DP heavy ball or DP-NAG step) is its Laplace
mechanism: ``LaplaceDpEvent`` (replace-one, as its amplification is stated).

Refused (``ValueError`` saying why):
:class:`~dpbounds.privacy.mechanisms.SubsampledLaplaceMechanism` of a proper subsample
(``dp_accounting``'s RDP
accountant takes only Gaussian sub-events of ``SampledWithoutReplacementDpEvent`` and its PLD
accountant has no sampling without replacement),
:class:`~dpbounds.privacy.mechanisms.PureDpMechanism` and
:class:`~dpbounds.privacy.mechanisms.ApproxDpMechanism` (``dp_accounting`` has no event for a
generic :math:`\varepsilon`- or :math:`(\varepsilon,\delta)`-DP mechanism).

:func:`from_dp_event` inverts the table (sensitivity 1, ``per_example_sum=True``: every
``dp_accounting`` noise event is defined on a sum of per-record values) and also reads
``SingleEpochTreeAggregationDpEvent(z, steps)`` (``REPLACE_SPECIAL``: a record replaced by
the zero record, which for a sum is a removal) and ``DiscreteLaplaceDpEvent(a, s)`` as a pure
:math:`(as)`-DP mechanism (its largest privacy loss; sound, looser than its exact PLD), and
``SingleEpochTreeAggregationDpEvent`` as a
:class:`~dpbounds.privacy.mechanisms.TreeAggregationMechanism` with
:math:`K=\lceil\log_2(\max\mathrm{steps}+1)\rceil` nodes under add/remove (DERIVED: the
RDP ``dp_accounting`` gives it, :math:`\alpha K/(2z^2)`, is dpbounds' tree RDP at sensitivity 1).
It refuses events dpbounds has no mechanism for, naming them.

Example
-------
>>> from dpbounds.privacy.events import from_dp_event, to_dp_event
>>> from dpbounds.privacy.mechanisms import GaussianMechanism
>>> m = GaussianMechanism(sigma=2.0, sensitivity=1.0, per_example_sum=True)
>>> to_dp_event(m)
GaussianDpEvent(noise_multiplier=2.0)
>>> to_dp_event(m, "replace_one")                     # RDP: over the replace-one 2C
GaussianDpEvent(noise_multiplier=1.0)
>>> to_dp_event(m, "replace_one", accountant="pld")   # PLD doubles C itself
GaussianDpEvent(noise_multiplier=2.0)
>>> from_dp_event(to_dp_event(m)).sigma
2.0
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from dpbounds._validation import MAX_COUNT, _show, check_choice, check_int
from dpbounds.privacy.discrete import GridGaussian, GridLaplace
from dpbounds.privacy.ledger import PrivacyLedger
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
    SubsampledZcdpMechanism,
    TreeAggregationMechanism,
    ZcdpMechanism,
)

__all__ = [
    "dp_accounting_relation",
    "dp_event_from_json",
    "dp_event_note",
    "dp_event_to_json",
    "from_dp_event",
    "ledger_from_dp_event",
    "to_dp_event",
]

#: The ``dp_accounting`` accountants an event can be written for.
EVENT_ACCOUNTANTS = ("rdp", "pld")

#: the dp_accounting events :func:`from_dp_event` reads (any other is refused: "dpbounds has
#: no mechanism for this dp_accounting event"); the CLI's catalog lists the others, so that
#: ``privacy compose`` refuses one before importing dp_accounting
MAPPED_EVENTS = ("NoOpDpEvent", "SelfComposedDpEvent", "ComposedDpEvent", "GaussianDpEvent",
                 "LaplaceDpEvent", "PoissonSampledDpEvent", "SampledWithoutReplacementDpEvent",
                 "SingleEpochTreeAggregationDpEvent", "DiscreteLaplaceDpEvent", "ZCDpEvent")


def _dpa() -> Any:
    # imported on use: ``dpbounds privacy --help`` and the rest of the library stay fast
    import dp_accounting

    return dp_accounting


def dp_accounting_relation(neighbouring: Any) -> Any:
    """``dp_accounting.NeighboringRelation`` for a dpbounds relation (``ADD_OR_REMOVE_ONE`` or
    ``REPLACE_ONE``): the relation to build its accountant with for :func:`to_dp_event`'s
    output."""
    nb = Neighbouring.coerce(neighbouring)
    rel = _dpa().NeighboringRelation
    return rel.ADD_OR_REMOVE_ONE if nb is Neighbouring.ADD_REMOVE else rel.REPLACE_ONE


def _ratio(name: str, noise: float, sensitivity: float) -> float:
    z = noise / sensitivity
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"{name}: noise / sensitivity = {z!r} is not a positive finite "
                         "noise multiplier")
    return z


def _sampled_sizes(q: float) -> tuple[int, int]:
    """(n, m) with ``m / n == q`` exactly in float (dp_accounting divides them): a small
    fraction when one reproduces ``q``, else its exact dyadic value."""
    small = Fraction(q).limit_denominator(10**9)
    frac = small if small.numerator / small.denominator == q else Fraction(q)
    return frac.denominator, frac.numerator


def _one(mech: Mechanism, nb: Neighbouring, accountant: str) -> Any:
    """The event of one run of ``mech`` (no count)."""
    dpa = _dpa()
    # under replace-one dp_accounting's PLD reads a Gaussian's multiplier relative to C (the
    # half of the replace-one sensitivity) and doubles it itself: see the module notes
    pld_replace = accountant == "pld" and nb is Neighbouring.REPLACE_ONE
    name = type(mech).__name__
    if isinstance(mech, ComposedMechanism):
        return dpa.ComposedDpEvent([_counted(m, c, nb, accountant) for m, c in mech.parts])
    if isinstance(mech, (GaussianMechanism, TreeAggregationMechanism)):
        sens = _sens(mech, nb)
        if sens == 0:
            return dpa.NoOpDpEvent()
        z = _ratio(name, mech.sigma, sens / 2 if pld_replace else sens)
        if isinstance(mech, TreeAggregationMechanism):
            return dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z), mech.node_count)
        return dpa.GaussianDpEvent(z)
    if isinstance(mech, LaplaceMechanism):
        if pld_replace:
            raise ValueError(f"{name}: dp_accounting's PLD accountant refuses LaplaceDpEvent "
                             "under REPLACE_ONE; use accountant='rdp' or add_remove")
        sens = _sens(mech, nb)
        return dpa.NoOpDpEvent() if sens == 0 else dpa.LaplaceDpEvent(
            _ratio(name, mech.scale, sens))
    if isinstance(mech, SubsampledGaussianMechanism):
        sens = _sens(mech, nb)
        if sens == 0:
            return dpa.NoOpDpEvent()
        if mech.sampling is Sampling.POISSON:
            if nb is not Neighbouring.ADD_REMOVE:
                raise ValueError(f"{name}: Poisson subsampling is analysed under add_remove "
                                 "(dp_accounting's RDP accountant refuses PoissonSampledDpEvent "
                                 "under REPLACE_ONE); convert with neighbouring='add_remove'")
            return dpa.PoissonSampledDpEvent(mech.sampling_rate,
                                             dpa.GaussianDpEvent(_ratio(name, mech.sigma, sens)))
        if nb is not Neighbouring.REPLACE_ONE:
            raise ValueError(f"{name}: sampling without replacement is analysed under "
                             "replace_one (dp_accounting's SampledWithoutReplacementDpEvent "
                             "needs REPLACE_ONE); convert with neighbouring='replace_one'")
        if accountant == "pld":
            raise ValueError(f"{name}: dp_accounting's PLD accountant has no sampling without "
                             "replacement; use accountant='rdp'")
        n, m = _sampled_sizes(mech.sampling_rate)
        _warn_loose(name)
        return dpa.SampledWithoutReplacementDpEvent(
            n, m, dpa.GaussianDpEvent(_ratio(name, mech.sigma, sens)))
    if isinstance(mech, ZcdpMechanism):
        if accountant == "pld":
            raise ValueError(f"{name}: dp_accounting's PLD accountant has no ZCDpEvent; use "
                             "accountant='rdp'")
        return dpa.ZCDpEvent(mech.rho_under(nb))
    if isinstance(mech, SubsampledZcdpMechanism):
        if accountant == "pld":
            raise ValueError(f"{name}: dp_accounting's PLD accountant has no ZCDpEvent (and no "
                             "subsampled discrete Gaussian event); use accountant='rdp'")
        return dpa.ZCDpEvent(_unsampled_rho(mech, nb))
    if (isinstance(mech, SubsampledLaplaceMechanism) and nb is Neighbouring.REPLACE_ONE
            and mech.sample_size == mech.dataset_size):
        # the whole data set: no subsampling, the Laplace mechanism itself (walkthrough of
        # stop 80: a full-batch DP heavy ball run could not be exported)
        return _one(mech.base, nb, accountant)
    if isinstance(mech, SubsampledLaplaceMechanism):
        raise ValueError(
            f"{name} has no dp_accounting equivalent it can account: its RDP accountant takes "
            "only Gaussian sub-events of SampledWithoutReplacementDpEvent and its PLD accountant "
            "has no sampling without replacement; account it with dpbounds ('pure' or 'pld', "
            "Kuru et al.'s amplification)")
    if isinstance(mech, (PureDpMechanism, ApproxDpMechanism)):
        raise ValueError(
            f"{name} has no dp_accounting event: dp_accounting describes mechanisms, not "
            "guarantees (its LaplaceDpEvent is the Laplace mechanism, which leaks less than "
            "the worst epsilon-DP mechanism); account it with dpbounds")
    raise ValueError(f"mechanism {name} has no dp_accounting event")


def _unsampled_rho(mech: SubsampledZcdpMechanism, nb: Neighbouring) -> float:
    """The zCDP ``rho`` of ``mech`` without its amplification, for an accountant under ``nb``
    (module notes: the base mechanism's rho for the pairs the samples' coupling produces)."""
    pair = nb if mech.sampling is Sampling.POISSON else Neighbouring.REPLACE_ONE
    rho_under = getattr(mech, "rho_under", None)  # a discrete Gaussian converts its sensitivity
    if rho_under is not None:
        return float(rho_under(pair))
    # a generic one states rho under its sampling's natural relation (checked on creation)
    return ZcdpMechanism(mech.rho, neighbouring=mech.sampling.natural_neighbouring).rho_under(pair)


#: what dp_accounting makes of an event dpbounds accounts more tightly (walkthrough of stop 80:
#: a DP-SGD run exported from Python read 1.6 there, 1.0 in dpbounds, without a word; the
#: shell's --to-dp-event line shows both readings)
LOOSE_WITHOUT_REPLACEMENT = (
    "{name}: dp_accounting reads SampledWithoutReplacementDpEvent with Wang, Balle & "
    "Kasiviswanathan's general bound, looser than dpbounds' for the Gaussian: its epsilon for "
    "the event may be well above dpbounds' (1.6 where dpbounds certifies 1.0 for 200 DP-SGD "
    "steps at rate 0.025); the event is valid, only loose, and dpbounds' is the run's "
    "privacy.epsilon")


def _warn_loose(name: str) -> None:
    import warnings

    warnings.warn(LOOSE_WITHOUT_REPLACEMENT.format(name=name), UserWarning, stacklevel=4)


def _sens(mech: Mechanism, nb: Neighbouring) -> float:
    return mech.sensitivity_under(nb)


def _counted(mech: Mechanism, count: int, nb: Neighbouring, accountant: str) -> Any:
    # checked as PrivacyLedger.record checks it: 2.5 was exported as 2 runs (an under-count),
    # '3', 0, -5 and 1e300 were taken (fuzz round 15)
    count = check_int("count", count, minimum=1, maximum=MAX_COUNT)
    event = _one(mech, nb, accountant)
    return event if count == 1 else _dpa().SelfComposedDpEvent(event, int(count))


def to_dp_event(obj: Any, neighbouring: Any = None, *, accountant: str = "rdp") -> Any:
    """The ``dp_accounting`` ``DpEvent`` of a mechanism, a ``(mechanism, count)`` pair or a
    ledger, for an accountant built with ``dp_accounting_relation(neighbouring)``.

    Parameters
    ----------
    obj:
        A :class:`~dpbounds.privacy.mechanisms.Mechanism`, a ``(mechanism, count)`` pair, a
        :class:`~dpbounds.privacy.ledger.PrivacyLedger` (or a run's result or its
        ``privacy``, whose ledger is taken), or a grid release
        (:class:`~dpbounds.privacy.discrete.GridLaplace`,
        :class:`~dpbounds.privacy.discrete.GridGaussian`; module notes).
    neighbouring:
        Relation of the ``dp_accounting`` accountant; ``None``: the ledger's or the
        mechanism's own. Sensitivities are converted to it (``ValueError`` for replace-one
        to add/remove without ``per_example_sum``).
    accountant:
        ``'rdp'`` or ``'pld'``: the ``dp_accounting`` accountant the event is for; they read a
        Gaussian's noise multiplier differently under replace-one (module notes).

    Returns
    -------
    dp_accounting.DpEvent

    Raises
    ------
    ValueError
        For a mechanism with no ``dp_accounting`` equivalent, saying why.
    """
    accountant = check_choice("accountant", accountant, EVENT_ACCOUNTANTS)
    if isinstance(obj, (GridLaplace, GridGaussian)):
        return _grid_event(obj, neighbouring, accountant)
    # a run's result or its RunPrivacy: their PrivacyLedger (walkthrough of stop 79:
    # to_dp_event(result.ledger), the spend summary, failed without naming the ledger)
    inner = getattr(getattr(obj, "privacy", obj), "ledger", None)
    if not isinstance(obj, PrivacyLedger) and isinstance(inner, PrivacyLedger):
        obj = inner
    elif type(obj).__name__ == "SpentBudget":
        raise ValueError("obj is a run's spend summary (result.ledger): its PrivacyLedger is "
                         "result.privacy.ledger (or pass the result itself)")
    if isinstance(obj, PrivacyLedger):
        nb = Neighbouring.coerce(obj.neighbouring if neighbouring is None else neighbouring)
        events = [_counted(m, c, nb, accountant) for m, c in obj.entries]
        return events[0] if len(events) == 1 else _dpa().ComposedDpEvent(events)
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and isinstance(obj[0], Mechanism):
        mech, count = obj
    else:
        mech, count = obj, 1
    if not isinstance(mech, Mechanism):
        raise ValueError(f"obj must be a Mechanism, a (Mechanism, count) pair or a "
                         f"PrivacyLedger, got {obj!r}")
    nb = Neighbouring.coerce(mech.neighbouring if neighbouring is None else neighbouring)
    return _counted(mech, count, nb, accountant)


def _grid_event(mech: GridLaplace | GridGaussian, neighbouring: Any, accountant: str) -> Any:
    """The event of a grid release (its sensitivity is under the caller's relation)."""
    dpa = _dpa()
    nb = Neighbouring.coerce(Neighbouring.ADD_REMOVE if neighbouring is None else neighbouring)
    name = type(mech).__name__
    if isinstance(mech, GridLaplace):
        if accountant != "pld" or nb is not Neighbouring.ADD_REMOVE:
            raise ValueError(f"{name}: dp_accounting accounts DiscreteLaplaceDpEvent with its PLD "
                             "accountant under ADD_OR_REMOVE_ONE only; use accountant='pld' and "
                             "neighbouring='add_remove'")
        # pmf exp(-a|k|) tanh(a/2) with a = 1/scale; integer L1 sensitivity: the grid units
        return dpa.dp_event.DiscreteLaplaceDpEvent(1.0 / float(mech.scale), int(mech.units))
    if accountant != "rdp":
        raise ValueError(f"{name}: dp_accounting has no discrete Gaussian event; its zCDP "
                         "accounting (ZCDpEvent) is read by the RDP accountant only; use "
                         "accountant='rdp'")
    return dpa.ZCDpEvent(mech.rho_spent)


def _real(event: Any, field: str) -> float:
    """``event.field`` as a float; a bool or a string is refused (``"noise_multiplier": true``
    ran as sigma = 1, and ``"1"`` as 1.0, where dpbounds' own mechanisms refuse them), and a
    value that is not a number names its event and field."""
    v = getattr(event, field)
    if isinstance(v, (bool, str, bytes)) or type(v).__name__ == "bool_":  # NumPy's too
        raise ValueError(f"{field} of {type(event).__name__} must be a number, got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{field} of {type(event).__name__} must be a number, got "
                         f"{v!r}") from None
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):  # NaN read "sigma must be finite", naming neither event nor field
        raise ValueError(f"{field} of {type(event).__name__} must be finite, got {v!r}")
    from dpbounds._dp_event_form import field_range_error

    words = field_range_error(type(event).__name__, field, x)  # was "sigma must be > 0"
    if words is not None:
        raise ValueError(words)
    return x


def _leaves(event: Any, count: int, nb: Neighbouring, accountant: str,
            out: list[tuple[Mechanism, int]]) -> None:
    """Append the ``(mechanism, count)`` leaves of ``event`` run ``count`` times to ``out``."""
    dpa = _dpa()
    name = type(event).__name__
    if count > MAX_COUNT:  # a product of nested counts (each checked below)
        raise ValueError(f"the nested counts compose {_show(count)} runs of {name}, more than "
                         f"{MAX_COUNT:.0e}")
    if isinstance(event, dpa.NoOpDpEvent):
        return
    if isinstance(event, dpa.SelfComposedDpEvent):
        # a fractional count would be truncated (2.5 runs accounted as 2: an under-count)
        # and at least 1, as dp_accounting's own ledger requires ("count must be positive"):
        # count 0 composed nothing and every accountant read n/a, with exit 0
        times = check_int(f"count of {name}", event.count, minimum=1, maximum=MAX_COUNT)
        _leaves(event.event, count * times, nb, accountant, out)
        return
    if isinstance(event, dpa.ComposedDpEvent):
        if not isinstance(event.events, (list, tuple)):  # a dict iterated its keys (exit 4)
            raise ValueError(f"events of {name} must be a list of events, got "
                             f"{type(event.events).__name__}")
        for e in event.events:
            _leaves(e, count, nb, accountant, out)
        return
    pld_replace = accountant == "pld" and nb is Neighbouring.REPLACE_ONE
    kw: dict[str, Any] = {"sensitivity": 1.0, "neighbouring": nb, "per_example_sum": True}
    mech: Mechanism
    if isinstance(event, dpa.GaussianDpEvent):
        z = _real(event, "noise_multiplier")
        mech = GaussianMechanism(z / 2 if pld_replace else z, **kw)
    elif isinstance(event, dpa.LaplaceDpEvent):
        if pld_replace:
            raise ValueError("LaplaceDpEvent under REPLACE_ONE: dp_accounting's PLD accountant "
                             "refuses it")
        mech = LaplaceMechanism(_real(event, "noise_multiplier"), **kw)
    elif isinstance(event, dpa.PoissonSampledDpEvent):
        if not isinstance(event.event, dpa.GaussianDpEvent):
            raise ValueError(f"PoissonSampledDpEvent of {type(event.event).__name__}: dpbounds "
                             "has Poisson subsampling of a Gaussian only")
        if nb is not Neighbouring.ADD_REMOVE:
            raise ValueError("PoissonSampledDpEvent is analysed under add_remove; read it with "
                             "neighbouring='add_remove'")
        mech = SubsampledGaussianMechanism(_real(event.event, "noise_multiplier"),
                                           _real(event, "sampling_probability"),
                                           sampling=Sampling.POISSON, **kw)
    elif isinstance(event, dpa.SampledWithoutReplacementDpEvent):
        if nb is not Neighbouring.REPLACE_ONE:
            raise ValueError("SampledWithoutReplacementDpEvent is analysed under replace_one; "
                             "read it with neighbouring='replace_one'")
        # integers, not truncated: a sample size of 2.9 was read as 2 (a rate 0.2, not 0.29)
        n = check_int(f"source_dataset_size of {name}", event.source_dataset_size)
        m = check_int(f"sample_size of {name}", event.sample_size)
        if not 1 <= m <= n:
            raise ValueError(f"SampledWithoutReplacementDpEvent: sample_size must lie in "
                             f"[1, source_dataset_size={n}], got {m}")
        inner = event.event
        if isinstance(inner, dpa.GaussianDpEvent):
            if accountant == "pld":
                raise ValueError("SampledWithoutReplacementDpEvent: dp_accounting's PLD "
                                 "accountant has no sampling without replacement")
            mech = SubsampledGaussianMechanism(_real(inner, "noise_multiplier"), m / n,
                                               sampling=Sampling.WITHOUT_REPLACEMENT, **kw)
        elif isinstance(inner, dpa.LaplaceDpEvent):
            mech = SubsampledLaplaceMechanism(_real(inner, "noise_multiplier"), 1.0, m, n,
                                              per_example_sum=True)
        else:
            raise ValueError(f"SampledWithoutReplacementDpEvent of {type(inner).__name__}: "
                             "dpbounds subsamples Gaussian and Laplace mechanisms only")
    elif isinstance(event, dpa.SingleEpochTreeAggregationDpEvent):
        raw = event.step_counts
        if not isinstance(raw, (list, tuple)):  # dp_accounting's: an int or a list of ints
            raw = [raw]
        steps = []
        for v in raw:  # None, 1023.5, "1023", [[3]], true and 1e309 crashed or were read
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    isinstance(v, int) or (math.isfinite(v) and v == int(v))):
                raise ValueError(f"step_counts of {name} must be a whole number or a list of "
                                 f"them, got {event.step_counts!r}")
            steps.append(check_int(f"step_counts of {name}", int(v), minimum=0,
                                   maximum=MAX_COUNT))
        if not steps or max(steps) < 1:
            raise ValueError(f"SingleEpochTreeAggregationDpEvent: step_counts must be "
                             f"positive, got {event.step_counts!r}")
        # ceil(log2(T + 1)) levels; exact in integers (float64's log2 of 2^49 + 1 is 49.0: a
        # node short, eps 1.5% low, fuzz round 18; dp_accounting's own reader has the slip)
        depth = max(steps).bit_length()
        # REPLACE_SPECIAL (the zero record) is a removal for a sum: add/remove, sensitivity 1
        tree = TreeAggregationMechanism(_real(event, "noise_multiplier"), 1.0, depth,
                                        Neighbouring.ADD_REMOVE, per_example_sum=True)
        out.append((tree, count))
        return
    elif isinstance(event, dpa.dp_event.DiscreteLaplaceDpEvent):
        if nb is not Neighbouring.ADD_REMOVE:
            # dp_accounting accounts it under ADD_OR_REMOVE_ONE only (neither its PLD nor its
            # RDP accountant takes it under REPLACE_ONE), so whether its sensitivity is the
            # change of one record (C) or the distance between two (2C) is not defined there:
            # a file read as pure eps = a s could be 2 a s (fuzz round 10)
            raise ValueError("DiscreteLaplaceDpEvent under REPLACE_ONE: dp_accounting accounts "
                             "it under ADD_OR_REMOVE_ONE only, so its sensitivity has no "
                             "replace-one reading; read it with neighbouring='add_remove'")
        # pmf ratio at distance `sensitivity` is at most exp(a * sensitivity): pure DP
        mech = PureDpMechanism(_real(event, "noise_parameter")
                               * check_int(f"sensitivity of {name}", event.sensitivity), nb)
    elif isinstance(event, dpa.ZCDpEvent):
        if _real(event, "xi") != 0.0:
            raise ValueError(f"ZCDpEvent with xi = {event.xi!r}: dpbounds' zCDP has no xi")
        mech = ZcdpMechanism(_real(event, "rho"), nb)
    else:
        raise ValueError(f"{name}: dpbounds has no mechanism for this dp_accounting event")
    out.append((mech, count))


def _as_event(event: Any) -> Any:
    dpa = _dpa()
    if isinstance(event, dpa.DpEvent):
        return event
    if isinstance(event, dpa.dp_event.DpEventNamedTuple):
        return dpa.DpEvent.from_named_tuple(event)
    raise ValueError(f"event must be a dp_accounting DpEvent or its named tuple, got {event!r}")


def from_dp_event(event: Any, neighbouring: Any = Neighbouring.ADD_REMOVE, *,
                  accountant: str = "rdp") -> Mechanism:
    """The dpbounds mechanism of a ``dp_accounting`` event (inverse of :func:`to_dp_event`).

    Parameters
    ----------
    event:
        A ``DpEvent`` or its ``to_named_tuple()`` form.
    neighbouring:
        The relation of the ``dp_accounting`` accountant the event was written for.
    accountant:
        ``'rdp'`` or ``'pld'``: which ``dp_accounting`` accountant's reading of a noise
        multiplier to follow (they differ under replace-one; see the module notes).

    Returns
    -------
    Mechanism
        One mechanism for a single run; otherwise a
        :class:`~dpbounds.privacy.mechanisms.ComposedMechanism` of ``(mechanism, count)``
        parts (empty for ``NoOpDpEvent``).

    Raises
    ------
    ValueError
        For an event dpbounds has no mechanism for, naming it.
    """
    accountant = check_choice("accountant", accountant, EVENT_ACCOUNTANTS)
    nb = Neighbouring.coerce(neighbouring)
    leaves = _all_leaves(event, nb, accountant)
    if len(leaves) == 1 and leaves[0][1] == 1:
        return leaves[0][0]
    return ComposedMechanism(tuple(leaves), nb)


def ledger_from_dp_event(event: Any, neighbouring: Any = Neighbouring.ADD_REMOVE, *,
                         accountant: str = "rdp") -> PrivacyLedger:
    """A :class:`~dpbounds.privacy.ledger.PrivacyLedger` (relation ``neighbouring``) holding
    the leaves of ``event`` in order, with their counts (see :func:`from_dp_event`)."""
    accountant = check_choice("accountant", accountant, EVENT_ACCOUNTANTS)
    nb = Neighbouring.coerce(neighbouring)
    return PrivacyLedger(nb, _all_leaves(event, nb, accountant))


def _all_leaves(event: Any, nb: Neighbouring, accountant: str) -> list[tuple[Mechanism, int]]:
    """The ``(mechanism, count)`` leaves of ``event``; ``ValueError`` for an event nested
    deeper than Python's recursion allows (it was an internal error)."""
    leaves: list[tuple[Mechanism, int]] = []
    try:
        _leaves(_as_event(event), 1, nb, accountant, leaves)
    except RecursionError:
        raise ValueError("the event is nested too deeply to read (its SelfComposedDpEvent / "
                         "ComposedDpEvent / sampled levels pass Python's recursion limit)"
                         ) from None
    return leaves


#: the key of :func:`dp_event_to_json`'s note of whom an exported event was written for
WRITTEN_FOR = "written_for"


def dp_event_to_json(event: Any, written_for: Mapping[str, str] | None = None
                     ) -> dict[str, Any]:
    """A ``DpEvent`` as plain JSON data: its ``to_named_tuple()`` form without the module,
    ``{"class_name": "PoissonSampledDpEvent", "sampling_probability": 0.01, "event":
    {"class_name": "GaussianDpEvent", "noise_multiplier": 1.1}}`` (nested events as objects,
    ``ComposedDpEvent.events`` as a list); :func:`dp_event_from_json` reads it back.

    ``written_for``: ``{"accountant": "rdp" | "pld", "neighbouring": ...}``, the
    :func:`to_dp_event` arguments the event was made with, kept beside it under the key
    ``"written_for"`` (a replace-one Gaussian's noise multiplier is written over ``2C`` for
    RDP and over ``C`` for PLD, so the same file read by the other accountant is about 2x
    off in epsilon, and nothing in the event says which: a researcher's walkthrough of stop
    81). ``dpbounds privacy compose --from-dp-event`` reads it."""
    import attr

    event = _as_event(event)
    if written_for is not None:
        if not isinstance(written_for, Mapping):  # "rdp": Python's dict() error (fuzz 17)
            raise ValueError("written_for must be a mapping {'accountant': 'rdp' or 'pld', "
                             f"'neighbouring': ...}}, got {written_for!r}")
        note = {str(k): str(v) for k, v in dict(written_for).items()}
        if set(note) - {"accountant", "neighbouring"}:
            raise ValueError("written_for holds 'accountant' and 'neighbouring' only, got "
                             f"{sorted(note)}")
        # the reader refuses a note without its accountant (review of stop 82): so does this
        check_choice("written_for['accountant']", note.get("accountant"), ("rdp", "pld"))
        if "neighbouring" not in note:  # a PLD replace-one file read under the default
            # add/remove was 2.25x low (mutant hunt 18): the relation is part of the note
            raise ValueError("written_for must name the neighbouring relation the event was "
                             "written under ('neighbouring': 'add_remove' or 'replace_one')")
        note["neighbouring"] = Neighbouring.coerce(note["neighbouring"]).value
        return {**dp_event_to_json(event), WRITTEN_FOR: note}

    def conv(value: Any) -> Any:
        if attr.has(type(value)):
            return dp_event_to_json(value)
        if isinstance(value, (list, tuple)):
            return [conv(v) for v in value]
        return value

    out: dict[str, Any] = {"class_name": type(event).__name__}
    for f in attr.fields(type(event)):
        out[f.name] = conv(getattr(event, f.name))
    return out


def dp_event_note(data: Any, where: str = "event") -> dict[str, str] | None:
    """The ``written_for`` note of an exported event (:func:`dp_event_to_json`), checked:
    ``{"accountant": "rdp" | "pld", "neighbouring": ...}`` (relation in the package's
    spelling), or ``None`` where the data carry none (an older export, a file from
    ``dp_accounting``). Read the event with the accountant and relation it names:
    ``ledger_from_dp_event(dp_event_from_json(data), note["neighbouring"],
    accountant=note["accountant"])``."""
    if not isinstance(data, dict) or WRITTEN_FOR not in data:
        return None
    note = data[WRITTEN_FOR]
    # both named: a note without its relation was accepted under any relation by
    # dp_event_from_json(neighbouring=...): a PLD replace-one file read 2.4x low under
    # add_remove (mutant hunt 19), where the command line refuses it (stop 83)
    if (not isinstance(note, dict) or set(note) != {"accountant", "neighbouring"}
            or note.get("accountant") not in EVENT_ACCOUNTANTS
            or not isinstance(note.get("neighbouring"), str)):
        raise ValueError(f"{where}: written_for must be {{'accountant': 'rdp' or 'pld', "
                         f"'neighbouring': 'add_remove' or 'replace_one'}}, got {note!r}")
    return {"accountant": str(note["accountant"]),
            "neighbouring": Neighbouring.coerce(note["neighbouring"]).value}


def dp_event_from_json(data: Any, where: str = "event", *, accountant: str | None = None,
                       neighbouring: Any = None) -> Any:
    """The ``DpEvent`` of :func:`dp_event_to_json`'s form, or of ``dp_accounting``'s own
    ``to_named_tuple()`` as ``json`` writes it (a positional list,
    :mod:`dpbounds._dp_event_form`); only classes of
    ``dp_accounting.dp_event`` are built (nothing else is imported). ``ValueError`` naming
    the place (``where``) of a malformed entry.

    ``accountant`` / ``neighbouring`` (optional): the accountant and relation the event will
    be read with; where the data carry a ``written_for`` note (:func:`dp_event_note`) that
    names another, ``ValueError`` (a replace-one Gaussian written for PLD and read by the
    RDP accountant is about 2x low in epsilon), as ``privacy compose --from-dp-event``
    refuses it. Without them the note is not checked: read it with :func:`dp_event_note`."""
    if accountant is not None:
        accountant = check_choice("accountant", accountant, EVENT_ACCOUNTANTS)
    ours = None if neighbouring is None else Neighbouring.coerce(neighbouring).value
    if accountant is not None or ours is not None:
        # every note, a nested event's too (review of stop 83: only the top one was read)
        for at, raw in _notes(data, where):
            note = dp_event_note({WRITTEN_FOR: raw}, at) or {}  # never None: the key is there
            if accountant is not None and accountant != note["accountant"]:
                raise ValueError(f"{at} was written for dp_accounting's {note['accountant']} "
                                 f"accountant, not accountant={accountant!r}")
            if ours is not None and note["neighbouring"] != ours:
                raise ValueError(f"{at} was written under {note['neighbouring']}, not "
                                 f"neighbouring={ours!r}")
    return _event_from_json(data, where)


def _notes(data: Any, where: str) -> Iterator[tuple[str, Any]]:
    """``(place, note)`` of every ``written_for`` note in the data, nested ones included."""
    if isinstance(data, dict):
        if WRITTEN_FOR in data:
            yield where, data[WRITTEN_FOR]
        for key, value in data.items():
            if key != WRITTEN_FOR:
                yield from _notes(value, f"{where}.{key}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _notes(value, f"{where}[{i}]")


def _event_from_json(data: Any, where: str) -> Any:
    import attr

    from dpbounds._dp_event_form import (
        check_fields,
        from_named_tuple_form,
        is_named_tuple_form,
    )

    dpa = _dpa()
    if is_named_tuple_form(data):  # dp_accounting's to_named_tuple(), as JSON writes it
        data = from_named_tuple_form(data, {
            k: [f.name for f in attr.fields(v)] for k, v in vars(dpa.dp_event).items()
            if isinstance(v, type) and issubclass(v, dpa.DpEvent) and attr.has(v)}, where)
    if not isinstance(data, dict) or not isinstance(data.get("class_name"), str):
        raise ValueError(f"{where} must be an object with a 'class_name', got {data!r}")
    cls = getattr(dpa.dp_event, data["class_name"], None)
    if not (isinstance(cls, type) and issubclass(cls, dpa.DpEvent)):
        from dpbounds._suggest import did_you_mean

        known = [k for k, v in vars(dpa.dp_event).items()
                 if isinstance(v, type) and issubclass(v, dpa.DpEvent)]
        raise ValueError(f"{where}: class_name {data['class_name']!r} is not a dp_accounting "
                         f"DpEvent{did_you_mean(data['class_name'], known)}")
    names = {f.name for f in attr.fields(cls)}
    # "written_for": dpbounds' note of the accountant and relation an exported event was
    # written for (dp_event_to_json's written_for); not a field of the event
    extra = set(data) - names - {"class_name", "module_name", WRITTEN_FOR}
    if extra:
        raise ValueError(f"{where}: {data['class_name']} has no field(s) {sorted(extra)}; "
                         f"its fields are {sorted(names)}")

    def conv(value: Any, key: str) -> Any:
        if isinstance(value, dict) or is_named_tuple_form(value):
            return _event_from_json(value, f"{where}.{key}")
        if isinstance(value, list) and any(isinstance(v, dict) or is_named_tuple_form(v)
                                           for v in value):
            return [conv(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return value

    missing = [f.name for f in attr.fields(cls)
               if f.default is attr.NOTHING and f.name not in data]
    if missing:  # was Python's "__init__() missing 1 required positional argument"
        raise ValueError(f"{where}: {data['class_name']} needs the field(s) {missing}")
    kwargs = {k: conv(v, k) for k, v in data.items() if k in names}
    check_fields(data, where)  # a count or a noise out of range, in the command line's words
    if "count" in kwargs:  # SelfComposedDpEvent: an int, as written; checked again here so
        # that no change to check_fields can let int() truncate 1.9 runs to 1 (mutant hunt 11)
        kwargs["count"] = check_int(f"{where}.count", kwargs["count"], minimum=1,
                                    maximum=MAX_COUNT)
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise ValueError(f"{where}: {data['class_name']}: {err}") from None
