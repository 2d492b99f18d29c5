"""The ``dpbounds`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module
adds its parser and sets ``func`` to a callable ``(argparse.Namespace) -> int``.

Conventions shared by every sub-command (set up here, not in the modules):

* no prefix abbreviations (``--n`` is never read as ``--no-tune``);
* every flag that carries a quantity is built from the notation table (:func:`add_quantity`,
  :mod:`dpbounds.notation`): the same flag for the same quantity in every sub-command, the
  canonical spelling (``--epsilon``, ``--dataset-size``) with the papers' symbols as aliases
  (``--eps``, ``--N``, ``--n``), and :func:`flag_used` gives the spelling the user typed for
  error messages;
* integer flags take :func:`integer`, which also accepts an integral value in float notation
  (``1e5``, ``100000.0``);
* ``--quiet`` (no progress bars) and ``--debug`` (show the traceback of an error) everywhere;
* no traceback reaches the user: a bad value is one line ``dpbounds: error: ...`` and exit
  status 2; an unexpected exception is one line naming it with a hint to rerun with
  ``--debug`` (status 4, :data:`EXIT_INTERNAL`: never a command's own status, such as 1 for
  a failed verdict); a closed output pipe (``dpbounds ... | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import decimal
import errno
import importlib
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

__all__ = [
    "DpParser",
    "add_quantity",
    "build_parser",
    "flag_used",
    "integer",
    "main",
    "progress_enabled",
    "strict_json",
]

# One module per command family, so that each part of the library owns its own CLI.
_COMMAND_MODULES: tuple[str, ...] = (
    "dpbounds.cli.demo_cmd",
    "dpbounds.cli.privacy_cmd",
    "dpbounds.cli.bounds_cmd",
    "dpbounds.cli.heavy_ball_cmd",
    "dpbounds.cli.audit_cmd",
    "dpbounds.cli.verify_cmd",
    "dpbounds.cli.plugin_cmd",
)

#: every command, its module and its one-line help, in the order of ``dpbounds --help``. The
#: top-level help and a command's run import only what they need (the command modules pull in
#: scipy, sympy, cvxpy and dp-accounting: seconds); a test checks this table against what the
#: modules register.
_COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("dpbounds.cli.demo_cmd", "run the main job on a built-in default problem"),
    "privacy": ("dpbounds.cli.privacy_cmd",
                "noise per mechanism/accountant for a target (epsilon, delta), and back"),
    "bound": ("dpbounds.cli.bounds_cmd", "evaluate one utility bound (hyper-parameters, scaling)"),
    "compare": ("dpbounds.cli.bounds_cmd", "compare the bounds that fit one problem"),
    "tune": ("dpbounds.cli.heavy_ball_cmd",
             "tune by worst-case error, by a bound, or by real runs (tune runs: "
             "DP-SGD, heavy ball, a plug-in)"),
    "rate": ("dpbounds.cli.heavy_ball_cmd", "convergence rates (closed form and LMI certificate)"),
    "audit": ("dpbounds.cli.audit_cmd",
              "empirical privacy audit: an epsilon lower bound next to the claimed epsilon"),
    "verify": ("dpbounds.cli.verify_cmd",
               "scaling study: run a theorem's algorithm over d, N or eps against its bound"),
    "calibrate": ("dpbounds.cli.plugin_cmd",
                  "a registered method's noise for a target (epsilon, delta), through its "
                  "declared privacy"),
}

#: exit status of a bad value (argparse uses the same) and of an unexpected error (a bug: 4,
#: distinct from every command's own statuses, 1 a failed verdict, 3 an inconclusive one)
EXIT_USAGE = 2
EXIT_INTERNAL = 4
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix filter killed by the pipe reports
EXIT_INTERRUPTED = 130

#: largest magnitude an integer flag accepts (the float64 range, as every computation is)
_INT_LIMIT = decimal.Decimal("1.7976931348623157e308")


#: a negative number as argparse's own matcher reads one, and in scientific notation
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


class DpParser(argparse.ArgumentParser):
    """ArgumentParser without prefix abbreviations and with verbatim epilogs (column legends)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        # argparse reads '-1e-5' as an option, not a negative number ('--epsilon -1e-5' said
        # "expected one argument" where '-1' and '-0.5' got the range; fuzz round 8): its
        # matcher, with exponents (no flag of dpbounds looks like a number)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A sub-command group may name what it accepts beyond its choices (``tune NAME``:
        the loaded plug-ins' methods): its ``unknown_hint(value)`` is then the message."""
        hint = getattr(action, "unknown_hint", None)
        if hint is not None and action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, hint(value))
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as err:  # argparse's "invalid choice": add a near one
            from dpbounds._suggest import did_you_mean  # NumPy-free: an input error is fast

            near = did_you_mean(value, action.choices or ())
            if not near:
                raise
            raise argparse.ArgumentError(action, f"{err.message}{near}") from None

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """A number spelled with digits other than ASCII ones is refused, not read.

        Python's ``int`` and ``float`` read every Unicode decimal digit (``'١'``, ``'１'``):
        ``--seed ١`` ran with seed 1. A number on a command line is ASCII, as in any other
        tool; a look-alike is most likely a paste from a document, so it is named."""
        value = super()._get_value(action, arg_string)
        if (not arg_string.isascii() and action.nargs not in (argparse.PARSER, argparse.REMAINDER)
                and _reads_as_number(arg_string, value)):  # a sub-command's words: its parser
            raise argparse.ArgumentError(
                action, f"write numbers with ASCII digits (0-9), got {arg_string!r}")
        return value

    def error(self, message: str) -> NoReturn:
        """One line, as every other error of the CLI (argparse prints its usage block first).
        An unrecognised argument is the top-level parser's to report, but the command's help
        lists what it takes (``demo --json`` pointed to ``dpbounds --help``: fuzz round 10)."""
        prog = self.prog
        command = getattr(self, "command_hint", None)
        if command and message.startswith("unrecognized arguments"):
            prog = f"{prog} {command}"
        self.exit(EXIT_USAGE, f"dpbounds: error: {' '.join(message.split())} "
                              f"(see '{prog} --help')\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """argparse's exit, but a ``--help`` or ``--version`` that standard output could not
        take is a failure (``--help > /dev/full`` exited 0 with nothing written: fuzz round
        9), and a message standard error cannot take still leaves the status."""
        failed = getattr(self, "_stdout_failed", None)
        if status == 0 and isinstance(failed, BrokenPipeError):  # `| head`: it has enough
            status = EXIT_BROKEN_PIPE
        elif status == 0 and failed is not None:
            status, message = EXIT_USAGE, ("dpbounds: error: could not write standard "
                                           f"output ({failed.strerror or failed})\n")
        if message:
            _say(message.rstrip("\n"))
        raise SystemExit(status)

    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's, without swallowing a failed write to standard output (it passed
        OSError over: ``--help > /dev/full`` exited 0)."""
        if not message:
            return
        file = file or sys.stderr
        try:
            file.write(message)
            file.flush()
        except (OSError, ValueError) as exc:
            if file is sys.stdout and isinstance(exc, OSError):
                _silence_stdout()
                self._stdout_failed = exc


def _reads_as_number(text: str, value: Any) -> bool:
    """Whether a flag's value is a number: converted to one, or a string (most numeric flags
    are read as text and converted by the library) that ``float`` reads."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            float(text)
        except ValueError:
            return False
        return True
    return False


def integer(text: str) -> int:
    """argparse ``type=`` of integer flags: ``100000``, ``1e5`` and ``100000.0`` all give 100000.

    ``1.5``, ``nan``, ``inf`` and values beyond the float64 range (``1e400``) are refused with a
    message naming the flag (argparse adds ``argument --flag:``); the range each flag allows
    is checked by the function it feeds.
    """
    s = text.strip()
    if "_" in s or not s.isascii():  # Decimal reads 1_000 as 1000, and '３' as 3
        raise argparse.ArgumentTypeError(f"expected an integer (ASCII digits; no '_'), got "
                                         f"{text!r}")
    try:
        value = decimal.Decimal(s)
    except decimal.InvalidOperation:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not value.is_finite():
        raise argparse.ArgumentTypeError(f"expected a finite integer, got {text!r}")
    if abs(value) > _INT_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range (beyond 1.8e308)")
    if value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


class _QuantityFlag(argparse.Action):
    """Convert and store the value, and remember which spelling of the flag was typed: an
    error names that spelling (``argument --n: expected an integer``), not every alias."""

    def __init__(self, *args: Any, converter: Callable[[Any], object] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.converter = converter

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        if self.converter is not None:
            try:
                values = self.converter(values)
            except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
                msg = (str(exc) if isinstance(exc, argparse.ArgumentTypeError)
                       else f"invalid {getattr(self.converter, '__name__', '')} value: "
                            f"{values!r}")
                typed = argparse.Action([option_string or self.option_strings[0]], self.dest)
                raise argparse.ArgumentError(typed, msg) from None
        setattr(namespace, self.dest, values)
        typed_flags = dict(getattr(namespace, "_flags_typed", None) or {})
        typed_flags[self.dest] = option_string
        namespace._flags_typed = typed_flags


def _real(text: str) -> float:
    """argparse ``type=`` of real flags: ``float`` without Python's digit separators (``--eps
    1_0`` ran at epsilon 10, where ``--event gaussian:z=1_0`` is refused; fuzz round 7)."""
    if "_" in str(text) or not str(text).isascii():  # float('５') is 5.0 (fuzz round 13)
        raise argparse.ArgumentTypeError(f"expected a number (ASCII digits, '.', 'e', a sign; "
                                         f"no '_'), got {text!r}")
    value = float(text) + 0.0  # -0 reads as 0 (it was printed as "-0": fuzz round 13)
    if value == 0.0 and any(c in "123456789" for c in str(text).lower().split("e")[0]):
        # --delta 1e-400 said "got 0.0" (fuzz round 10): name the number given
        raise argparse.ArgumentTypeError(f"{text!r} is below the smallest float64 (~4.9e-324) "
                                         "and reads as 0")
    return value


_real.__name__ = "float"  # argparse's "invalid float value: 'x'", as before
#: the parser of every real-valued flag (notation quantities and the commands' own)
real = _real
_TYPES = {"int": integer, "float": _real}


def _spelling(choices: Sequence[str]) -> Callable[[str], str]:
    """argparse ``type=`` of a choice flag: ``add-remove``, ``add/remove`` and ``ADD_REMOVE``
    all read as the choice ``add_remove``; a value that matches no choice is left for
    argparse to refuse (case matters between choices such as ``N`` and ``n``)."""
    def convert(text: str) -> str:
        if text in choices:
            return text
        key = text.strip().replace("-", "_").replace("/", "_")
        hits = [c for c in choices if c.lower() == key.lower()]
        return hits[0] if len(hits) == 1 else text
    return convert


def add_quantity(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, *,
                 default: object = None, required: bool = False, help: str | None = None,
                 choices: Sequence[str] | None = None) -> argparse.Action:
    """Add the flag of the quantity ``name`` of :mod:`dpbounds.notation` (canonical spelling
    and every alias, ``dest=name``); ``help`` defaults to the table's meaning and gets the
    default appended."""
    from dpbounds.notation import quantity

    q = quantity(name)
    if not q.flag:
        raise ValueError(f"quantity {name!r} has no command-line flag")
    text = help or q.meaning
    if default is not None and default is not argparse.SUPPRESS:
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        text += f" (default {shown})"
    kwargs: dict = {"dest": name, "default": default, "required": required, "help": text,
                    "action": _QuantityFlag}
    if choices is not None:
        kwargs["choices"] = tuple(choices)
        if not any("-" in c or "/" in c for c in choices):
            # one spelling in every command: add-remove, add/remove and ADD_REMOVE all read
            # as add_remove (the Neighbouring enum's value)
            kwargs["type"] = _spelling(tuple(choices))
    else:
        kwargs["converter"] = _TYPES.get(q.kind)
        kwargs["metavar"] = q.symbols[0] if q.symbols else name.upper()
    return parser.add_argument(*q.flags, **kwargs)


def flag_used(args: argparse.Namespace, name: str) -> str:
    """The spelling of quantity ``name``'s flag the user typed (its canonical flag otherwise)."""
    from dpbounds.notation import quantity

    typed = (getattr(args, "_flags_typed", None) or {}).get(name)
    return typed or quantity(name).flag or name


