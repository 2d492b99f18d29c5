"""``dpbounds privacy compose``: heterogeneous composition from the shell.

Example::

    dpbounds privacy compose --event gaussian:z=1.1,q=0.01,steps=1000 \\
        --event laplace:b=0.5,steps=10 --event tree:z=2,T=1024 --delta 1e-5 \\
        --accountant rdp,pld --curve 1,2,4,8

The module imports nothing heavy until the command runs (``dpbounds privacy --help`` stays
fast).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from dpbounds._dp_event_form import check_fields
from dpbounds.cli import _catalog, add_quantity, real, strict_json

__all__ = ["draw_curves", "plot_curves", "plot_fpr", "register_compose", "run_compose"]

_EVENT_HELP = (
    "KIND:key=value,... with KIND gaussian (z or sigma[,sens][,q[,sampling=wor]]), laplace "
    "(b[,sens][,m,n]), tree (z or sigma[,sens], T or K), zcdp (rho) or pure (eps); steps=N "
    "repeats it (default 1). Repeat --event to compose; sensitivities are under --neighbouring")


def register_compose(privacy_parser: argparse.ArgumentParser) -> None:
    """Add ``compose`` under the ``privacy`` command (its table stays the default action)."""
    sub = privacy_parser.add_subparsers(
        dest="privacy_action", metavar="[compose]", required=False,
        help="optional: 'compose' composes different mechanisms (see 'dpbounds privacy compose "
             "--help'); without it, the noise table of the options below")
    # a stray word is usually the value of an option privacy does not have (`privacy --mu 1`
    # read "argument [compose]: invalid choice: '1'"): say that (DpParser._check_value)
    sub.unknown_hint = lambda value: (  # type: ignore[attr-defined]
        f"unexpected argument {value!r}: the only sub-command is 'compose', and every other "
        "word must be the value of an option; is an option before it one that privacy does "
        "not take?")
    p = sub.add_parser(
        "compose",
        help="compose different mechanisms (and dp_accounting events) under each accountant",
        description=(
            "Compose a sequence of mechanisms given as --event specifications and/or "
            "dp_accounting events read from --from-dp-event files, and print the epsilon at "
            "--delta under each accountant (PLD with its optimistic/pessimistic bracket), the "
            "reason where an accountant cannot account the composition, and its CPU time."
        ),
        epilog=(
            "--from-dp-event FILE: JSON (or YAML) holding one event or a list of events, each "
            "an object with 'class_name' and the event's fields, nested events as objects, e.g.\n"
            '  {"class_name": "SelfComposedDpEvent", "count": 1000, "event": {"class_name": '
            '"PoissonSampledDpEvent",\n   "sampling_probability": 0.01, "event": '
            '{"class_name": "GaussianDpEvent", "noise_multiplier": 1.1}}}\n'
            "(dpbounds.privacy.events.dp_event_to_json writes it)."
        ),
    )
    p.add_argument("--event", action="append", default=[], metavar="SPEC", help=_EVENT_HELP)
    p.add_argument("--from-dp-event", action="append", default=[], metavar="FILE",
                   dest="from_dp_event",
                   help="a JSON/YAML file of dp_accounting events (see below); repeatable")
    p.add_argument("--dp-event-accountant", choices=("rdp", "pld"), default=None,
                   dest="dp_event_accountant",
                   help="the dp_accounting accountant the --from-dp-event files were written "
                        "for, or --to-dp-event writes for (writing: default rdp; the file "
                        "records it under 'written_for', and reading such a file takes it "
                        "from there): under replace_one its RDP and PLD accountants read a "
                        "Gaussian's noise multiplier over 2C and over C (about 2x apart in "
                        "epsilon), so a replace_one file without the note and without this "
                        "flag is refused")
    p.add_argument("--to-dp-event", default=None, metavar="FILE.json", dest="to_dp_event",
                   help="also write the whole composition as one dp_accounting DpEvent (JSON, "
                        "the form --from-dp-event reads; dp_event_from_json in Python) for "
                        "--neighbouring's relation")
    p.add_argument("--from-opacus", action="append", default=[], metavar="FILE",
                   dest="from_opacus",
                   help="a JSON file of an Opacus accountant's history: [[noise_multiplier, "
                        "sample_rate, num_steps], ...] or its state_dict {\"history\": ...}; "
                        "repeatable")
    add_quantity(p, "delta", default=1e-5, help="target delta")
    add_quantity(p, "neighbouring", default="add_remove", choices=("add_remove", "replace_one"),
                 help="the one relation of every sensitivity and of the guarantee")
    add_quantity(p, "dataset_size", help="n, if known: delta > 1/n is flagged as no privacy "
                 "(without it, delta > 0.1)")
    p.add_argument("--accountant", default="rdp,pld", metavar="NAMES",
                   help="comma-separated accountants: rdp, pld, zcdp, pure, basic "
                        "(default rdp,pld)")
    p.add_argument("--curve", default=None, metavar="EPS,...|tradeoff[:FPR,...]",
                   help="also print delta(eps) at these epsilons (PLD: pessimistic and "
                        "optimistic), or 'tradeoff': the best attack's TPR at each FPR "
                        "(default FPRs " + ",".join(f"{a:g}" for a in DEFAULT_FPR) + ") from "
                        "the PLD pair, both directions, bracketed, with the GDP mu and its "
                        "regret")
    p.add_argument("--time-budget", type=real, default=None, metavar="SECONDS",
                   help="wall-clock seconds each accountant (and the trade-off) may take; "
                        "one that runs over is stopped and reported with the reason")
    p.add_argument("--risk-target", default=None, metavar="TPR@FPR", dest="risk_target",
                   help="calibrate the first event's noise (a gaussian or tree event; its z "
                        "only starts the search) to the smallest that keeps the best attack's "
                        "TPR at FPR at most TPR (pessimistic PLD, whole composition), then "
                        "report at that noise")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="with --curve: also write the curve to FILE (png, pdf, svg, ...): "
                        "the trade-off (TPR against FPR, bracketed, with the GDP curve; drawn "
                        "on a dense FPR grid) or delta(eps) per accountant")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_compose)


def _plain(text: str) -> float:
    """``float`` of ASCII digits without ``_`` (``float('1_0')`` is 10 and ``float('０.１')``
    0.1: review of stop 79), ``-0`` read as 0; ``ValueError`` otherwise."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    return float(text) + 0.0


