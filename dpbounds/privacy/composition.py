r"""Heterogeneous composition from short event specifications (``dpbounds privacy compose``).

An event specification is ``KIND:key=value,...``; ``steps`` (default 1) repeats it:

==========  ===========================================================================
gaussian    ``z`` (noise multiplier, or ``sigma`` with ``sens``); with ``q`` a subsampled
            step: Poisson (add/remove) or ``sampling=wor`` (without replacement,
            replace-one)
laplace     ``b`` (scale; L1 ``sens``, default 1); with ``m`` and ``n`` a step on a
            without-replacement subsample of ``m`` of ``n`` records (replace-one, Kuru et
            al.)
tree        ``z`` (node noise multiplier; ``sigma`` with ``sens``) and ``T`` (steps of one
            tree: a record lies in :math:`\lceil\log_2(T+1)\rceil` nodes) or ``K`` (nodes
            per record)
zcdp        ``rho``
pure        ``eps``
==========  ===========================================================================

Every sensitivity is measured under one relation, ``neighbouring``; an event whose analysis
is stated for the other relation (Poisson sampling: add/remove; sampling without
replacement: replace-one) is refused: composing guarantees under different relations would
report neither.

Example
-------
>>> from dpbounds.privacy.composition import compose_events
>>> out = compose_events(["gaussian:z=1.1,q=0.01,steps=1000", "tree:z=2,T=1024"],
...                      delta=1e-5, accountants=("rdp",))
>>> round(out["results"][0]["epsilon"], 3)
8.855
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from dpbounds import _event_spec
from dpbounds._validation import (
    MAX_COUNT,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    did_you_mean,
)
from dpbounds.privacy.accountants import ACCOUNTANTS
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.limits import MAX_EPSILON, privacy_flags
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

__all__ = ["EVENT_KINDS", "compose_events", "parse_event"]

#: Keys each event kind takes (``steps`` everywhere): :mod:`dpbounds._event_spec`.
EVENT_KINDS = _event_spec.EVENT_KINDS


#: the largest time budget (a year: beyond ~1e10 s the timer overflows)
_MAX_TIME_BUDGET = 3.2e7


_number = _event_spec.read_number


def _count(spec: str, key: str, text: str, minimum: int = 1) -> int:
    value = _number(spec, key, text)
    if value != int(value) or not minimum <= value <= MAX_COUNT:
        raise ValueError(f"event {spec!r}: {key} must be an integer in [{minimum}, "
                         f"{MAX_COUNT:.0e}], got {text!r}")
    return int(value)


def _noise(spec: str, kv: dict[str, str]) -> tuple[float, float]:
    """(sigma, sensitivity) from ``z`` or ``sigma`` (with ``sens``, default 1)."""
    sens = _number(spec, "sens", kv["sens"]) if "sens" in kv else 1.0
    if ("z" in kv) == ("sigma" in kv):
        raise ValueError(f"event {spec!r}: give exactly one of z (noise multiplier) and sigma "
                         "(noise std, with sens)")
    if "z" in kv:
        if not sens > 0:
            raise ValueError(f"event {spec!r}: sens must be > 0 with z (sigma = z * sens), "
                             f"got {kv['sens']!r}")
        return _number(spec, "z", kv["z"]) * sens, sens
    return _number(spec, "sigma", kv["sigma"]), sens


def parse_event(spec: str, neighbouring: Any = Neighbouring.ADD_REMOVE
                ) -> tuple[Mechanism, int]:
    """``(mechanism, steps)`` of one event specification (module notes), sensitivities under
    ``neighbouring``. ``ValueError`` naming the event and the key for anything malformed,
    and for an event whose analysis needs the other relation."""
    nb = Neighbouring.coerce(neighbouring)
    kind, kv = _event_spec.split_event(spec)
    steps = _count(spec, "steps", kv["steps"]) if "steps" in kv else 1

    def need(rel: Neighbouring, why: str) -> None:
        if rel is not nb:
            raise ValueError(f"event {spec!r}: {why} is analysed under {rel.value}, but the "
                             f"composition is under {nb.value}: mixing neighbouring relations "
                             f"is refused (use --neighbouring {rel.value} for every event)")

    try:
        mech: Mechanism
        if kind == "gaussian":
            sigma, sens = _noise(spec, kv)
            if "q" not in kv:
                if "sampling" in kv:
                    raise ValueError(f"event {spec!r}: sampling needs q")
                mech = GaussianMechanism(sigma, sens, nb)
            else:
                sampling = Sampling.coerce({"wor": "without_replacement"}.get(
                    kv.get("sampling", "poisson"), kv.get("sampling", "poisson")))
                need(sampling.natural_neighbouring, f"{sampling.value} sampling")
                mech = SubsampledGaussianMechanism(sigma, _number(spec, "q", kv["q"]), sens,
                                                   sampling, nb)
        elif kind == "laplace":
            if "b" not in kv:
                raise ValueError(f"event {spec!r}: b (Laplace scale) is required")
            b = _number(spec, "b", kv["b"])
            sens = _number(spec, "sens", kv["sens"]) if "sens" in kv else 1.0
            if ("m" in kv) != ("n" in kv):
                raise ValueError(f"event {spec!r}: give both m and n (a subsample of m of n "
                                 "records) or neither")
            if "m" in kv:
                need(Neighbouring.REPLACE_ONE, "sampling without replacement")
                mech = SubsampledLaplaceMechanism(b, sens, _count(spec, "m", kv["m"]),
                                                  _count(spec, "n", kv["n"]))
            else:
                mech = LaplaceMechanism(b, sens, nb)
        elif kind == "tree":
            sigma, sens = _noise(spec, kv)
            if ("T" in kv) == ("K" in kv):
                raise ValueError(f"event {spec!r}: give exactly one of T (steps of the tree) "
                                 "and K (nodes per record)")
            nodes = (_count(spec, "K", kv["K"]) if "K" in kv
                     else _count(spec, "T", kv["T"]).bit_length())
            mech = TreeAggregationMechanism(sigma, sens, nodes, nb)
        elif kind == "zcdp":
            if "rho" not in kv:
                raise ValueError(f"event {spec!r}: rho is required")
            rho = _number(spec, "rho", kv["rho"])
            # eps(rho, delta) > rho: beyond MAX_EPSILON no guarantee is evaluated (limits);
            # rho = 1e308 overflowed the RDP grid into a raw warning and a 300-character
            # reason (fuzz round 7)
            if rho > MAX_EPSILON:
                raise ValueError(f"event {spec!r}: rho must be <= {MAX_EPSILON:g} (epsilon "
                                 f"> rho at any delta; dpbounds evaluates epsilon <= "
                                 f"{MAX_EPSILON:g}), got {rho:g}")
            mech = ZcdpMechanism(rho, nb)
        else:
            if "eps" not in kv:
                raise ValueError(f"event {spec!r}: eps is required")
            eps = _number(spec, "eps", kv["eps"])
            if eps > MAX_EPSILON:  # eps = 1e308 read "((34, 'Numerical result out of range'))"
                raise ValueError(f"event {spec!r}: eps must be <= {MAX_EPSILON:g} (dpbounds "
                                 f"evaluates epsilon <= {MAX_EPSILON:g}), got {eps:g}")
            mech = PureDpMechanism(eps, nb)
    except ValueError as err:
        text = str(err)
        raise ValueError(text if text.startswith("event ") else f"event {spec!r}: {text}") \
            from None
    return mech, steps


def compose_events(
    events: Sequence[str] = (),
    *,
    delta: float,
    neighbouring: Any = Neighbouring.ADD_REMOVE,
    accountants: Sequence[str] = ("rdp", "pld"),
    dp_events: Sequence[Any] = (),
    opacus_histories: Sequence[Any] = (),
    curve: Sequence[float] | None = None,
    dataset_size: int | None = None,
    progress: Callable[[str], None] | None = None,
    tradeoff: Sequence[float] | None = None,
    time_budget: float | None = None,
    risk_target: tuple[float, float] | None = None,
    dp_event_accountant: str | None = None,
) -> dict[str, Any]:
    """Compose event specifications (and ``dp_accounting`` events) and report each accountant.

    Parameters
    ----------
    events:
        Specifications ``KIND:key=value,...`` (module notes), composed in order.
    delta:
        Target delta, in (0, 1).
    neighbouring:
        The one relation of every sensitivity and of the guarantee.
    accountants:
        Accountant names (``'rdp'``, ``'pld'``, ``'zcdp'``, ``'pure'``, ``'basic'``).
    dp_events:
        ``dp_accounting`` events (or their named tuples), composed after ``events``
        (read by :func:`~dpbounds.privacy.events.from_dp_event` under ``neighbouring``).
    dp_event_accountant:
        ``'rdp'`` or ``'pld'``: the ``dp_accounting`` accountant the ``dp_events`` were written
        for. Under ``add_remove`` the two read an event alike; under ``replace_one`` they read
        a Gaussian's noise multiplier over different sensitivities (``2C`` and ``C``:
        :mod:`dpbounds.privacy.events`), so the same file means epsilons about 2x apart.
        ``None`` (the default): an event whose two readings differ is refused, naming both,
        rather than read the way that reports less (it was read as RDP's, without a word:
        ``GaussianDpEvent(1)`` under replace-one gave epsilon 4.7 where dp_accounting's PLD
        accountant gives 10.0 at delta 1e-5). An event only one reading takes is read so.
    opacus_histories:
        Opacus accountant histories (``(noise_multiplier, sample_rate, num_steps)`` lists or
        state dicts; :meth:`~dpbounds.privacy.ledger.PrivacyLedger.from_opacus`), composed
        last; add/remove only.
    curve:
        Epsilons at which to report delta(eps) as well (PLD: a pessimistic and an optimistic
        value).
    dataset_size:
        :math:`n`, if known: ``delta > 1/n`` is flagged (else ``delta > 0.1``;
        :mod:`dpbounds.privacy.limits`).
    progress:
        Called with each accountant's name before it runs.
    tradeoff:
        False-positive rates at which to report the best attack's TPR
        (:meth:`~dpbounds.privacy.ledger.PrivacyLedger.tradeoff`, pessimistic and optimistic,
        both directions) and the GDP mu with its regret
        (:meth:`~dpbounds.privacy.ledger.PrivacyLedger.gdp`).
    time_budget:
        Wall-clock seconds each accountant (and the trade-off) may take, > 0; one that runs
        over is stopped and reported with ``epsilon = None``, ``skipped = True`` and the
        reason (the others still run). ``None``: no limit.
    risk_target:
        ``(tpr, fpr)``: the first event's noise (a ``gaussian`` or ``tree`` event; its given
        ``z`` or ``sigma`` only starts the search) is replaced by the smallest that keeps the
        best attack's pessimistic TPR at ``fpr`` at most ``tpr`` for the whole composition
        (:func:`~dpbounds.privacy.calibrate.calibrate_to_risk`); everything is then reported
        at that noise, with a ``"risk_target"`` entry (``tpr``, ``fpr``, ``event``, ``z``,
        ``sigma``, ``tpr_attained``, ``cpu_s``).

    Returns
    -------
    dict
        ``{"neighbouring", "delta", "events": [...], "results": [...]}`` (each event: its
        ``spec``, ``mechanism`` as ``Mechanism.to_dict()`` and ``steps``); each result has the
        accountant, ``epsilon`` (``None`` with ``reason`` where it cannot account the
        ledger), the PLD bracket and its CPU seconds; with ``curve`` also a ``curve`` entry.
        With ``tradeoff`` a ``"tradeoff"`` entry (its ``fpr``, ``pessimistic``, ``optimistic``,
    ``remove``, ``add``, ``gdp`` and ``cpu_s``; or ``reason``).
    ``"flags"`` lists why the result is no privacy
        (:func:`~dpbounds.privacy.limits.privacy_flags`: ``delta`` against ``n``, an epsilon
        above 100), ``[]`` if none.
    """
    delta = check_probability("delta", delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    nb = Neighbouring.coerce(neighbouring)
    if dataset_size is not None:
        dataset_size = check_int("dataset_size", dataset_size, minimum=1, maximum=MAX_COUNT)
    if isinstance(accountants, str):  # 'rdp' was walked letter by letter ("got 'r'": fuzz 17)
        accountants = [accountants]
    if isinstance(events, str):  # one specification, not its letters (fuzz round 18)
        events = [events]
    events = _listed("events", events)
    dp_events = _listed("dp_events", dp_events, one=_is_one_dp_event)
    opacus_histories = _listed("opacus_histories", opacus_histories)
    curve = _rates("curve", curve, math.inf)
    tradeoff = _rates("tradeoff", tradeoff, 1.0)
    if risk_target is not None:
        risk_target = _event_spec.check_risk_target(risk_target)
    names: list[str] = []
    for name in _listed("accountants", accountants):
        if not isinstance(name, str) or name not in ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {tuple(ACCOUNTANTS)}, got {name!r}"
                             f"{did_you_mean(str(name), ACCOUNTANTS)}")
        if name in names:  # its row twice (the command line refuses it)
            raise ValueError(f"accountants names {name!r} twice")
        names.append(name)
    if not names:  # an empty result, no error
        raise ValueError(f"accountants must name at least one of {tuple(ACCOUNTANTS)}")
    ledger = PrivacyLedger(nb)
    parts: list[dict[str, Any]] = []
    for spec in events:
        mech, steps = parse_event(spec, nb)
        q = getattr(mech, "sampling_rate", None)
        sampling = getattr(getattr(mech, "sampling", None), "value", None)
        if dataset_size is not None and q is not None and sampling == "without_replacement":
            # a batch of q n examples: a whole number >= 1 (fuzz round 10: q n = 0.5 accepted)
            m = q * dataset_size
            if not (m >= 1 - 1e-9 and abs(m - round(m)) <= 1e-9 * max(1.0, m)):
                raise ValueError(f"event {spec!r}: without replacement the batch q n = {q:g} x "
                                 f"{dataset_size} = {m:g} examples must be a whole number >= 1 "
                                 f"(dataset_size {dataset_size})")
        own_n = getattr(mech, "dataset_size", None)
        if dataset_size is not None and own_n is not None and int(own_n) != dataset_size:
            # a laplace event's n=1e6 beside dataset_size 10 read eps 8.6e-5 for 6.2 (fuzz 17)
            raise ValueError(f"event {spec!r}: its data set size n = {int(own_n)} contradicts "
                             f"dataset_size {dataset_size} (--dataset-size); give one")
        ledger.record(mech, steps)
        parts.append({"spec": spec, "mechanism": mech.to_dict(), "steps": steps})
    if dp_event_accountant is not None:
        from dpbounds.privacy.events import EVENT_ACCOUNTANTS

        dp_event_accountant = check_choice("dp_event_accountant", dp_event_accountant,
                                           EVENT_ACCOUNTANTS)
    if dp_events:
        for i, ev in enumerate(dp_events):
            mech = _read_dp_event(ev, nb, dp_event_accountant, i)
            ledger.record(mech, 1)
            parts.append({"spec": f"dp_event[{i}] {type(ev).__name__}",
                          "mechanism": mech.to_dict(), "steps": 1})
    for i, history in enumerate(opacus_histories):
        if nb is not Neighbouring.ADD_REMOVE:
            raise ValueError(f"opacus history {i}: Opacus accounts Poisson sampling under "
                             f"add_remove, but the composition is under {nb.value}: mixing "
                             "neighbouring relations is refused")
        for mech, steps in PrivacyLedger.from_opacus(history).entries:
            ledger.record(mech, steps)
            parts.append({"spec": f"opacus[{i}]", "mechanism": mech.to_dict(), "steps": steps})
    if not len(ledger):
        raise ValueError("no event to compose: give --event, --from-dp-event or --from-opacus")
    if time_budget is not None:
        time_budget = check_positive("time_budget", time_budget)
        if time_budget > _MAX_TIME_BUDGET:  # the timer's own limit ("timestamp too large")
            raise ValueError(f"time_budget must lie in (0, {_MAX_TIME_BUDGET:.0e}] seconds, got "
                             f"{time_budget!r}")
    risk = None
    if risk_target is not None:
        ledger, risk = _calibrate_first(ledger, parts, events, risk_target)
    fpr = None
    if tradeoff is not None:
        fpr = list(tradeoff)
        if not fpr or any(not 0.0 <= a <= 1.0 for a in fpr):
            raise ValueError(f"tradeoff must hold false-positive rates in [0, 1], got "
                             f"{tradeoff!r}")
    results: list[dict[str, Any]] = []
    for name in names:
        if progress is not None:
            progress(name)
        row = within_budget(functools.partial(_account, ledger, name, delta, curve),
                            time_budget, {"accountant": name, "epsilon": None},
                            f"accountant {name}")
        results.append(row)
    eps = [r["epsilon"] for r in results if r["epsilon"] is not None]
    flags = privacy_flags(min(eps) if eps else None, delta, dataset_size)
    out: dict[str, Any] = {"neighbouring": nb.value, "delta": delta,
                           "dataset_size": dataset_size, "events": parts,
                           "curve_epsilons": list(curve or []),
                           "results": results, "flags": flags}
    if risk is not None:
        out["risk_target"] = risk
    if fpr is not None:
        if progress is not None:
            progress("tradeoff")
        out["tradeoff"] = within_budget(lambda: _tradeoff(ledger, fpr), time_budget,
                                        {"fpr": fpr}, "the trade-off curve")
    return out


def _is_one_dp_event(value: Any) -> bool:
    """Whether ``value`` is one ``dp_accounting`` event (an object of its classes, or its
    named tuple), not a list of them."""
    from dpbounds._dp_event_form import is_named_tuple_form

    # dp_accounting's to_named_tuple() leads with these two fields; a namedtuple of one's
    # own holding events is a list of them (the review of stop 84)
    return (tuple(getattr(value, "_fields", ()))[:2] == ("module_name", "class_name")
            or is_named_tuple_form(value)
            or (type(value).__module__ or "").startswith("dp_accounting"))


def _listed(name: str, value: Any, one: Callable[[Any], bool] | None = None) -> list[Any]:
    """``value`` as a list: one item (where ``one`` says so) becomes a list of it, ``None`` an
    empty one; a mapping or anything not iterable is refused naming ``name`` (a single
    DpEvent raised "'GaussianDpEvent' object is not iterable": fuzz round 18)."""
    if value is None:  # none given (dp_events=None meant none before: the review of stop 84)
        return []
    if one is not None and one(value):
        return [value]
    if isinstance(value, str | bytes | dict) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a list, got {value!r:.100}")
    return list(value)


def _rates(name: str, values: Any, top: float) -> list[float] | None:
    """``values`` as a list of finite floats in ``[0, top]`` (``None`` stays): a number, a NaN or
    a negative value raised TypeError or erased every accountant's epsilon (fuzz 17)."""
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a list of numbers, got {values!r}")
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError, OverflowError):  # 10**400: OverflowError
            f = math.nan
        if isinstance(v, bool | str | bytes) or not (0.0 <= f <= top and math.isfinite(f)):
            bound = "0 or more" if top == math.inf else f"in [0, {top:g}]"
            raise ValueError(f"{name} must hold finite numbers {bound}, got {v!r}")
        out.append(f)
    return out


