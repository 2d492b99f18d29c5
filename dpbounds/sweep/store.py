"""The results store of the sweep engine: one JSON file (and one NPZ file) per finished cell.

This is the only module of :mod:`dpbounds.sweep` that touches the file system. Layout::

    STORE/
      FORMAT.md                                   what follows, for a reader without dpbounds
      cells/<module.function>/<key>.json          parameters, metadata, JSON values
      cells/<module.function>/<key>.npz           the record's arrays (only if it has any)

Each JSON file holds ``format``, ``key``, ``function``, ``params``, ``trials``, ``seed``,
``version`` (of dpbounds), ``code`` (the code fingerprint), ``values`` (the record's JSON
values), ``arrays`` (name -> dtype, shape and SHA-256 of what the NPZ holds), ``seconds``
(compute time), ``worker``, ``finished`` (UTC, ISO 8601) and ``sha256``, the SHA-256 of the
document without it (keys sorted, compact separators). The NPZ is a plain ``numpy.savez``
archive, read with ``numpy.load(path, allow_pickle=False)``.

**A store that catches accidents.** A cell is read back only if its JSON parses, is of this
format, matches its ``sha256``, names the key and function it is stored under, and every NPZ
member matches its SHA-256 (over dtype, shape, memory order and bytes). Otherwise it is treated
as missing, with a one-line warning (logger ``dpbounds.sweep``) naming the file: truncated,
emptied, overwritten or bit-flipped files, another cell's JSON or NPZ copied under a key, and
cells written by an older dpbounds (format ``dpbounds.sweep.cell/1``, no checksums: they are
recomputed, not migrated, since nothing in them can be verified). A sweep then recomputes the
cell and overwrites the file.

**Accidents, not forgery.** These checksums are unkeyed: whoever can write the files can change
a value and recompute them, and the store serves the forged value. A *keyed* store (``key=``,
or the environment variable ``DPBOUNDS_STORE_KEY``, which ``verify --store`` and every sweep
read) also writes ``hmac_sha256``, an HMAC-SHA256 of the document under that secret key (the
array checksums are in the document, so it covers the NPZ too), and serves only cells whose
HMAC matches: a forged cell, or one written without the key or with another key, counts as
missing. It authenticates; it does not encrypt, and cannot tell a cell from an earlier genuine
copy of the same cell.

**Atomic and resumable.** Every file is written to a temporary name in the same folder, flushed
to disk and renamed over its final name (:func:`os.replace`); the NPZ is written before the JSON,
so a cell is finished exactly when its JSON exists. A kill at any instant leaves either a
complete cell or none (plus at most a stray ``.*.tmp`` file, removed on a later run).

**Bit-exact.** Arrays are stored as ``.npy`` members (dtype, shape, order and bytes preserved);
JSON floats are written with Python's shortest round-trip ``repr`` (``NaN`` and ``Infinity``
included; a NaN with a sign bit or payload, which JSON cannot spell, is kept as a 0-d
array in the NPZ), so reading a cell back gives exactly the numbers that were computed.

Why JSON + NPZ and not Parquet or HDF5: both need a heavy optional dependency (pyarrow,
h5py); JSON and NPZ need only NumPy, are readable in any language, and a file per cell makes
the atomic rename trivial (no shared file to corrupt). ``pandas.json_normalize`` turns the JSON
files into a table (see :meth:`ResultStore.table` and ``docs/sweeps.md``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import logging
import math
import os
import stat
import time
import uuid
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpbounds.sweep.cells import canonical

__all__ = ["FORMAT", "KEY_ENV", "ResultStore"]

#: Format tag written into every cell file (/2: with checksums; /1 had none).
FORMAT = "dpbounds.sweep.cell/2"

_LOG = logging.getLogger("dpbounds.sweep")

#: The environment variable whose value, when set and not empty, keys every store opened
#: without an explicit ``key`` (see the module docstring, "Accidents, not forgery").
KEY_ENV = "DPBOUNDS_STORE_KEY"

# what reading a damaged NPZ can raise (zipfile, zlib and numpy's format reader)
_NPZ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)

_TEMP_MAX_AGE_S = 3600.0  # a write takes milliseconds; older temporaries are from a kill

_FORMAT_MD = """# dpbounds sweep results store ({fmt})