def _risk_target(text: str | None) -> tuple[float, float] | None:
    """``TPR@FPR`` -> ``(tpr, fpr)`` (else ``None``)."""
    if text is None:
        return None
    from dpbounds._event_spec import check_risk_target

    tpr, at, fpr = text.partition("@")
    try:
        if not at:
            raise ValueError
        pair = _plain(tpr), _plain(fpr)
    except ValueError:
        raise ValueError(f"--risk-target must read TPR@FPR, e.g. 0.1@0.01, got {text!r}") \
            from None
    # the ranges too, before the accountants' imports (1.3-2.0 CPU-s: fuzz round 18)
    return check_risk_target(pair, "--risk-target")


#: FPRs of ``--curve tradeoff``.
DEFAULT_FPR = (1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.5)
#: Points per decade of the FPR grid a ``--plot`` of the trade-off is drawn on (1e-5 to 1).
PLOT_FPR_PER_DECADE = 24


def plot_fpr(table: list[float]) -> list[float]:
    """The FPR grid of a trade-off plot: the table's rates and a log-spaced grid from 1e-5
    to 1 (plus 0), sorted and deduplicated."""
    import numpy as np

    dense = np.logspace(-5.0, 0.0, 5 * PLOT_FPR_PER_DECADE + 1)
    return sorted({0.0, *map(float, dense), *table})


def _tradeoff(text: str | None) -> list[float] | None:
    """``tradeoff`` or ``tradeoff:FPR,...`` -> the FPRs (else ``None``)."""
    if text is None or not text.strip().lower().startswith("tradeoff"):
        return None
    rest = text.strip()[len("tradeoff"):]
    if not rest:
        return list(DEFAULT_FPR)
    try:
        values = [_plain(t) for t in rest.lstrip(":").split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--curve tradeoff:FPR,... must list numbers, got {text!r}") from None
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"--curve tradeoff:FPR,... must hold rates in [0, 1], got {text!r}")
    return values


def _curve(text: str | None) -> list[float] | None:
    if text is None or _tradeoff(text) is not None:
        return None
    if any(not t.strip() for t in text.split(",")):  # `1,,2` read as 1,2 (fuzz round 10)
        raise ValueError(f"--curve has an empty value, got {text!r}")
    try:
        values = [_plain(t) for t in text.split(",")]
    except ValueError:
        from dpbounds._validation import did_you_mean

        hint = did_you_mean(text.partition(":")[0], ("tradeoff",))
        raise ValueError(f"--curve must be comma-separated numbers or tradeoff[:FPR,...], got "
                         f"{text!r}{hint}") from None
    if not values or any(not (v >= 0 and v < float("inf")) for v in values):
        raise ValueError(f"--curve must hold finite epsilons >= 0, got {text!r}")
    return values


#: the events' real-valued fields (dp_accounting's names): a bool or a string there was read as
#: a number ("noise_multiplier": true as 1.0); checked before the 1 CPU-s of imports
_NUMBER_FIELDS = ("noise_multiplier", "sampling_probability", "noise_parameter", "rho", "xi",
                  "epsilon", "delta")


def _check_numbers(node: Any, where: str, depth: int = 0, seen: set[int] | None = None
                   ) -> None:
    """A ``ValueError`` naming the first real-valued field of an event that is not a number.
    Each node is visited once (a self-referential YAML event, ``&a [*a, *a]``, would be
    walked 2^200 times)."""
    seen = set() if seen is None else seen
    if depth > 200 or id(node) in seen:
        return  # deeper nesting (and a cycle) is refused where the events are read
    seen.add(id(node))
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _NUMBER_FIELDS and (isinstance(value, bool)
                                          or not isinstance(value, (int, float))):
                kind = node.get("class_name", "event")
                raise ValueError(f"{where}: {key} of {kind} must be a number, got {value!r}")
            if key in _NUMBER_FIELDS and isinstance(value, float) and not (
                    value == value and abs(value) != float("inf")):
                # NaN or Infinity (JSON's extensions): the library refuses it after 1 CPU-s
                kind = node.get("class_name", "event")
                raise ValueError(f"{where}: {key} of {kind} must be finite, got {value!r}")
            _check_numbers(value, where, depth + 1, seen)
    elif isinstance(node, list):
        for item in node:
            _check_numbers(item, where, depth + 1, seen)