def progress_enabled(args: argparse.Namespace) -> bool:
    """Whether a sub-command may show progress bars (they still need stderr to be a terminal)."""
    return not getattr(args, "quiet", False)


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """Build the top-level parser.

    ``command="*"`` (the default): every sub-command with all its options. A command name:
    only that command's module is imported and registered, the others are listed by name and
    help (what ``dpbounds --help`` shows); ``None``: no module is imported.
    """
    from dpbounds import __version__

    parser = DpParser(
        prog="dpbounds",
        description="Privacy accounting, utility bounds and rate certificates for DP optimization.",
        epilog="Run 'dpbounds COMMAND --help' for the options and output columns of a command.",
    )
    parser.add_argument("--version", action="version", version=f"dpbounds {__version__}")
    parser.add_argument("--plugin", action="append", metavar="FILE",
                        help="load a plug-in file that registers its theorems, methods and "
                             "studies through dpbounds.extend (before COMMAND; may be repeated; "
                             "installed packages' 'dpbounds.plugins' entry points load too)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command == "*":
        for name in _COMMAND_MODULES:
            importlib.import_module(name).register(sub)
    else:
        wanted = _COMMANDS[command][0] if command in _COMMANDS else None
        done: set[str] = set()
        for name, (module, text) in _COMMANDS.items():
            if module == wanted:
                if module not in done:  # registers every command of its module, in order
                    importlib.import_module(module).register(sub)
                    done.add(module)
            else:
                sub.add_parser(name, help=text)
    for p in _parsers(parser):  # SUPPRESS: a sub-parser must not reset a flag given before it
        p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress bars (they appear only on a terminal anyway)")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, show the Python traceback")
    return parser