One finished cell = `cells/<module.function>/<key>.json` (+ `<key>.npz` when the record has
arrays). The JSON holds `key`, `function`, `params`, `trials`, `seed`, `version` (dpbounds),
`code` (source fingerprint), `values` (JSON outputs; non-finite floats as Python's `NaN` /
`Infinity` tokens, which strict JSON readers refuse), `arrays` (name -> dtype, shape, sha256 of
the NPZ members), `seconds`, `worker`, `finished`, and `sha256` (of the document without it,
`json.dumps(doc, sort_keys=True, separators=(",", ":"))` in UTF-8). The checksums catch
accidents, not forgery; a keyed store adds `hmac_sha256` (HMAC-SHA256 under a secret key of the
same text without `sha256` and `hmac_sha256`). Files are written to a
temporary name and renamed, the NPZ before the JSON: a cell is finished exactly when its JSON
exists. dpbounds treats a cell whose checksums do not match as missing.

    import json, pathlib, numpy as np, pandas as pd
    files = sorted(pathlib.Path(STORE).glob("cells/*/*.json"))
    df = pd.json_normalize([json.loads(p.read_text()) for p in files])  # params.*, values.*
    arrays = np.load(files[0].with_suffix(".npz"), allow_pickle=False)  # one cell's arrays

See docs/sweeps.md in the dpbounds repository.
"""


_CANONICAL_NAN = np.float64(math.nan).tobytes()


def split_record(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split a cell function's record into JSON values and NumPy arrays.

    Arrays (and NumPy scalars other than float64, int64 and bool, kept as 0-d arrays so their
    dtype survives) go to the NPZ; Python numbers, strings, ``None`` and lists/dicts of them go
    to the JSON. Raises ``ValueError`` naming the entry that fits neither.

    >>> values, arrays = split_record({"mean": 0.5, "trace": np.zeros(3)})
    >>> values, sorted(arrays)
    ({'mean': 0.5}, ['trace'])
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"a cell function must return a mapping, got {type(record).__name__}")
    values: dict[str, Any] = {}
    arrays: dict[str, np.ndarray] = {}
    for name, v in record.items():
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ValueError(f"record names must be non-empty str without '/' or a leading "
                             f"'.', got {name!r}")
        if isinstance(v, np.ndarray) or (isinstance(v, np.generic) and not isinstance(
                v, np.float64 | np.int64 | np.bool_)):
            a = np.asarray(v)
            if a.dtype.hasobject:
                raise ValueError(f"record[{name!r}]: object arrays cannot be stored bit-exactly")
            arrays[name] = a
        elif isinstance(v, float) and math.isnan(v) and (
                np.float64(v).tobytes() != _CANONICAL_NAN):
            # JSON has one NaN: a signed or payload-carrying NaN goes to the NPZ (0-d array)
            arrays[name] = np.asarray(v, dtype=np.float64)
        else:
            values[name] = canonical(v, f"record[{name!r}]")
    return values, arrays


def normalise_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` exactly as the store gives it back: names sorted, JSON values as plain Python
    (tuples as lists, float64 / int64 / bool NumPy scalars as Python numbers), arrays and other
    NumPy scalars as arrays. A computed cell and a stored one thus look the same to the caller.

    >>> normalise_record({"b": (1, 2), "a": np.float32(0.5)})
    {'a': array(0.5, dtype=float32), 'b': [1, 2]}
    """
    values, arrays = split_record(record)
    return {k: values[k] if k in values else arrays[k] for k in sorted(record)}


