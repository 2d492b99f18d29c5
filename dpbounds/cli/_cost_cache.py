"""The file ``dpbounds verify`` keeps its planner's cost-model fits in (``--cost-cache``).

The memo itself (what is kept, under which key) is :mod:`dpbounds.verify.costs`; this module
is its I/O, at the edge: where the file is, reading it and writing it. It is a cache, so
nothing here is an error: a file that cannot be read or written is a note, and the cost
model is probed as without a cache. What is not a cost cache of this layout is never
overwritten: a file of other content (one that merely mentions the format included), of a
later layout, larger than :data:`MAX_BYTES` or read-only is left as it is (the note says
so), and a path that is not a regular file (a folder, a device such as ``/dev/null``, a
FIFO) is not opened, nor is a lock file made beside it. A symbolic link is followed (its
target is rewritten, the link stays). What a crash or a full disk leaves is rewritten whole:
an empty or zeroed file, a cache of this layout cut short, one with a malformed entry or a
number JSON reads as infinite.

Writes are atomic (a temporary file in the same folder, flushed to disk and renamed over the
old one, with the old file's permissions, or the umask's for a new one) and, where the
platform has ``fcntl``, serialised by an advisory lock on ``FILE.lock`` (opened read-only, so
users of a shared folder can each take it; skipped on a file system without locks), inside
which the file on disk is read again and merged: two processes that plan at once each keep
the other's fits.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dpbounds.verify.costs import FILE_VERSION, MEMO_FORMAT, CostMemo

__all__ = ["ENV", "FAR_OFF", "default_path", "load", "resolve", "save", "settle"]

#: environment variable naming the file (or ``off``) when ``--cost-cache`` is not given
ENV = "DPBOUNDS_COST_CACHE"
#: values of ``--cost-cache`` / ``$DPBOUNDS_COST_CACHE`` that keep no cache
OFF = ("", "off", "0", "false", "no", "none")


#: a plan from remembered fits whose runs took more than this factor more or less CPU than
#: its estimate drops those fits (the planner's own estimates at T = 1e6 read 0.5-0.6 of the
#: runs on a VM, the system time of fresh memory being unpriced: within it)
FAR_OFF = 3.0
#: runs and estimates both below this many CPU seconds are not judged: a study of ~1 CPU-s is
#: mostly fixed costs and first-use imports (the strongly convex studies' estimates read 0.2
#: to 6.9 of their runs of 0.15-2 CPU-s)
JUDGED_FROM = 5.0


def default_path() -> Path:
    """``$XDG_CACHE_HOME/dpbounds/verify-costs.json`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is to be ignored (it made a
        # cache under whatever folder the command ran in; fuzz round 10)
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpbounds" / "verify-costs.json"


def resolve(flag: str | None) -> Path | None:
    """The file of ``--cost-cache flag`` (else ``$DPBOUNDS_COST_CACHE``, else
    :func:`default_path`); ``None`` for ``off`` (also ``0``, ``false``, ``no``, ``none`` or an
    empty value)."""
    value = flag if flag is not None else os.environ.get(ENV)
    if value is None:
        return default_path()
    if value.strip().lower() in OFF:
        return None
    return Path(value).expanduser()


#: how every cost cache this layout writes starts (``json.dump`` of :meth:`CostMemo.to_json`,
#: keys in insertion order): a text that starts so and does not parse is a damaged cache
_OURS = json.dumps(dict(format=MEMO_FORMAT, version=FILE_VERSION))[:-1] + ","
#: a larger file is no cost cache of this package (2000 entries are ~1 MB): not read
MAX_BYTES = 64 * 2**20


def _strict_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a cost cache holds")


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):  # 1e400: json reads it as inf, which no save could write back
        raise ValueError(f"{text} is not a number a cost cache holds")
    return x


def _read(path: Path) -> tuple[CostMemo | None, str | None, bool]:
    """``(memo, note, writable)`` of the file at ``path`` (see :func:`load`)."""
    try:
        info = os.stat(path)  # follows a symbolic link
    except FileNotFoundError:
        return CostMemo(), None, True
    except OSError as exc:
        return None, f"the cost cache {str(path)!r} cannot be used ({exc.strerror or exc})", False
    if not stat.S_ISREG(info.st_mode):
        return None, (f"the cost cache {str(path)!r} is not a regular file; it is not used "
                      "(the cost model is probed)"), False
    leave = (f"{str(path)!r} is not a cost cache of this dpbounds ({{}}); it is left as it is "
             "and the cost model is probed (give another --cost-cache FILE)")
    if info.st_size > MAX_BYTES:
        return None, leave.format(f"{info.st_size} bytes"), False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        return None, (f"the cost cache {str(path)!r} could not be read "
                      f"({exc.strerror or exc}); the cost model is probed"), False
    damaged = (f"the cost cache {str(path)!r} could not be read ({{}}); the cost model is "
               "probed again and the file rewritten")
    try:
        obj = json.loads(text, parse_constant=_strict_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        reason = "too deeply nested" if isinstance(exc, RecursionError) else str(exc)
        # ours, cut short (a crash, a full disk), or empty (nothing to lose): rewritten
        if text.startswith(_OURS) or not text.strip("\x00 \t\r\n"):
            return CostMemo(), damaged.format(reason), True
        return None, leave.format(reason), False
    if not isinstance(obj, dict) or obj.get("format") != MEMO_FORMAT:
        return None, leave.format(f"no format {MEMO_FORMAT!r}"), False
    if obj.get("version") != FILE_VERSION:  # a later dpbounds's: never rewritten here
        return None, leave.format(f"layout {obj.get('version')!r}, not {FILE_VERSION}"), False
    try:
        return CostMemo.from_json(obj), None, True
    except (ValueError, OverflowError) as exc:  # ours, a malformed entry: rewritten
        return CostMemo(), damaged.format(exc), True


def load(path: Path) -> tuple[CostMemo | None, str | None]:
    """The memo kept in ``path`` (empty if there is none) and a note when the file could not
    be read. ``None`` (no cache for this run) where the path is not a regular file, or holds
    something other than this package's cost cache: it is never written."""
    memo, note, writable = _read(path)
    return (memo if writable else None), note


#: what ``flock`` raises where the file system cannot lock (the save goes on unlocked)
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An advisory lock on ``path`` + ``.lock``, opened for writing where it may be (NFS
    needs it), else read-only (another user's lock file in a shared cache folder); without
    it where ``fcntl`` is missing or the file system does not lock (some NFS, SMB and FUSE
    mounts: :data:`_NO_LOCKS`)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock = str(path) + ".lock"
    try:  # for writing where it may be (NFS emulates flock with locks that need it) ...
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # ... else read-only (another user's lock file)
        fd = os.open(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if exc.errno not in _NO_LOCKS:
                raise
        yield
    finally:
        os.close(fd)  # releases the lock


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (setting and
    restoring it would race another thread's file creation)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def save(memo: CostMemo, path: Path) -> str | None:
    """Write ``memo`` to ``path`` (merged with the entries the file holds now, under the
    lock; written to a temporary file and renamed: a reader never sees half a file); a note
    if that failed, or if the file turned into something that is not a cost cache."""
    target = Path(os.path.realpath(path))  # a link's target: the link stays
    tmp: str | None = None
    try:
        # what is there is checked before anything is created (no FILE.lock beside a
        # device, a folder or a FIFO)
        _, note, writable = _read(target)
        if not writable:
            return note
        if target.exists() and not os.access(target, os.W_OK):
            return f"the cost cache {str(path)!r} is read-only; it is left as it is"
        target.parent.mkdir(parents=True, exist_ok=True)
        with _locked(target):
            on_disk, note, writable = _read(target)  # again, under the lock: merged
            if not writable:
                return note
            if on_disk is not None:
                memo.merge(on_disk)
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            fd, tmp = tempfile.mkstemp(prefix=".verify-costs-", suffix=".json",
                                       dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(memo.to_json(), fh, allow_nan=False)
                fh.flush()
                os.fsync(fh.fileno())  # the rename below never exposes an empty file
            os.chmod(tmp, mode)
            os.replace(tmp, target)
            tmp = None
    except (OSError, ValueError, TypeError) as exc:
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"the cost cache could not be written to {str(path)!r} ({text})"
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    memo.changed = False
    return None


def settle(memo: CostMemo, estimated: float | None, spent: float) -> str | None:
    """After the runs: where the plan read fits from ``memo`` and its runs took ``spent`` CPU
    seconds against an ``estimated`` that is more than :data:`FAR_OFF` times off either
    way (one of them at least :data:`JUDGED_FROM`), drop those fits
    (:meth:`~dpbounds.verify.costs.CostMemo.forget_remembered`: a fit timed on a loaded host
    would otherwise price every later plan until the code changes); a note saying so, else
    ``None``. The caller saves the memo."""
    if not memo.hits or estimated is None or not (estimated > 0 and spent > 0):
        return None
    if max(estimated, spent) < JUDGED_FROM:
        return None
    ratio = spent / estimated
    if 1.0 / FAR_OFF <= ratio <= FAR_OFF:
        return None
    n = memo.forget_remembered()
    return (f"the runs took {spent:.3g} CPU-s against an estimated {estimated:.3g} from the "
            f"cost cache: its {n} fit(s) for this plan are dropped (probed again next time)")