def _check_shape(data: Any, where: str, fields: dict[str, list[str]], depth: int = 0,
                 seen: set[int] | None = None) -> None:
    """:func:`dpbounds.privacy.events.dp_event_from_json`'s refusals of a malformed entry, an
    unknown class, a field the class does not have and a value out of range, in its words,
    from the catalog's list of dp_accounting's events (1.0-1.2 CPU-s of imports before).
    Each node is visited once (a self-referential YAML event is walked once, then refused
    where the events are read)."""
    seen = set() if seen is None else seen
    if depth > 200 or id(data) in seen:
        return  # refused where the events are read (nested too deeply, or a cycle)
    seen.add(id(data))
    if not isinstance(data, dict) or not isinstance(data.get("class_name"), str):
        raise ValueError(f"{where} must be an object with a 'class_name', got {data!r}")
    names = fields.get(data["class_name"])
    if names is None:
        from dpbounds._suggest import did_you_mean

        raise ValueError(f"{where}: class_name {data['class_name']!r} is not a dp_accounting "
                         f"DpEvent{did_you_mean(data['class_name'], fields)}")
    extra = set(data) - set(names) - {"class_name", "module_name"}
    if extra:
        raise ValueError(f"{where}: {data['class_name']} has no field(s) {sorted(extra)}; "
                         f"its fields are {sorted(names)}")
    missing = [k for k in _catalog.constant("dp_event_required").get(data["class_name"], ())
               if k not in data]
    if missing:
        raise ValueError(f"{where}: {data['class_name']} needs the field(s) {missing}")
    for key, value in data.items():
        if isinstance(value, dict):
            _check_shape(value, f"{where}.{key}", fields, depth + 1, seen)
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                if isinstance(v, dict):
                    _check_shape(v, f"{where}.{key}[{i}]", fields, depth + 1, seen)
    check_fields(data, where)  # after the nested events, as the library reads them


def _read_events(path: str) -> list[Any]:
    """The events of one ``--from-dp-event`` file (:func:`_parse_events`, then built)."""
    return _build_events(path, _parse_events(path))