def _plugins_of(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(plug-in files, the rest of argv)``: the top-level ``--plugin FILE`` and
    ``--plugin=FILE`` options before the sub-command are taken out (a command's own options
    after it are left alone)."""
    paths: list[str] = []
    rest: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        w = words[i]
        if not w.startswith("-"):  # the command: everything from here is its own
            rest.extend(words[i:])
            break
        if w == "--plugin":
            if i + 1 >= len(words):
                rest.append(w)  # argparse reports the missing value
                break
            paths.append(words[i + 1])
            i += 2
            continue
        if w.startswith("--plugin="):
            paths.append(w.partition("=")[2])
        else:
            rest.append(w)
        i += 1
    return paths, rest


def _load_plugins(paths: Sequence[str]) -> None:
    """Load the ``--plugin`` files and the installed ``dpbounds.plugins`` entry points (only
    when there is one: the extension module imports sympy)."""
    import importlib.machinery
    from importlib.metadata import entry_points
    from pathlib import Path

    for raw in paths:  # as load_plugins checks, before its imports (sympy: 0.7 CPU-s)
        if not raw:
            raise ValueError("--plugin needs a file name, got ''")
        path = Path(raw).expanduser()
        if not path.is_file():
            raise ValueError(f"--plugin {raw}: " + ("a directory, not a file" if path.is_dir()
                                                    else "no such file"))
        if path.suffix not in importlib.machinery.SOURCE_SUFFIXES:
            raise ValueError(f"--plugin {raw}: not a Python file")
    if paths or entry_points(group="dpbounds.plugins"):
        from dpbounds.cli import _catalog

        # the built-in bounds' ids, from the shipped catalog and before extend imports the
        # registry: a plug-in's theorem then imports every bound module (0.3 CPU-s) only to
        # refuse an id it reuses
        builtin = _catalog.names("bound")
        from dpbounds import extend

        extend._BUILTIN_BOUND_IDS = None if builtin is None else frozenset(builtin)
        extend.load_plugins(paths)


def _command_of(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv``: its first word that is not an option (the top-level
    options take no values)."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def _finite(obj: object, reasons: dict[str, str] | None = None, key: str = "") -> object:
    """``obj`` with every non-finite float replaced by ``None``; inside a dict the reason goes
    to its ``"_nonfinite"`` entry (``{"bound": "inf"}``)."""
    if isinstance(obj, dict):
        own: dict[str, str] = {}
        out = {k: _finite(v, own, str(k)) for k, v in obj.items()}
        if own:
            out["_nonfinite"] = {**out.get("_nonfinite", {}), **own}  # type: ignore[dict-item]
        return out
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) or type(obj).__name__ in ("float32", "float16", "longdouble"):
        x = float(obj)  # type: ignore[arg-type]
        if x != x or x in (float("inf"), float("-inf")):
            if reasons is not None and key:
                reasons[key] = "nan" if x != x else ("inf" if x > 0 else "-inf")
            return None
        return x
    return obj


def strict_json(obj: object, **kwargs: object) -> str:
    """JSON that every parser reads: non-finite numbers become ``null`` (with the value named
    under ``"_nonfinite"`` of the enclosing object), never ``NaN`` / ``Infinity``."""
    kwargs.setdefault("indent", 2)
    return json.dumps(_finite(obj), allow_nan=False, **kwargs)  # type: ignore[arg-type]


def freeze_heap() -> None:
    """Collect, then move every object alive now out of the garbage collector's scans
    (:func:`gc.freeze`, CPython's permanent generation).

    What a long command has imported (numpy, scipy, sympy, dp-accounting: ~210,000 objects
    for a ``verify`` study) was walked by every full collection, 0.1 CPU-s each: 5 of them,
    0.52 CPU-s, in ``verify nonconvex.clipped_sgd --vary d``'s planning (0.09 frozen), and
    at random inside the cost probes' timings (a warm probe read 0.08 or 0.19 CPU-s). The
    collection first: garbage frozen would never be freed. For the command-line process
    only: a library call must not make its caller's objects immortal, and :func:`main`
    moves them back (:func:`gc.unfreeze`) when the command returns (a test or a notebook
    that calls it in-process). A caller that froze objects itself keeps them as they are:
    nothing is frozen then (an unfreeze would move the caller's too)."""
    import gc

    global _FROZEN
    if not _FROZEN and gc.get_freeze_count() > 0:
        return  # the caller's own freeze: left alone
    gc.collect()
    _FROZEN = True  # before the freeze: an interrupt inside it still thaws
    gc.freeze()


#: whether :func:`freeze_heap` froze objects that :func:`main` must move back
_FROZEN = False


def _thaw() -> None:
    global _FROZEN
    if _FROZEN:
        import gc

        gc.unfreeze()
        _FROZEN = False


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."


def _stdout_writable() -> bool:
    """Whether standard output takes its buffered text (False: the disk is full, ...)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        return False
    return True


def warn_no_privacy(epsilon: Any, delta: Any, n: Any = None) -> None:
    """One ``dpbounds: warning:`` line per :func:`~dpbounds.privacy.limits.privacy_flags`
    (delta above 1/n, or above 0.1 where n is unknown; epsilon above 100): ``calibrate`` and
    ``audit`` at delta 0.99 ran without a word (fuzz round 9)."""
    from dpbounds.privacy.limits import privacy_flags

    for text in privacy_flags(epsilon, delta, n):
        _say(f"dpbounds: warning: {text}")


def _say(text: str) -> None:
    """A line on standard error, or nothing where it cannot be written (``2> /dev/full``):
    the exit status still says what happened (an input error exited 1, a failed verdict's
    status, when its message could not be printed: fuzz round 9)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _show_warning(message: Warning | str, category: type[Warning], filename: str,
                  lineno: int, file: Any = None, line: str | None = None) -> None:
    """A library warning as one ``dpbounds: warning: ...`` line (Python's own format printed
    the file, the line number and the source line of the library's ``warnings.warn``, which
    say nothing to a shell user: fuzz round 15). ``--debug`` keeps Python's format."""
    text = " ".join(str(message).split())
    _say(f"dpbounds: warning: {text}")


def _silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or already closed
        pass


def _plugin_frame(exc: BaseException) -> Any:
    """The innermost traceback frame of ``exc`` in a loaded ``--plugin`` file, or ``None``
    (a RuntimeError in a plug-in's sensitivity read "internal error ... this is a bug")."""
    extend = sys.modules.get("dpbounds.extend")
    files = set(getattr(extend, "_LOADED", {}) or ())
    if not files:
        return None
    from pathlib import Path

    frames = traceback.extract_tb(exc.__traceback__)
    # only where the innermost frame is the plug-in's own code: a dpbounds function raising
    # below a plug-in's call is still ours (an internal error)
    if frames and str(Path(frames[-1].filename).resolve()) in files:
        return frames[-1]
    return None


#: what a listing reads beside ``--list`` / ``--list-mutants``
_LISTING_READS = frozenset({"list", "list_mutants", "json", "quiet", "debug", "func",
                            "_flags_typed"})


def _refuse_beside_list(parser: argparse.ArgumentParser, args: argparse.Namespace,
                        argv: Sequence[str]) -> None:
    """A listing reads nothing else: ``bound --list --d 5``, ``verify --list --trials 5``
    and ``audit --list-mutants --eps 3`` printed the list as if the rest were not there.
    ``ValueError`` naming the first other option given (its value differs from the bare
    listing's)."""
    mode = ("--list" if getattr(args, "list", False) else
            "--list-mutants" if getattr(args, "list_mutants", False) else None)
    command = getattr(args, "command", None)
    if mode is None or command is None:
        return
    if getattr(args, "list", False) and getattr(args, "list_mutants", False):
        raise ValueError("give one of --list and --list-mutants, not both")
    bare = vars(parser.parse_args([command, mode]))
    typed = dict(getattr(args, "_flags_typed", None) or {})
    sub = next((p for p in _parsers(parser) if p.prog.split()[-1:] == [command]), None)
    for word in argv if sub is not None else ():  # options typed with their default's value
        action = sub._option_string_actions.get(word.split("=", 1)[0])  # type: ignore[union-attr]
        if action is not None and action.dest not in _LISTING_READS:
            typed.setdefault(action.dest, word.split("=", 1)[0])
    for dest, value in vars(args).items():
        # a quantity flag counts as given when typed, whatever its value (`--d 100`, the
        # default's, was accepted); another option when it differs from the bare listing's
        if dest in _LISTING_READS or (bare.get(dest, value) == value and dest not in typed) \
                or (command == "audit" and dest == "algorithm"):  # audit_cmd's own words
            continue
        flag = next((o for a in _parsers(parser) for ac in a._actions if ac.dest == dest
                     for o in ac.option_strings[:1]), None)
        name = typed.get(dest) or flag or dest.upper()
        raise ValueError(f"{mode} lists only (and reads --json); {name} would be ignored")


def _tolerant_streams() -> None:
    """Standard output and error that write what their encoding lacks as escapes: under an
    ASCII locale (``LC_ALL=C``) ``bound --help`` died with a UnicodeEncodeError traceback on
    a mu, and a result was cut off half printed at a dash (fuzz round 9)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # replaced (tests) or closed
            pass


class _ClosedStream(io.TextIOBase):
    """Standard output or error when the process started with it closed (``>&-``): Python
    sets ``sys.stdout`` to None, and every command died with "internal error: AttributeError:
    'NoneType' object has no attribute 'flush'", exit 4, its result lost (fuzz round 10).
    Writing raises the OSError a closed descriptor gives, which the result writer and
    :func:`main` handle as any failed output (the result kept in a named file, exit 2)."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "standard output is closed")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpbounds`` console script."""
    import warnings

    with warnings.catch_warnings():  # restored afterwards (tests call main in-process)
        args_ = sys.argv[1:] if argv is None else argv
        if "--debug" not in args_:
            warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    if sys.stdout is None:
        sys.stdout = _ClosedStream()
    if sys.stderr is None:
        sys.stderr = io.StringIO()  # nowhere to say anything: the exit status still does
    _tolerant_streams()
    plugins, argv = _plugins_of(sys.argv[1:] if argv is None else argv)
    try:  # before the parser: a plug-in's verification problems are --problem choices
        _load_plugins(plugins)
    except ValueError as exc:
        if "--debug" in argv:
            traceback.print_exc()
        _say(f"dpbounds: error: {_one_line(exc)}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("dpbounds: interrupted (while loading the plug-ins)")
        return EXIT_INTERRUPTED
    try:  # Ctrl-C while the parser is built printed a KeyboardInterrupt traceback
        command = _command_of(argv)
        parser = build_parser(command)
        parser.command_hint = command  # type: ignore[attr-defined]
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        _say("dpbounds: interrupted")
        return EXIT_INTERRUPTED
    debug = getattr(args, "debug", False)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        # out-of-range numbers refused before the command imports the library (seconds)
        from dpbounds.cli import _ranges

        _ranges.check(args)
        _refuse_beside_list(parser, args, argv)
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return status
    except BrokenPipeError:  # `dpbounds ... | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    # with --debug the traceback is printed too; the exit status stays the same (an input
    # error is 2 with or without it: an uncaught exception's 1 would read as a failed verdict)
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        _say("dpbounds: interrupted")
        return EXIT_INTERRUPTED
    except (ValueError, OverflowError, FloatingPointError) as exc:  # a value out of range
        if debug:
            traceback.print_exc()
        _say(f"dpbounds: error: {_one_line(exc)}")
        return EXIT_USAGE
    except MemoryError:
        if debug:
            traceback.print_exc()
        _say("dpbounds: error: out of memory; try a smaller problem (a smaller --max-horizon, "
              "--steps, --d ...)")
        return EXIT_USAGE
    except OSError as exc:  # the machine, not a bug: a full disk, a failed stdout
        if debug:
            traceback.print_exc()
        where = exc.filename if exc.filename else "the output"
        if isinstance(sys.stdout, _ClosedStream):
            where = "standard output"
        elif not _stdout_writable():
            _silence_stdout()  # the interpreter's final flush would fail again
            where = "standard output"
        _say(f"dpbounds: error: could not write {where} ({exc.strerror or exc})")
        return EXIT_USAGE
    except Exception as exc:  # a bug: say so in one line, the traceback is one flag away
        if debug:
            traceback.print_exc()
        frame = _plugin_frame(exc)
        if frame is not None:  # the plug-in's code raised: its author's to fix, not ours
            _say(f"dpbounds: error in plug-in {frame.filename}, line {frame.lineno} (in "
                  f"{frame.name}): {type(exc).__name__}: {_one_line(exc)} (rerun with --debug "
                  "for the traceback)")
            return EXIT_USAGE
        _say(f"dpbounds: internal error: {type(exc).__name__}: {_one_line(exc)} (this is a "
              "bug; rerun with --debug for the traceback)")
        return EXIT_INTERNAL
    finally:
        _thaw()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