def _calibrate_first(ledger: PrivacyLedger, parts: list[dict[str, Any]], events: Sequence[str],
                     risk_target: tuple[float, float]) -> tuple[PrivacyLedger, dict[str, Any]]:
    """The ledger with its first event's noise calibrated to ``risk_target`` (``parts[0]``
    updated) and the ``"risk_target"`` entry of :func:`compose_events`."""
    from dpbounds.privacy.calibrate import calibrate_to_risk
    from dpbounds.privacy.mechanisms import mechanism_from_dict

    tpr, fpr = (float(v) for v in risk_target)
    first = parts[0]["mechanism"] if events else {}
    if "sigma" not in first or not first.get("sensitivity", 0) > 0:
        raise ValueError("risk_target calibrates the noise of the first event, which must be a "
                         "gaussian or tree event with sens > 0 (given first with --event)")
    # the first event's own runs: the ledger merges consecutive equal mechanisms, so its first
    # entry can hold the next events' runs too, which were re-noised with it (fuzz 17: two
    # identical events, both calibrated, read eps 4.6 where the composition spends 18.5)
    sens, steps = first["sensitivity"], int(parts[0]["steps"])
    (head, merged), rest = ledger.entries[0], list(ledger.entries[1:])
    if merged > steps:
        rest.insert(0, (head, merged - steps))

    def ledger_for(z: float) -> PrivacyLedger:
        out = PrivacyLedger(ledger.neighbouring)
        out.record(mechanism_from_dict({**first, "sigma": z * sens}), steps)
        for mech, count in rest:
            out.record(mech, count)
        return out

    start = time.process_time()
    if rest:  # the other events alone may already exceed the target: no noise helps then
        others = PrivacyLedger(ledger.neighbouring)
        for mech, count in rest:
            others.record(mech, count)
        floor = float(others.tradeoff([fpr])["pessimistic"][0])
        if floor > tpr:
            raise ValueError(f"risk_target: the events after the first alone allow tpr "
                             f"{floor:.3g} at fpr {fpr:g}, above the target {tpr:g}: no noise "
                             "on the first event meets it")
    z = calibrate_to_risk(ledger_for, tpr, fpr, initial=first["sigma"] / sens)
    calibrated = ledger_for(z)
    attained = float(calibrated.tradeoff([fpr])["pessimistic"][0])
    parts[0]["mechanism"] = calibrated.entries[0][0].to_dict()
    return calibrated, {"tpr": tpr, "fpr": fpr, "event": parts[0]["spec"], "z": z,
                        "sigma": z * sens, "tpr_attained": attained,
                        "cpu_s": time.process_time() - start}