class _DuplicateKey(ValueError):
    """A JSON object that gives one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s ``object_pairs_hook``: an object that gives a key twice is refused (``json``
    keeps the last: ``"noise_multiplier": 1, "noise_multiplier": 0.001`` read as z = 0.001,
    eps 5e5 for 4.7, with no word; fuzz round 18)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _strict_yaml_loader(yaml: Any) -> Any:
    """A safe loader that reads numbers and booleans as JSON writes them (YAML 1.2's core
    schema) and refuses aliases. PyYAML's YAML 1.1 read ``1:00`` as 60, ``1_0`` as 10 and
    ``0x10`` as 16 (a noise multiplier of 60 for 1: epsilon 0.054 for 4.73), and a 640-byte
    file of nested aliases grew past 770 MB (fuzz round 10)."""
    import re

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, "an alias (*name): a DpEvent file is read without them", mark)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # a key given twice was read last-wins: z = 0.001 after z = 1 (eps 5e5 for 4.7),
            # or z = 1 after 0.001, silently (fuzz round 18)
            # (merge keys first, as the base class does; only text keys are compared: an
            # unhashable key is left to the base class's own error; the review of stop 84)
            if isinstance(node, yaml.nodes.MappingNode):
                self.flatten_mapping(node)
            seen: set[str] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.nodes.ScalarNode):
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    continue
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} appears twice in one mapping",
                        key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers
                if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                               "tag:yaml.org,2002:bool")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"),
                                 list("tf"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^-?(?:0|[1-9][0-9]*)$"),
                                 list("-0123456789"))
    number = re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$")
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", number, list("-0123456789"))

    def strict(kind: type) -> Any:
        # an explicit tag (`!!float 1:00`) went to YAML 1.1's own constructors: 60 again
        def construct(loader: Any, node: Any) -> Any:
            text = loader.construct_scalar(node)
            if not number.match(str(text)) or (kind is int and not str(text).lstrip(
                    "-").isdigit()):
                raise yaml.constructor.ConstructorError(
                    None, None, f"{text!r} is not a number as JSON writes it", node.start_mark)
            return kind(text)
        return construct

    Loader.add_constructor("tag:yaml.org,2002:int", strict(int))
    Loader.add_constructor("tag:yaml.org,2002:float", strict(float))
    return Loader


def _parse_events(path: str, notes: list[tuple[str, Any]] | None = None) -> list[Any]:
    """The file's entries, read and checked in the library's words before its imports; each
    entry's ``written_for`` note (``--to-dp-event``'s) is taken off it, into ``notes`` as
    ``(where, note)``."""
    if not path.strip():  # '' read the working directory: "Is a directory" (fuzz round 15)
        raise ValueError(f"--from-dp-event needs a file name, got {path!r}")
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as err:
        raise ValueError(f"--from-dp-event {path}: cannot read it ({err.strerror})") from None
    except UnicodeDecodeError:
        raise ValueError(f"--from-dp-event {path}: not UTF-8 text") from None
    if file.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise ValueError(f"--from-dp-event {path}: reading YAML needs PyYAML; write the "
                             "events as JSON") from None
        try:
            data = yaml.load(text, Loader=_strict_yaml_loader(yaml))  # noqa: S506 -- safe
        except RecursionError:
            raise ValueError(f"--from-dp-event {path}: nested too deeply to read") from None
        except yaml.YAMLError as err:
            raise ValueError(f"--from-dp-event {path}: not YAML ({' '.join(str(err).split())})"
                             ) from None
    else:
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise ValueError(f"--from-dp-event {path}: not JSON ({err})") from None
        except _DuplicateKey as err:
            raise ValueError(f"--from-dp-event {path}: {err}") from None
        except RecursionError:
            raise ValueError(f"--from-dp-event {path}: nested too deeply to read") from None
    from dpbounds._dp_event_form import from_named_tuple_form, is_named_tuple_form

    # one event, or a list of them; dp_accounting's to_named_tuple() as json.dump writes it is
    # a positional list. The early checks read it in the catalog's field order; the library
    # reads the original in the installed dp_accounting's own (attr.fields) order, so a
    # version that reordered two fields of one length cannot have them swapped here
    raw = data if isinstance(data, list) and not is_named_tuple_form(data) else [data]
    found: list[tuple[str, Any]] = []
    for i, item in enumerate(raw):
        # nested events' notes too (a file wrapped in a ComposedDpEvent was refused with
        # "SelfComposedDpEvent has no field(s) ['written_for']", where the Python reader
        # checks it: mutant hunt 19)
        try:
            raw[i] = _take_notes(item, f"{path}[{i}]", found)
        except RecursionError:  # 600 levels: "internal error", exit 4 (the CI replica)
            raise ValueError(f"--from-dp-event {path}: nested too deeply to read") from None
    if notes is not None:
        notes.extend(found)
    order = _catalog.constant("dp_event_fields")
    items = [from_named_tuple_form(item, order, f"{path}[{i}]") for i, item in enumerate(raw)]
    for i, item in enumerate(items):
        _check_numbers(item, f"--from-dp-event {path}[{i}]")
    if "dp_accounting" not in sys.modules:  # else it answers as fast, in the same words
        for i, item in enumerate(items):
            _check_shape(item, f"{path}[{i}]", order)
    return list(raw)


def _take_notes(item: Any, where: str, notes: list[tuple[str, Any]]) -> Any:
    """``item`` without its ``written_for`` notes, at any depth; each note goes to ``notes``
    as ``(place, note)``."""
    if isinstance(item, dict):
        if "written_for" in item:
            notes.append((where, item["written_for"]))
        return {k: _take_notes(v, f"{where}.{k}", notes) for k, v in item.items()
                if k != "written_for"}
    if isinstance(item, list):
        return [_take_notes(v, f"{where}[{j}]", notes) for j, v in enumerate(item)]
    return item


def _read_as_written(args: argparse.Namespace, found: list[tuple[str, Any]],
                     entries: int) -> None:
    """Each file's ``written_for`` note (``--to-dp-event`` writes one): the accountant it was
    written for becomes ``--dp-event-accountant`` where none is given, and a file written for
    another accountant or relation than this command's is refused (read by the other
    accountant, a replace-one Gaussian's epsilon is about 2x off: walkthrough of stop 81)."""
    notes: list[tuple[str, dict[str, Any]]] = []
    for where, note in found:
        if (not isinstance(note, dict) or set(note) != {"accountant", "neighbouring"}
                or note.get("accountant") not in ("rdp", "pld")
                or not isinstance(note.get("neighbouring"), str)):
            # a note without its relation was read under --neighbouring's default: a PLD
            # replace-one file 2.25x low (mutant hunt 18); dp_event_to_json writes both
            raise ValueError(f"--from-dp-event {where}: written_for must be {{'accountant': "
                             f"'rdp' or 'pld', 'neighbouring': 'add_remove' or "
                             f"'replace_one'}}, got {note!r}")
        notes.append((where, note))
    from dpbounds.privacy.mechanisms import Neighbouring

    for where, note in notes:
        try:  # any spelling the package reads ("ADD_REMOVE" was refused as another relation)
            theirs = Neighbouring.coerce(note["neighbouring"]).value
        except ValueError:
            raise ValueError(f"--from-dp-event {where}: written_for's neighbouring must be "
                             f"'add_remove' or 'replace_one', got "
                             f"{note['neighbouring']!r}") from None
        if theirs != Neighbouring.coerce(args.neighbouring).value:
            raise ValueError(f"--from-dp-event {where} was written under {theirs}; this "
                             f"composition is under {args.neighbouring} (--neighbouring)")
    written = sorted({note["accountant"] for _, note in notes})
    if args.dp_event_accountant is None:
        if len(written) > 1:
            raise ValueError("--from-dp-event files were written for different accountants "
                             f"({', '.join(written)}); compose them in separate commands")
        if written and len(notes) < entries:
            # a note speaks for its own entry only: an entry without one (an older export, a
            # file from dp_accounting) read under another's note was 2x low (review of stop 82)
            raise ValueError("--from-dp-event: some entries say whom they were written for "
                             "and some do not; give --dp-event-accountant for all of them, "
                             "or compose them in separate commands")
        if written:
            args.dp_event_accountant = written[0]
    elif written and written != [args.dp_event_accountant]:
        where = next(w for w, n in notes if n["accountant"] != args.dp_event_accountant)
        raise ValueError(f"--from-dp-event {where} was written for dp_accounting's "
                         f"{next(n['accountant'] for w, n in notes if w == where)} "
                         f"accountant, not --dp-event-accountant {args.dp_event_accountant}")