class DamagedCell(ValueError):
    """A cell file that cannot be trusted: ``path`` and ``reason`` say which and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


#: the largest cell document read (a cell's JSON holds its parameters and JSON values; its
#: arrays are in the NPZ): a cell file replaced by a link to /dev/zero was read until the
#: process was killed for memory (exit 137, nothing printed; fuzz round 5)
MAX_CELL_BYTES = 256 * 2**20


def _read_regular(p: Path, limit: int) -> bytes:
    """The bytes of ``p`` if it is a regular file of at most ``limit`` bytes, else
    ``OSError`` saying why: a pipe in its place blocked the run, a device (a link to
    /dev/zero) never ended. ``FileNotFoundError`` if there is none."""
    st = p.stat()
    if not stat.S_ISREG(st.st_mode):
        raise OSError(0, "not a regular file (a folder, a pipe, a device or a link to one)")
    if st.st_size > limit:
        raise OSError(0, f"{st.st_size:,} bytes, more than a cell writes ({limit:,})")
    with open(p, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:  # grew since the stat
        raise OSError(0, f"more than {limit:,} bytes, more than a cell writes")
    return data


def _doc_digest(doc: Mapping[str, Any]) -> str:
    """SHA-256 of a cell document without its ``sha256`` entry (keys sorted, compact)."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _doc_mac(doc: Mapping[str, Any], key: bytes) -> str:
    """HMAC-SHA256 under ``key`` of a cell document without ``sha256`` and ``hmac_sha256``."""
    body = {k: v for k, v in doc.items() if k not in ("sha256", "hmac_sha256")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _array_digest(a: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape, memory order and bytes (what the NPZ keeps)."""
    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    h = hashlib.sha256(f"{a.dtype.str}|{list(a.shape)}|{order}|".encode())
    h.update(a.tobytes(order="A"))
    return h.hexdigest()


def _atomic_write(path: Path, write: Any) -> None:
    """Write via ``write(fh)`` to a temporary file beside ``path``, fsync, rename over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_npz(fh: Any, arrays: Mapping[str, np.ndarray]) -> None:
    # numpy.savez's own keyword names would clash with a record entry called "file"
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, a in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


class ResultStore:
    """A folder of finished sweep cells (see the module docstring for the format).

    Parameters
    ----------
    path
        The store's folder; created on the first write.
    key
        Secret key of a keyed store (str or bytes): cells are written with an HMAC-SHA256 under
        it and only cells with a matching HMAC are read. Default: the environment variable
        ``DPBOUNDS_STORE_KEY`` if set and not empty, else none (an unkeyed store: its checksums
        catch accidents, not forgery).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> store.put({"key": "0" * 32, "function": "m:f", "params": {"x": 0.1}},
    ...           {"y": 0.2, "z": np.arange(3)})
    >>> store.get("m:f", "0" * 32)["z"]
    array([0, 1, 2])
    """

    def __init__(self, path: str | os.PathLike[str], key: str | bytes | None = None) -> None:
        self.path = Path(path)
        if key is None:
            key = os.environ.get(KEY_ENV) or None
        if key is not None and not isinstance(key, (str, bytes)):
            raise ValueError(f"key must be a str or bytes, got {type(key).__name__}")
        if key is not None and len(key) == 0:
            raise ValueError("key must not be empty (give None for an unkeyed store)")
        self._key = key.encode() if isinstance(key, str) else key

    def ensure_folder(self) -> None:
        """Create the store's folder (and its ``cells`` folder) if missing; ``ValueError``
        naming the path when it is a file or cannot be created (``store="/etc/passwd"`` ran
        its first cell, then raised a bare ``NotADirectoryError``)."""
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"store {str(self.path)!r} exists and is not a folder")
        try:
            (self.path / "cells").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"store {str(self.path)!r}: cannot create the folder "
                             f"({exc.strerror or exc})") from None

    @property
    def keyed(self) -> bool:
        """Whether cells are written and read with an HMAC under a secret key."""
        return self._key is not None

    def __repr__(self) -> str:  # never the key
        return f"ResultStore({str(self.path)!r}{', keyed' if self.keyed else ''})"

    def _json_path(self, function: str, key: str) -> Path:
        return self.path / "cells" / function.replace(":", ".") / f"{key}.json"

    def has(self, function: str, key: str) -> bool:
        """Whether the cell ``key`` of ``function`` is finished (its JSON checks out)."""
        return self.meta(function, key) is not None

    def meta(self, function: str, key: str) -> dict[str, Any] | None:
        """The JSON metadata of a finished cell, or ``None`` (also for a damaged file, with a
        one-line warning naming it)."""
        try:
            return self._checked_meta(self._json_path(function, key), function, key)
        except DamagedCell as exc:
            _warn(exc)
            return None

    def get(self, function: str, key: str) -> dict[str, Any] | None:
        """The record of a finished cell (values and arrays, as computed), or ``None`` (also
        for a damaged cell, with a one-line warning naming the file)."""
        found = self.read(function, key)
        return None if found is None else found[1]

    def read(self, function: str, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(metadata, record)`` of a finished cell whose every checksum matches, else
        ``None`` (a damaged cell is also logged, one line naming the file)."""
        try:
            meta = self._checked_meta(self._json_path(function, key), function, key)
            return None if meta is None else (meta, self._checked_record(meta))
        except DamagedCell as exc:
            _warn(exc)
            return None

    def load(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """The record described by the metadata ``meta`` (from :meth:`entries`), names sorted;
        raises :class:`DamagedCell` if an array does not match its checksum."""
        return self._checked_record(meta)

    def _checked_meta(self, p: Path, function: str | None,
                      key: str | None) -> dict[str, Any] | None:
        """The verified document at ``p`` (``None`` if there is none); :class:`DamagedCell`
        if it is unreadable, of another format, changed, or another cell's."""
        try:
            data = _read_regular(p, MAX_CELL_BYTES)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise DamagedCell(p, f"unreadable ({exc.strerror or exc})") from None
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            # RecursionError: arrays nested 1e5 deep (no cell is) escaped the damage handling
            what = "empty" if not data else f"not valid JSON ({type(exc).__name__})"
            raise DamagedCell(p, f"{what}, {len(data)} bytes") from None
        if not isinstance(doc, dict):
            raise DamagedCell(p, "not a cell document (no JSON object)")
        if doc.get("format") != FORMAT:
            raise DamagedCell(p, f"format {doc.get('format')!r} is not {FORMAT!r} (written by "
                                 f"an older dpbounds, without checksums)")
        if doc.get("sha256") != _doc_digest(doc):
            raise DamagedCell(p, "its content does not match its sha256 (changed after writing)")
        if self._key is not None:
            mac = doc.get("hmac_sha256")
            if not isinstance(mac, str) or not hmac.compare_digest(mac,
                                                                   _doc_mac(doc, self._key)):
                raise DamagedCell(p, "no HMAC that matches this store's key (written without "
                                     "the key or with another one, or changed after writing)")
        if key is not None and (doc.get("key") != key or doc.get("function") != function):
            raise DamagedCell(p, f"holds cell {doc.get('key')!r} of {doc.get('function')!r}, "
                                 f"not {key!r} of {function!r}")
        return doc

    def _checked_record(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        record = dict(meta.get("values", {}))
        arrays = meta.get("arrays") or {}
        if arrays:
            npz = self._json_path(meta["function"], meta["key"]).with_suffix(".npz")
            try:
                if not stat.S_ISREG(npz.stat().st_mode):  # a pipe blocked, a device never ended
                    raise OSError(0, "not a regular file")
                with np.load(npz, allow_pickle=False) as z:
                    for name, spec in arrays.items():
                        a = z[name]
                        if _array_digest(a) != spec.get("sha256"):
                            raise DamagedCell(npz, f"member {name!r} does not match its "
                                                   f"sha256 in {npz.with_suffix('.json').name}")
                        record[name] = a
            except DamagedCell:
                raise
            except _NPZ_ERRORS as exc:
                raise DamagedCell(npz, f"unreadable NPZ ({type(exc).__name__}: "
                                       f"{str(exc).splitlines()[0] if str(exc) else ''})"
                                  ) from None
        return dict(sorted(record.items()))

    def put(self, meta: Mapping[str, Any], record: Mapping[str, Any]) -> None:
        """Write one finished cell atomically (NPZ first, then the JSON that marks it done).

        ``meta`` needs ``key`` and ``function``; its other entries (params, seed, ...) are
        written as given, after the record's ``values`` and ``arrays``.
        """
        values, arrays = split_record(record)
        target = self._json_path(meta["function"], meta["key"])
        # damage in the way of the write (a cell's file that became a folder, the function's
        # folder that became a file) is moved aside, not left to raise after the cell ran: a
        # bare IsADirectoryError / FileExistsError lost the recomputed result
        if target.parent.exists() and not target.parent.is_dir():
            _move_aside(target.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        for path in (target, target.with_suffix(".npz")):
            if path.is_dir():
                _move_aside(path)
        if not (self.path / "FORMAT.md").exists():
            _atomic_write(self.path / "FORMAT.md",
                          lambda fh: fh.write(_FORMAT_MD.format(fmt=FORMAT).encode()))
        if arrays:
            _atomic_write(target.with_suffix(".npz"), lambda fh: _write_npz(fh, arrays))
        doc = {"format": FORMAT, **meta, "values": values,
               "arrays": {k: {"dtype": a.dtype.str, "shape": list(a.shape),
                              "sha256": _array_digest(a)} for k, a in arrays.items()},
               "finished": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}
        # the digests of the document as it reads back (tuples become lists, and so on)
        if self._key is not None:
            doc["hmac_sha256"] = _doc_mac(json.loads(json.dumps(doc, allow_nan=True)), self._key)
        doc["sha256"] = _doc_digest(json.loads(json.dumps(doc, allow_nan=True)))
        text = json.dumps(doc, indent=1, sort_keys=False, allow_nan=True)
        _atomic_write(target, lambda fh: fh.write(text.encode()))

    def entries(self, function: str | None = None) -> Iterator[dict[str, Any]]:
        """The metadata of every finished cell (of one ``"module:function"`` if given); a
        damaged file is skipped with a one-line warning naming it."""
        folder = "*" if function is None else function.replace(":", ".")
        for p in sorted((self.path / "cells").glob(f"{folder}/*.json")):
            if not p.name.startswith("."):
                try:
                    meta = self._checked_meta(p, None, None)
                    if meta is not None and (meta.get("key") != p.stem or str(
                            meta.get("function", "")).replace(":", ".") != p.parent.name):
                        raise DamagedCell(p, f"holds cell {meta.get('key')!r} of "
                                             f"{meta.get('function')!r}, not {p.stem!r}")
                except DamagedCell as exc:
                    _warn(exc)
                    continue
                if meta is not None:
                    yield meta

    def table(self, function: str | None = None) -> list[dict[str, Any]]:
        """One flat row per finished cell, for ``pandas.DataFrame(store.table())``.

        Columns: ``function``, ``key``, ``version``, ``code``, ``trials``, ``seed``, the
        parameters, the JSON values, ``arrays`` (names of the NPZ members), ``seconds``. A value
        whose name collides with a parameter or a column above is named ``values.<name>``.
        """
        rows = []
        for m in self.entries(function):
            row = {k: m.get(k) for k in ("function", "key", "version", "code", "trials",
                                         "seed")}
            row.update(m.get("params", {}))
            for k, v in m.get("values", {}).items():
                row[f"values.{k}" if k in row else k] = v
            row["arrays"] = sorted(m.get("arrays", {}))
            row["seconds"] = m.get("seconds", math.nan)
            rows.append(row)
        return rows

    def remove_stale_temporaries(self, max_age_s: float = _TEMP_MAX_AGE_S) -> int:
        """Delete ``.*.tmp`` files older than ``max_age_s`` (left by a kill); return how many."""
        now, removed = time.time(), 0
        for p in (self.path / "cells").glob("*/.*.tmp"):
            try:
                if now - p.stat().st_mtime > max_age_s:
                    p.unlink()
                    removed += 1
            except FileNotFoundError:
                pass
        return removed


def _move_aside(path: Path) -> None:
    """Rename ``path`` (damage where a cell's file or folder belongs) to a name the store never
    reads, ``NAME.damaged-XXXXXXXX`` beside it, with a one-line warning."""
    aside = path.with_name(f"{path.name}.damaged-{uuid.uuid4().hex[:8]}")
    os.replace(path, aside)
    _LOG.warning("dpbounds sweep: moved %s, which is in the way of a cell, aside to %s",
                 path, aside.name)


def _warn(exc: DamagedCell) -> None:
    _LOG.warning("dpbounds sweep: ignoring the damaged cell file %s: %s; it counts as missing",
                 exc.path, exc.reason)