def _tradeoff(ledger: PrivacyLedger, fpr: list[float]) -> dict[str, Any]:
    start = time.process_time()
    row: dict[str, Any] = {"fpr": fpr}
    try:
        curve = ledger.tradeoff(fpr)
        row.update(pessimistic=curve["pessimistic"].tolist(),
                   optimistic=curve["optimistic"].tolist(),
                   remove={k: v.tolist() for k, v in curve["remove"].items()},
                   add={k: v.tolist() for k, v in curve["add"].items()},
                   gdp=ledger.gdp())
    except ValueError as err:  # UnsupportedMechanismError is one
        row["reason"] = " ".join(str(err).split())
    row["cpu_s"] = time.process_time() - start
    return row


def within_budget(work: Callable[[], dict[str, Any]], budget: float | None,
                  skipped: dict[str, Any], what: str) -> dict[str, Any]:
    """``work()``, or, when it runs past ``budget`` wall seconds, ``skipped`` with
    ``skipped=True`` and the reason. The work runs in a forked child that is terminated at
    the budget (an accountant cannot be interrupted in-process); without ``fork`` (not
    POSIX) or without a budget it runs here."""
    import multiprocessing as mp

    if budget is None or "fork" not in mp.get_all_start_methods():
        return work()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            send.send(work())
        except BaseException as err:  # noqa: BLE001 - reported to the parent, never lost
            send.send(err)

    proc = ctx.Process(target=child, daemon=True)
    start = time.perf_counter()
    proc.start()
    send.close()
    got = recv.poll(budget)
    if got:
        value = recv.recv()
        proc.join()
        if isinstance(value, BaseException):
            raise value
        return value
    proc.terminate()
    proc.join()
    out = dict(skipped)
    out.update(skipped=True, cpu_s=time.perf_counter() - start,
               reason=f"skipped: {what} ran past the time budget of {budget:g} s (stopped; "
                      "the other results stand; raise --time-budget or leave it out)")
    return out