def _build_events(path: str, raw: list[Any]) -> list[Any]:
    """The ``DpEvent`` objects of a file's entries (imports dp_accounting)."""
    from dpbounds.privacy.events import dp_event_from_json

    try:
        return [dp_event_from_json(item, f"{path}[{i}]") for i, item in enumerate(raw)]
    except RecursionError:
        raise ValueError(f"--from-dp-event {path}: the events are nested too deeply to read "
                         "(past Python's recursion limit)") from None


def _refuse_unmapped_first(args: argparse.Namespace, accountants: list[str],
                           parsed: list[tuple[str, list[Any]]]) -> None:
    """:func:`dpbounds.privacy.composition.compose_events`' refusal of a first event that
    dpbounds has no mechanism for (``NonPrivateDpEvent``), in its words, before its imports
    (1.1 CPU-s before; fuzz round 9). Only where nothing it checks first can differ: no
    ``--event`` spec, known accountants, and the file's first entry itself of that class
    (its nested events and the later entries are the library's to read, in order)."""
    if (args.event or not parsed or not parsed[0][1] or "dp_accounting" in sys.modules
            or not set(accountants) <= {"rdp", "pld", "zcdp", "pure", "basic"}):
        return
    from dpbounds._dp_event_form import from_named_tuple_form

    path, raw = parsed[0]
    first = from_named_tuple_form(raw[0], _catalog.constant("dp_event_fields"), f"{path}[0]")
    cls = first.get("class_name") if isinstance(first, dict) else None
    if cls in _catalog.constant("dp_event_unmapped"):
        raise ValueError(f"dp_event[0]: {cls}: dpbounds has no mechanism for this "
                         "dp_accounting event")


def _event_json(args: argparse.Namespace, out: dict[str, Any]) -> str:
    """The composition's DpEvent as JSON text (``ValueError`` naming the mechanism that has
    no dp_accounting event), from the mechanisms the table composed (after --risk-target's
    calibration)."""
    from dpbounds.privacy.events import dp_event_to_json, to_dp_event
    from dpbounds.privacy.ledger import PrivacyLedger
    from dpbounds.privacy.mechanisms import mechanism_from_dict

    ledger = PrivacyLedger(out["neighbouring"],
                           [(mechanism_from_dict(e["mechanism"]), e["steps"])
                            for e in out["events"]])
    import warnings

    try:
        with warnings.catch_warnings():  # the line below shows dp_accounting's own reading
            warnings.simplefilter("ignore", UserWarning)
            event = to_dp_event(ledger, accountant=args.dp_event_accountant or "rdp")
    except ValueError as err:
        raise ValueError(f"--to-dp-event: {err}") from None
    written_for = {"accountant": args.dp_event_accountant or "rdp",
                   "neighbouring": str(out["neighbouring"])}
    return json.dumps(dp_event_to_json(event, written_for), indent=2) + "\n"


def _their_reading(args: argparse.Namespace, out: dict[str, Any], text: str) -> str:
    """", which dp_accounting's ACCOUNTANT reads at eps = E (dpbounds: e)": its readings of
    some events are looser than dpbounds' (sampling without replacement: 1.6 where dpbounds
    reads 1.0, walkthrough of stop 79), which a user comparing the two should see at once;
    "" where it cannot read the event."""
    from dpbounds.privacy.events import dp_accounting_relation, dp_event_from_json

    which = args.dp_event_accountant or "rdp"
    ours = next((r["epsilon"] for r in out["results"] if r["accountant"] == which), None)
    try:
        event = dp_event_from_json(json.loads(text))
        rel = dp_accounting_relation(out["neighbouring"])
        if which == "rdp":
            from dp_accounting.rdp import rdp_privacy_accountant as accountants

            acc: Any = accountants.RdpAccountant(neighboring_relation=rel)
        else:
            from dp_accounting.pld import pld_privacy_accountant as accountants

            acc = accountants.PLDAccountant(rel)
        theirs = float(acc.compose(event).get_epsilon(out["delta"]))
    except Exception:  # noqa: BLE001 - an event it cannot read: nothing to say
        return ""
    mine = f" (dpbounds' {which}: {ours:.6g})" if ours is not None else ""
    return (f", which dp_accounting's {which} accountant reads at eps = {theirs:.6g} at "
            f"delta {out['delta']:g}{mine}")


