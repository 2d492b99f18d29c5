"""A private selection's trials kept on disk, so that a killed selection resumes.

:func:`~dpbounds.tuning.select_privately` with ``store=DIR`` appends each finished trial (its
noisy score, final iterate, ledger epsilon and failure) to one JSON-lines file, keyed by every
input of the selection (the algorithm, the grid, the fixed arguments, the budgets and law, a
digest of the objective's data and the reference objective's, the dpbounds version). Trial
``k`` depends only on ``(seed, k)``, so a resumed selection reads the trials it finds and runs
the rest: its release is the uninterrupted selection's, bit for bit, and costs no more privacy.

The file holds private results (every trial's iterate and score, not only the released one)
and, for ``seed=None``, the selection's secret root seed (a resume needs it): keep the folder
as private as the data, and delete it once the selection is released.

A line cut by a kill is ignored (the trial is run again); a file whose header names another
selection, or that cannot be read, is refused by name.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SelectionStore", "objective_digest", "selection_key"]

FORMAT = 1


def objective_digest(objective: Any) -> str | None:
    """:func:`~dpbounds.tuning.by_runs.objective_fingerprint` (its public arrays and numbers,
    its constants, and its losses and per-sample losses at probe points, so that data held
    under private names count: review of stop 79), ``None`` for ``None``."""
    if objective is None:
        return None
    from dpbounds.tuning.by_runs import objective_fingerprint

    return objective_fingerprint(objective)


def selection_key(*, fixed: Mapping[str, Any], **inputs: Any) -> str:
    """SHA-256 of every input of a selection, encoded as ``tune_by_runs``'s store keys its
    cells (:func:`~dpbounds.tuning.by_runs._encode`: plain values, arrays with their dtype;
    anything else, whose ``repr`` may hold a reused memory address, is a ``ValueError``)."""
    from dpbounds import __version__
    from dpbounds.sweep.cells import canonical_json
    from dpbounds.tuning.by_runs import _encode

    data = {"version": __version__,
            "fixed": {k: _encode(v, f"fixed argument {k!r}", True, True)
                      for k, v in fixed.items()},
            **{k: _encode(v, k, True, True) for k, v in inputs.items()}}
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


class SelectionStore:
    """One selection's finished trials in ``folder`` (module docstring).

    Parameters
    ----------
    folder:
        The store's folder (created if missing).
    key:
        :func:`selection_key` of the selection's inputs, its seed excluded.
    seed:
        The selection's seed, or ``None`` (secret: drawn by the first run, kept in the file,
        read back by a resume).
    """

    def __init__(self, folder: Any, key: str, seed: int | None) -> None:
        root = Path(folder)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"store {str(folder)!r}: cannot create it ({err.strerror or err})"
                             ) from None
        if not root.is_dir():
            raise ValueError(f"store {str(folder)!r} is not a folder")
        tag = "secret" if seed is None else f"seed-{seed}"
        self.path = root / f"selection-{key[:24]}-{tag}.jsonl"
        self.key = key
        self.records: dict[int, tuple[float, np.ndarray, float, str | None]] = {}
        self.root: int | None = seed
        if self.path.exists() and self.path.stat().st_size == 0:
            self.path.unlink()  # created, killed before its header: nothing in it
        if self.path.exists():
            self._read(seed)

    def _read(self, seed: int | None) -> None:
        try:
            lines = self.path.read_text().split("\n")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(f"store file {str(self.path)!r} cannot be read ({err})") from None
        try:
            head = json.loads(lines[0])
            ok = (isinstance(head, dict) and head.get("format") == FORMAT
                  and head.get("key") == self.key and isinstance(head.get("root"), int))
        except json.JSONDecodeError:
            ok = False
        if not ok or (seed is not None and head["root"] != seed):
            raise ValueError(f"store file {str(self.path)!r} does not hold this selection's "
                             "trials (another selection's, or damaged): remove it or give "
                             "another store folder")
        self.root = int(head["root"])
        for line in lines[1:]:
            try:
                rec = json.loads(line)
                k = int(rec["k"])
                x = np.asarray(rec["x"], dtype=float)
                score = math.inf if rec["score"] is None else float(rec["score"])
                self.records[k] = (score, x, float(rec["run_eps"]), rec.get("failure"))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a line cut by a kill (or blank): that trial runs again

    def start(self, root: int) -> None:
        """Write the header of a new file (``root``: the selection's root seed), created
        exclusively: of two runs started at once, the second reads the first's header and
        root (it kept its own root and appended under the other's: review of stop 79)."""
        if self.path.exists():
            return
        text = json.dumps({"format": FORMAT, "key": self.key, "root": int(root)}) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            self._read(None if self.root is None or self.root == root else self.root)
            return
        except OSError as err:
            raise ValueError(f"store file {str(self.path)!r} cannot be written "
                             f"({err.strerror or err})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        self.root = root

    def get(self, k: int) -> tuple[float, np.ndarray, float, str | None] | None:
        """Trial ``k``'s stored outcome, or ``None``."""
        return self.records.get(k)

    def put(self, k: int, outcome: tuple[float, np.ndarray, float, str | None]) -> None:
        """Keep trial ``k``'s outcome (flushed to disk before the next trial runs)."""
        score, x, run_eps, failure = outcome
        self._append({"k": int(k), "score": float(score) if math.isfinite(score) else None,
                      "x": np.asarray(x, dtype=float).tolist(), "run_eps": float(run_eps),
                      "failure": failure})

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"

    def _append(self, record: dict[str, Any]) -> None:
        text = json.dumps(record) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                if fh.tell() and not self._ends_with_newline():  # a line cut by a kill
                    fh.write("\n")
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            raise ValueError(f"store file {str(self.path)!r} cannot be written "
                             f"({err.strerror or err})") from None
