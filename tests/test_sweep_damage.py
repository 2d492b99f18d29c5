"""A damaged store never gives a wrong figure (issue 19, item 5).

Every corruption mode of a cell file — truncated, emptied, random bytes, a flipped bit (the
JSON still parses), another cell's JSON or NPZ copied under a key, NPZ damage, a cell of the
old format — is treated as missing: the sweep recomputes that cell (and only it), logs one
line naming the file, returns records bit-identical to an undamaged run, and the next run
reuses the repaired cell. Oracle: an uninterrupted in-process run, compared byte for byte.
Negative control: the same checks against a store that skips its checksums (the reader before
this change) must fail. A lost executor ends in the sweep's one-line SweepError with the count
of cells kept.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpbounds.sweep import Cell, InProcess, ResultStore, SweepError, run_sweep
from tests.sweep_cells import noisy_walk

ROOT = Path(__file__).resolve().parents[1]


def cells() -> list[Cell]:
    return [Cell(noisy_walk, {"scale": 0.5 + i, "steps": 20 + i}, trials=2, seed=(5, i))
            for i in range(4)]


def same(a: list[dict], b: list[dict]) -> bool:
    for ra, rb in zip(a, b, strict=True):
        if ra.keys() != rb.keys():
            return False
        for k in ra:
            x, y = ra[k], rb[k]
            if isinstance(x, np.ndarray):
                if not (isinstance(y, np.ndarray) and x.dtype == y.dtype
                        and x.shape == y.shape and x.tobytes() == y.tobytes()):
                    return False
            elif np.asarray(x).tobytes() != np.asarray(y).tobytes():
                return False
    return True


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    return list(run_sweep(cells(), progress=False))


def _flip_digit(path: Path) -> None:
    # a bit flipped inside a number of the values: '0' <-> '1', ... the JSON still parses
    text = path.read_bytes()
    at = text.index(b'"mean_log1p": ') + len(b'"mean_log1p": ') + 3
    path.write_bytes(text[:at] + bytes([text[at] ^ 1]) + text[at + 1:])


def _flip_npz_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # inside the first member's float bytes; the zip still opens
    path.write_bytes(bytes(data))


def _old_format(path: Path) -> None:
    doc = json.loads(path.read_text())
    doc["format"] = "dpbounds.sweep.cell/1"
    for k in ("sha256",):
        doc.pop(k)
    for spec in doc["arrays"].values():
        spec.pop("sha256")
    path.write_text(json.dumps(doc, indent=1))


def _copy_from(other: Path, suffix: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        target = path.with_suffix(suffix)
        target.write_bytes(other.with_suffix(suffix).read_bytes())
    return damage


MODES: dict[str, tuple[str, Any]] = {
    "json-truncated": (".json", lambda p: p.write_bytes(p.read_bytes()[:200])),
    "json-emptied": (".json", lambda p: p.write_bytes(b"")),
    "json-random-bytes": (".json", lambda p: p.write_bytes(
        np.random.default_rng(19).integers(0, 256, 300, dtype=np.uint8).tobytes())),
    "json-flipped-bit": (".json", _flip_digit),
    "json-wrong-key": (".json", "copy"),
    "json-old-format": (".json", _old_format),
    # nested 1e5 deep (stop 72's fuzz): the parser's RecursionError escaped the damage handling
    "json-nested-deep": (".json", lambda p: p.write_bytes(b"[" * 100_000 + b"]" * 100_000)),
    "npz-truncated": (".npz", lambda p: p.write_bytes(p.read_bytes()[:100])),
    "npz-flipped-bit": (".npz", _flip_npz_bit),
    "npz-wrong-key": (".npz", "copy"),
    "npz-missing": (".npz", lambda p: p.unlink()),
}


def _damaged_store(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    folder = tmp_path / "store"
    first = run_sweep(cells(), store=folder, progress=False)
    assert first.computed == 4
    files = sorted((folder / "cells").glob("*/*.json"), key=lambda p: p.stem)
    keys = [i.key for i in first.info]
    victim = next(p for p in files if p.stem == keys[1])
    other = next(p for p in files if p.stem == keys[2])
    suffix, damage = MODES[mode]
    if damage == "copy":
        damage = _copy_from(other, suffix)
    damage(victim) if suffix == ".json" else damage(victim.with_suffix(".npz"))
    return folder, victim.with_suffix(suffix)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_damaged_cell_is_recomputed_with_a_warning(tmp_path: Path, mode: str,
                                                    reference: list[dict],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    folder, damaged = _damaged_store(tmp_path, mode)
    with caplog.at_level(logging.WARNING, logger="dpbounds.sweep"):
        again = run_sweep(cells(), store=folder, progress=False)
    assert (again.computed, again.reused) == (1, 3)
    assert same(list(again), reference)
    lines = [r.getMessage() for r in caplog.records if r.name == "dpbounds.sweep"]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert str(damaged) in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dpbounds.sweep"):
        third = run_sweep(cells(), store=folder, progress=False)  # the file was repaired
    assert (third.computed, third.reused) == (0, 4) and same(list(third), reference)
    assert not caplog.records


class _TrustingStore(ResultStore):
    """The reader before issue 19: parse the JSON, follow the key inside it, load the NPZ."""

    def read(self, function: str, key: str) -> tuple[dict, dict] | None:
        p = self._json_path(function, key)
        if not p.is_file():
            return None
        meta = json.loads(p.read_text())
        record = dict(meta.get("values", {}))
        if meta.get("arrays"):
            npz = self._json_path(meta["function"], meta["key"]).with_suffix(".npz")
            with np.load(npz, allow_pickle=False) as z:
                record.update({name: z[name] for name in meta["arrays"]})
        return meta, dict(sorted(record.items()))


@pytest.mark.parametrize("mode", ["json-flipped-bit", "json-wrong-key", "npz-wrong-key"])
def test_negative_control_a_reader_without_checksums_lies(tmp_path: Path, mode: str,
                                                          reference: list[dict]) -> None:
    # the silent modes: without the checks the store hands back another figure, and says
    # every cell was reused (a bit flipped inside an NPZ member is caught by the zip's CRC,
    # loudly: a traceback before this change)
    folder, _ = _damaged_store(tmp_path, mode)
    again = run_sweep(cells(), store=_TrustingStore(folder), progress=False)
    assert again.computed == 0 and not same(list(again), reference)


def test_get_and_entries_skip_a_damaged_cell(tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    store = ResultStore(tmp_path)
    store.put({"key": "a" * 32, "function": "m:f"}, {"x": np.arange(3.0), "y": 1})
    store.put({"key": "b" * 32, "function": "m:f"}, {"x": np.arange(4.0), "y": 2})
    path = tmp_path / "cells" / "m.f" / f"{'a' * 32}.json"
    path.write_bytes((tmp_path / "cells" / "m.f" / f"{'b' * 32}.json").read_bytes())
    with caplog.at_level(logging.WARNING, logger="dpbounds.sweep"):
        assert store.get("m:f", "a" * 32) is None and not store.has("m:f", "a" * 32)
        assert [m["key"] for m in store.entries()] == ["b" * 32]
        assert len(store.table()) == 1
    assert all(str(path) in r.getMessage() for r in caplog.records) and caplog.records


class _LosesTheScheduler(InProcess):
    """Runs two tasks, then fails as a Dask client does when its scheduler is gone."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, handles: Any) -> set[Any]:
        self.waits += 1
        if self.waits > 2:
            raise type("FuturesCancelledError", (Exception,), {})(
                "3 Future(s) were cancelled:\nKey: run_task-1\nKey: run_task-2")
        return super().wait(handles)