def _read_json(path: str, flag: str) -> Any:
    if not path.strip():
        raise ValueError(f"{flag} needs a file name, got {path!r}")
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ValueError(f"{flag} {path}: cannot read it ({err.strerror})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise ValueError(f"{flag} {path}: not JSON ({err})") from None
    except _DuplicateKey as err:
        raise ValueError(f"{flag} {path}: {err}") from None
    except RecursionError:  # '[' x 2000 was an internal error (fuzz round 13)
        raise ValueError(f"{flag} {path}: nested too deeply to read") from None


def _short(reason: str) -> str:
    """The reason without the mechanism's full repr."""
    reason = re.sub(r"does not support (\w+)\(.*?\): ", r"does not support \1: ", reason)
    return re.sub(r"runs of (\w+)\(.*?\): the ", r"runs of \1: the ", reason)


def _check_before_imports(args: argparse.Namespace, accountants: list[str]) -> None:
    """The refusals of :func:`~dpbounds.privacy.composition.compose_events` that need none of
    the accountants' imports, in its words: an error path paid 0.65-0.8 CPU-s of them (fuzz
    17; issue 36 asks for 0.5): the events' syntax and values' ranges (fuzz 18), the
    accountants' names, delta, the data set size and the time budget."""
    import math

    # neither NumPy nor dpbounds.privacy: an input error imports no heavy module
    # (tests/test_cli_lazy.py)
    from dpbounds._event_spec import check_event_values, split_event
    from dpbounds._suggest import did_you_mean

    for spec in args.event:
        check_event_values(spec, *split_event(spec))
    known = _catalog.constant("accountants")
    for name in accountants:
        if name not in known:
            raise ValueError(f"accountant must be one of {tuple(known)}, got {name!r}"
                             f"{did_you_mean(name, known)}")
    if not 0.0 < float(args.delta) < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {args.delta!r}")
    size = args.dataset_size
    if size is not None and not (float(size) == int(size) and 1 <= int(size) <= 10**15):
        raise ValueError(f"dataset_size must be an integer in [1, {10**15}], got {size!r}")
    if args.time_budget is not None and not math.isfinite(args.time_budget):
        raise ValueError(f"time_budget must be finite, got {args.time_budget!r}")


def run_compose(args: argparse.Namespace) -> int:
    """Compose and print (a progress bar on stderr while the accountants run)."""
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # dp_accounting's informational warnings
    # one spelling as every choice: RDP reads as rdp (it was refused, where --neighbouring
    # Replace_One and --curve Tradeoff were read; fuzz round 10)
    accountants = [a.strip().lower() for a in args.accountant.split(",") if a.strip()]
    if not accountants:  # an empty table is no answer
        raise ValueError(f"--accountant names no accountant (got {args.accountant!r}); give "
                         "some of rdp, pld, zcdp, pure, basic")
    twice = sorted({a for a in accountants if accountants.count(a) > 1})
    if twice:  # the table printed the same row twice
        raise ValueError(f"--accountant names {', '.join(twice)} more than once")
    _check_before_imports(args, accountants)
    if args.dp_event_accountant is not None and not (args.from_dp_event or args.to_dp_event):
        raise ValueError("--dp-event-accountant reads --from-dp-event files (or says whom "
                         "--to-dp-event writes for); give one, or leave it out")
    if args.to_dp_event is not None:  # before any work (issue 36: paths first)
        from dpbounds.cli._paths import check_file_path

        check_file_path(args.to_dp_event, "--to-dp-event", (".json",))
    curve = _curve(args.curve)
    fpr = _tradeoff(args.curve)
    risk = _risk_target(args.risk_target)
    if args.time_budget is not None and not args.time_budget > 0:
        raise ValueError(f"time_budget must be > 0 seconds, got {args.time_budget!r}")
    plot = getattr(args, "plot", None)
    if plot is not None:
        from dpbounds.cli._paths import check_figure_path

        if curve is None and fpr is None:
            raise ValueError("--plot needs --curve (EPS,... or tradeoff[:FPR,...]): it draws "
                             "that curve")
        check_figure_path(plot)
    table_fpr = fpr
    if plot is not None and fpr is not None:
        fpr = plot_fpr(fpr)  # the plot's dense grid; the table prints its own rows
    notes: list[tuple[str, Any]] = []
    parsed = [(path, _parse_events(path, notes)) for path in args.from_dp_event]
    _read_as_written(args, notes, sum(len(raw) for _, raw in parsed))
    histories = [_read_json(path, "--from-opacus") for path in args.from_opacus]
    from dpbounds.privacy.ledger import PrivacyLedger

    for path, history in zip(args.from_opacus, histories):
        # each file's own error names it (fuzz round 12: "history[0] num_steps ..." with two
        # files given), and an empty history is said to be empty, not "no event given"
        steps = history.get("history") if isinstance(history, dict) else history
        if isinstance(steps, list) and not steps:
            raise ValueError(f"--from-opacus {path}: its history is empty (no training step "
                             "recorded)")
        try:
            PrivacyLedger.from_opacus(history)
        except ValueError as err:
            raise ValueError(f"--from-opacus {path}: {err}") from None
    _refuse_unmapped_first(args, accountants, parsed)
    dp_events = [ev for path, raw in parsed for ev in _build_events(path, raw)]
    from dpbounds._progress import progress_bar  # after the checks of the flags and files
    from dpbounds.privacy.composition import compose_events

    with progress_bar(not getattr(args, "quiet", False), lines=True,
                      total=len(accountants) + (fpr is not None),
                      desc="compose", unit="accountant") as bar:

        def tick(name: str) -> None:
            bar.set_postfix_str(name, refresh=False)
            bar.update()

        out = compose_events(args.event, delta=args.delta, neighbouring=args.neighbouring,
                             accountants=accountants, dp_events=dp_events,
                             opacus_histories=histories, curve=curve,
                             dataset_size=args.dataset_size, progress=tick,
                             tradeoff=fpr, time_budget=args.time_budget,
                             risk_target=risk, dp_event_accountant=args.dp_event_accountant)
    for text in out["flags"]:
        print(f"dpbounds: warning: {text}", file=sys.stderr)
    drawn = out  # the plot's dense grid; the table prints its own rows
    if table_fpr is not None and fpr is not None and table_fpr != fpr \
            and "fpr" in out.get("tradeoff", {}):
        grid = fpr
        out = dict(out, tradeoff=_rows(out["tradeoff"], [grid.index(a) for a in table_fpr]))
    event_text = event_error = None
    if args.to_dp_event is not None:
        try:
            event_text = _event_json(args, out)
        except ValueError as err:  # said after the table: the result is not lost to it
            event_error = str(err)
    # the result first: a late I/O error (disk full, folder removed) must not lose it
    if args.json:
        print(strict_json(out, indent=2), flush=True)
    else:
        _print_text(out, curve)
    if event_error is not None:
        print(f"dpbounds: error: {event_error} (the result above is complete; nothing was "
              f"written to {args.to_dp_event!r})", file=sys.stderr)
        return 2
    if event_text is not None:
        try:
            Path(args.to_dp_event).write_text(event_text)
        except OSError as exc:
            print(f"dpbounds: error: the DpEvent could not be written to "
                  f"{args.to_dp_event!r} ({exc.strerror or exc}); the result above is "
                  "complete", file=sys.stderr)
            return 2
        if not args.json:
            print(f"wrote the composition as one dp_accounting DpEvent ({out['neighbouring']}"
                  f", for its {args.dp_event_accountant or 'rdp'} accountant) to "
                  f"{args.to_dp_event}{_their_reading(args, out, event_text)}")
    if plot is not None:
        try:
            plot_curves(drawn, plot)
        except OSError as exc:
            print(f"dpbounds: error: the figure could not be written to {plot!r} "
                  f"({exc.strerror or exc}); the result above is complete", file=sys.stderr)
            return 2
    return 0


def _print_text(out: dict[str, Any], curve: list[float] | None) -> None:
    """The composition's table (and its curve and trade-off) as text."""
    print(f"Composition under {out['neighbouring']}, delta = {out['delta']:g}:")
    if "risk_target" in out:
        r = out["risk_target"]
        print(f"  risk target: TPR <= {r['tpr']:g} at FPR {r['fpr']:g}: the first event's "
              f"z = {r['z']:.6g} (sigma {r['sigma']:.6g}) gives TPR {r['tpr_attained']:.6g} "
              f"(pessimistic PLD; {r['cpu_s']:.2f} CPU s)")
    for part in out["events"]:
        print(f"  {part['spec']}  ->  {part['mechanism']['type']} x {part['steps']}")
    print(f"{'accountant':10s}  {'epsilon':>10s}  {'bracket [optimistic, pessimistic]':34s}  "
          f"{'CPU s':>6s}")
    for row in out["results"]:
        if row["epsilon"] is None:
            print(f"{row['accountant']:10s}  {'n/a':>10s}  {_short(row['reason'])}")
            continue
        bracket = (f"[{row['optimistic']:.6g}, {row['pessimistic']:.6g}]"
                   if "optimistic" in row else "")
        print(f"{row['accountant']:10s}  {row['epsilon']:10.6g}  {bracket:34s}  "
              f"{row['cpu_s']:6.2f}")
    if curve is not None and not any("curve" in r for r in out["results"]):
        # the table printed its eps column only (fuzz round 10); --plot said why
        print("delta(eps): no accountant asked for gives a curve (rdp, zcdp and pld do; "
              "pure and basic give a number at the requested delta only)")
    elif curve is not None:
        print("delta(eps):")
        print(f"{'eps':>10s}  " + "  ".join(
            f"{r['accountant']:>12s}" + ("  pld optimist" if r["accountant"] == "pld" else "")
            for r in out["results"] if "curve" in r))
        for i, e in enumerate(curve):
            cells = []
            for r in out["results"]:
                if "curve" in r:
                    cells.append(f"{r['curve'][i]:12.4g}")
                    if "curve_optimistic" in r:
                        cells.append(f"{r['curve_optimistic'][i]:13.4g}")
            print(f"{e:10g}  " + "  ".join(cells))
    if "tradeoff" in out:
        _print_tradeoff(out["tradeoff"])
    for row in out["results"]:
        low, high = row.get("optimistic"), row.get("pessimistic")
        if low is not None and high is not None and high > 0 and low < 0.5 * high:
            # 1e6 subsampled steps read [0, 0.48] beside "to ~1e-9" (fuzz 17): the grid's
            # optimistic rounding, added over the steps, outweighs the loss itself
            print(f"{row['accountant']}: the bracket's low end {low:.6g} is far below the "
                  f"guarantee {high:.6g}: the grid's optimistic rounding, added over the "
                  "steps, swamps the loss here, so the bracket does not resolve the exact "
                  "epsilon (the guarantee holds; its tightness is not shown)")
    # the optimistic end is a lower bound for the discretised non-Gaussian parts only: the
    # Gaussian parts are computed alike in both, ~1e-9 of themselves above the exact value
    # (fuzz round 13: 4.377178098 vs the exact 4.377178096 at z = 1)
    # (walkthrough of stop 80: "not a lower bound to better than ~1e-9" was hard to parse)
    print("epsilon: the guarantee at delta (PLD: pessimistic discretisation, an upper bound). "
          "The bracket [optimistic, pessimistic] holds the exact epsilon (its low end to ~1e-9 "
          "of epsilon); its width is the PLD grid's error on this composition.", flush=True)


def _print_tradeoff(t: dict[str, Any]) -> None:
    """The attack's TPR at each FPR (PLD pair, both directions) and the GDP summary."""
    if "reason" in t:
        print(f"trade-off: n/a ({_short(t['reason'])})")
        return
    print(f"trade-off (best attack's TPR at each FPR, from the PLD pair; {t['cpu_s']:.2f} "
          "CPU s):")
    print(f"{'fpr':>10s}  {'tpr pess.':>10s}  {'tpr opt.':>10s}  {'remove':>10s}  "
          f"{'add':>10s}")
    for i, a in enumerate(t["fpr"]):
        print(f"{a:10.3g}  {t['pessimistic'][i]:10.6g}  {t['optimistic'][i]:10.6g}  "
              f"{t['remove']['pessimistic'][i]:10.6g}  {t['add']['pessimistic'][i]:10.6g}")
    g = t["gdp"]
    print(f"GDP: mu = {g['mu']:.6g} (the smallest mu-GDP curve above the ledger's, FPR and FNR "
          f">= {g['min_fpr']:g}); regret {g['regret']:.3g} TPR at FPR {g['regret_fpr']:.3g}")
    print("tpr pess.: no attack does better (pessimistic PLD, the worse direction); tpr opt.: "
          "the exact curve is at least this.")


def _rows(t: dict[str, Any], keep: list[int]) -> dict[str, Any]:
    """The trade-off entry at the rows ``keep`` (the table's FPRs out of the plot's grid)."""
    out: dict[str, Any] = {}
    for key, value in t.items():
        if isinstance(value, dict) and key != "gdp":
            out[key] = _rows(value, keep)
        elif key != "gdp" and hasattr(value, "__len__") and not isinstance(value, str):
            out[key] = [value[i] for i in keep]
        else:
            out[key] = value
    return out


def draw_curves(out: dict[str, Any], ax: Any) -> None:
    """Draw the curve of a :func:`~dpbounds.privacy.composition.compose_events` result on
    the matplotlib axes ``ax``: the trade-off (TPR against FPR: pessimistic, optimistic, the
    GDP curve of its mu and the no-privacy-loss diagonal) if it has one, else delta(eps) per
    accountant (the PLD's optimistic twin dashed). Plots exactly the result's numbers."""
    import numpy as np
    from scipy import stats

    t = out.get("tradeoff")
    if t is not None and "fpr" in t:
        a = np.asarray(t["fpr"], dtype=float)
        ax.plot(a, t["pessimistic"], color="C3", label="TPR, pessimistic (no attack does "
                                                       "better)")
        ax.plot(a, t["optimistic"], color="C0", ls="--", label="TPR, optimistic (the exact "
                                                               "curve is at least this)")
        mu = t["gdp"]["mu"]
        with np.errstate(divide="ignore"):
            ax.plot(a, stats.norm.cdf(stats.norm.ppf(a) + mu), color="grey", ls=":",
                    label=f"GDP mu = {mu:.4g}")
        ax.plot([0.0, 1.0], [0.0, 1.0], color="k", lw=0.6, label="no information")
        ax.set_xscale("symlog", linthresh=1e-5)
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("false-positive rate")
        ax.set_ylabel("true-positive rate of the best attack")
        ax.set_title(f"trade-off of the composition ({out['neighbouring']})", fontsize=9)
    else:
        rows = [r for r in out["results"] if "curve" in r]
        if not rows:
            raise ValueError("--plot: no accountant gave a delta(eps) curve to draw")
        eps = np.asarray(out["curve_epsilons"], dtype=float)
        for i, r in enumerate(rows):
            ax.plot(eps, r["curve"], marker="o", ms=3, color=f"C{i}",
                    label=f"{r['accountant']}" + (" (pessimistic)" if "curve_optimistic" in r
                                                  else ""))
            if "curve_optimistic" in r:
                ax.plot(eps, r["curve_optimistic"], ls="--", color=f"C{i}",
                        label=f"{r['accountant']} (optimistic)")
        ax.set_yscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("delta(epsilon)")
        ax.set_title(f"delta(eps) of the composition ({out['neighbouring']})", fontsize=9)
    ax.legend(fontsize=7)


def plot_curves(out: dict[str, Any], path: str) -> None:
    """Write :func:`draw_curves`'s figure to ``path`` (matplotlib, at the edge only)."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")  # a file is written; no window from the command line
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    try:
        draw_curves(out, ax)
        fig.tight_layout()
        fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)
