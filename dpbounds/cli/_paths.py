"""Output paths checked before any work (issue 36: a study ran for minutes, then lost its
table to a figure path in a folder that did not exist).

A check *tries* what the command will do later (create the folder, write a file in it), since
permission bits say nothing about a read-only mount, ``/proc`` or a full disk, and ``root``
passes every :func:`os.access` test.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["FIGURE_FORMATS", "check_figure_path", "check_file_path", "check_store_dir",
           "ResultWriter",
           "print_result"]

#: what ``matplotlib.figure.Figure.savefig`` writes with its default backends, by file
#: extension (a test compares this with matplotlib's own list: importing it here would cost
#: the fast answer an input error must have)
FIGURE_FORMATS: frozenset[str] = frozenset({
    "avif", "eps", "gif", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg",
    "svgz", "tif", "tiff", "webp"})


def _probe(folder: Path, flag: str, path: str) -> None:
    """Create and remove a file in ``folder`` (ValueError naming ``flag`` if that fails)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".dpbounds-probe-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise ValueError(f"{flag} {path!r}: cannot write in {str(folder)!r} "
                         f"({exc.strerror or exc})") from None


def check_figure_path(path: str, flag: str = "--plot") -> None:
    """``path`` can be written as a figure: a known extension, an existing writable folder,
    and not a folder itself (``ValueError`` naming ``flag`` otherwise)."""
    if not str(path).strip():  # '' was skipped as if the flag were absent
        raise ValueError(f"{flag} is empty; give a file name")
    p = Path(path)
    # Path drops a trailing separator ('x.png/' reads as 'x.png'), the file system does not:
    # the study ran, then could not write its figure (fuzz round 8)
    if p.is_dir() or str(path).endswith(("/", os.sep)):
        raise ValueError(f"{flag} {path!r} is a folder; give a file name")
    ext = p.suffix.lower().lstrip(".")
    if ext not in FIGURE_FORMATS:
        raise ValueError(f"{flag} {path!r}: unknown figure format {ext or '(no extension)'!r}; "
                         f"use one of {', '.join(sorted(FIGURE_FORMATS))}")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        what = ("is a file, not a folder" if folder.exists()  # it said "does not exist"
                else "does not exist")
        raise ValueError(f"{flag} {path!r}: the folder {str(folder)!r} {what}")
    _probe(folder, flag, path)


def check_file_path(path: str, flag: str, suffixes: tuple[str, ...] = ()) -> None:
    """``path`` can be written as a (data) file: not empty, not a folder, in an existing
    writable folder, with one of ``suffixes`` where given (``ValueError`` naming ``flag``)."""
    if not str(path).strip():
        raise ValueError(f"{flag} is empty; give a file name")
    p = Path(path)
    if p.is_dir() or str(path).endswith(("/", os.sep)):
        raise ValueError(f"{flag} {path!r} is a folder; give a file name")
    if suffixes and p.suffix.lower() not in suffixes:
        raise ValueError(f"{flag} {path!r}: give a file name ending in "
                         f"{' or '.join(suffixes)}")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{flag} {path!r}: the folder {str(folder)!r} {what}")
    _probe(folder, flag, path)


def check_store_dir(path: str, flag: str = "--store") -> None:
    """``path`` is, or can be created as, a writable folder (created here: the store would
    create it on its first write anyway); ``ValueError`` naming ``flag`` otherwise."""
    if not str(path).strip():  # '' is the working folder to Path: never meant
        raise ValueError(f"{flag} is empty; give a folder name")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{flag} {path!r} exists and is not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {path!r}: cannot create the folder "
                         f"({exc.strerror or exc})") from None
    _probe(p, flag, path)


class ResultWriter:
    """Prints a long command's results; once standard output cannot take them (a full disk,
    ``> /dev/full``), keeps this text and every later one in a file of the temporary folder.
    :attr:`error` is then the error to report, naming that file; the caller writes its other
    outputs (a figure) first. ``verify ... > /dev/full`` lost its run's minutes (error, no
    table, no figure: fuzz round 8)."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.error: OSError | None = None
        self._file: str | None = None
        self._why = ""

    def print(self, text: str) -> None:
        """``print(text)`` to standard output, or to the kept file after a failure."""
        if self.error is None:
            try:
                print(text, flush=True)
                return
            except BrokenPipeError:  # `| head`: the reader has what it wanted (main: 141)
                raise
            except OSError as exc:
                self._why = exc.strerror or str(exc)
                self._silence()
        self._keep(text)

    def _keep(self, text: str) -> None:
        try:
            if self._file is None:
                fd, self._file = tempfile.mkstemp(prefix=f"dpbounds-{self.command}-",
                                                  suffix=".txt")
                os.close(fd)
            with open(self._file, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")
            kept = f"; the result is kept in {self._file}"
        except OSError as exc:
            kept = f"; nor could it be kept in a file ({exc.strerror or exc})"
        self.error = OSError(f"could not write standard output ({self._why}){kept}")

    @staticmethod
    def _silence() -> None:
        """Point stdout at /dev/null: the interpreter's final flush would fail again."""
        import sys

        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def print_result(command: str, text: str) -> int:
    """Print a command's result through a :class:`ResultWriter`: 0, or where standard output
    failed the usage status after naming the file that keeps the text (``tune hb ... >
    /dev/full`` computed for 10-52 s and lost its table: fuzz round 10)."""
    import sys

    out = ResultWriter(command)
    out.print(text)
    if out.error is not None:
        print(f"dpbounds: error: {out.error}", file=sys.stderr)
        return 2
    return 0