def _account(ledger: PrivacyLedger, name: str, delta: float,
             curve: Sequence[float] | None) -> dict[str, Any]:
    """One accountant's row: its epsilon (bracket for PLD), the curve, its CPU time."""
    start = time.process_time()
    row: dict[str, Any] = {"accountant": name, "epsilon": None}
    try:
        acc = ledger.accountant(name)
        row["epsilon"] = float(acc.get_epsilon(None if name == "pure" else delta))
        if name == "pld":
            lo, hi = acc.epsilon_interval(delta)  # type: ignore[attr-defined]
            row["optimistic"], row["pessimistic"] = float(lo), float(hi)
        if curve is not None:
            row["curve"] = [float(acc.get_delta(float(e))) for e in curve]
            if name == "pld":
                twin = ledger.accountant("pld", pessimistic=False)
                row["curve_optimistic"] = [min(float(twin.get_delta(float(e))), hi)
                                           for e, hi in zip(curve, row["curve"])]
    except ValueError as err:  # UnsupportedMechanismError is one
        row["epsilon"] = None
        row["reason"] = " ".join(str(err).split())
    row["cpu_s"] = time.process_time() - start
    return row


def _read_dp_event(event: Any, nb: Neighbouring, accountant: str | None, i: int) -> Any:
    """``dp_events[i]`` as a dpbounds mechanism (:func:`compose_events`'s
    ``dp_event_accountant``)."""
    from dpbounds.privacy.events import from_dp_event

    if accountant is not None or nb is not Neighbouring.REPLACE_ONE:
        try:
            return from_dp_event(event, nb, accountant=accountant or "rdp")
        except ValueError as err:  # which event of the list
            raise ValueError(f"dp_event[{i}]: {err}") from None
    read: dict[str, Any] = {}
    errors: dict[str, ValueError] = {}
    for name in ("rdp", "pld"):
        try:
            read[name] = from_dp_event(event, nb, accountant=name)
        except ValueError as err:
            errors[name] = err
    if not read:
        raise ValueError(f"dp_event[{i}]: {errors['rdp']}")
    if len(read) == 2 and read["rdp"] != read["pld"]:
        raise ValueError(
            f"dp_event[{i}]: under replace_one dp_accounting's two accountants read this "
            "event's Gaussian noise multiplier differently (its RDP accountant over the "
            "replace-one sensitivity 2C, its PLD accountant over C, doubling it itself), so "
            "it means two mechanisms about 2x apart in epsilon; say which accountant it was "
            "written for: --dp-event-accountant rdp or pld (API: dp_event_accountant=)")
    return next(iter(read.values()))