def test_a_lost_executor_is_one_line_with_the_cells_kept(tmp_path: Path) -> None:
    with pytest.raises(SweepError) as info:
        run_sweep(cells(), store=tmp_path, executor=_LosesTheScheduler(), progress=False)
    msg = str(info.value)
    assert "\n" not in msg and "FuturesCancelledError" in msg
    assert "2 of 4 cells finished and were kept in the store" in msg
    again = run_sweep(cells(), store=tmp_path, progress=False)
    assert (again.computed, again.reused) == (2, 2)


def test_cli_recomputes_a_damaged_cell_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpbounds.cli import main

    args = ["verify", "tran_cutkosky.alg1", "--vary", "d", "--values", "4", "8", "--trials",
            "2", "--quick", "--quiet", "--store", str(tmp_path)]
    status = main(args)  # the first run in-process (cheaper); the damaged re-run as a user's
    first = capsys.readouterr().out
    victim = sorted(tmp_path.glob("cells/*/*.json"))[0]
    victim.write_bytes(victim.read_bytes()[:40])
    second = subprocess.run([sys.executable, "-m", "dpbounds", *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert second.returncode == status and "Traceback" not in second.stderr
    warned = [line for line in second.stderr.splitlines() if str(victim) in line]
    assert len(warned) == 1 and "damaged" in warned[0]
    assert second.stdout.split("points x")[0] == first.split("points x")[0]
