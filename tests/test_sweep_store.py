"""Results store and cell keys of :mod:`dpbounds.sweep`.

Oracles: a golden key and golden canonical text (the key recipe must not drift, or every store
would silently miss), Python's own float ``repr`` round trip, NumPy's bytes (``tobytes``) for
bit-exactness, and a crash injected into the atomic write.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpbounds.sweep import Cell, ResultStore, cell_key
from dpbounds.sweep.cells import _digest_py_files, canonical, canonical_json, code_fingerprint
from dpbounds.sweep.store import split_record
from tests.sweep_cells import noisy_walk

ROOT = Path(__file__).resolve().parents[1]


def key(params: dict, version: str = "0.1.0", code: str = "", **kw) -> str:
    return cell_key(Cell(noisy_walk, params, **kw), version, code)


# ---------------------------------------------------------------- keys


def test_golden_key_and_canonical_text() -> None:
    # computed once when the format was fixed; a change here orphans every existing store
    cell = Cell(noisy_walk, {"steps": 3, "scale": 0.1}, trials=2, seed=(1, 2))
    assert cell_key(cell, "0.1.0", "") == "c8b0a96f6492374ccbb6b136fe65a64a"
    assert canonical_json({"b": [1, 2.5, None, True], "a": {"y": -0.0, "x": 1e-300}}) == \
        '{"a":{"x":1e-300,"y":-0.0},"b":[1,2.5,null,true]}'


def test_key_does_not_depend_on_hash_seed_or_process() -> None:
    code = ("from dpbounds.sweep import Cell, cell_key; from tests.sweep_cells import noisy_walk;"
            "print(cell_key(Cell(noisy_walk, {'steps': 3, 'scale': 0.1}, trials=2, seed=(1, 2)),"
            " '0.1.0', ''))")
    for hash_seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "c8b0a96f6492374ccbb6b136fe65a64a", out.stderr


def test_key_changes_with_everything_that_changes_the_result() -> None:
    base = key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2))
    variants = [
        key({"scale": 0.2, "steps": 3}, trials=2, seed=(1, 2)),          # a parameter
        key({"scale": 0.1, "steps": 4}, trials=2, seed=(1, 2)),
        key({"scale": 0.1, "steps": 3, "x": None}, trials=2, seed=(1, 2)),  # an extra one
        key({"scale": 0.1, "steps": 3}, trials=3, seed=(1, 2)),          # trials
        key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 3)),          # seed
        key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2), version="0.1.1"),  # version
        key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2), code="abc"),  # code
        cell_key(Cell(np.linspace, {"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2)),
                 "0.1.0", ""),                                            # function
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_key_ignores_what_does_not_change_the_result() -> None:
    base = key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2))
    assert key({"steps": 3, "scale": 0.1}, trials=2, seed=(1, 2)) == base  # dict order
    assert key({"scale": np.float64(0.1), "steps": np.int32(3)}, trials=np.int64(2),
               seed=(np.uint8(1), 2)) == base                             # NumPy scalars
    assert key({"scale": float("0.1"), "steps": 3}, trials=2, seed=[1, 2]) == base
    assert key({"scale": 0.1, "steps": 3}, trials=2, seed=(1, 2), group="g", cost=9.0) == base


def test_float_keys_are_canonical() -> None:
    x = 0.1
    assert key({"v": x}) == key({"v": np.float64(x)}) == key({"v": 1e-1})
    assert key({"v": x}) != key({"v": float(np.nextafter(x, 1.0))})  # one ulp apart
    assert key({"v": np.float32(0.1)}) != key({"v": 0.1})  # a different number
    assert key({"v": np.float32(0.5)}) == key({"v": 0.5})  # the same number
    assert key({"v": 1}) != key({"v": 1.0})  # the function may treat them differently
    assert key({"v": 0.0}) != key({"v": -0.0})
    assert key({"v": math.inf}) != key({"v": -math.inf})
    assert key({"v": math.nan}) == key({"v": float("nan")})
    assert key({"v": (1, 2)}) == key({"v": [1, 2]})


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_float_key_is_injective_and_repr_stable(a: float, b: float) -> None:
    assert key({"v": a}) == key({"v": float(repr(a))}) == key({"v": np.float64(a)})
    same_bits = np.float64(a).tobytes() == np.float64(b).tobytes()
    assert (key({"v": a}) == key({"v": b})) == same_bits


@pytest.mark.parametrize("bad, where", [
    ({"x": object()}, "params['x']"),
    ({"x": {1, 2}}, "params['x']"),
    ({"x": 1 + 2j}, "params['x']"),
    ({"x": [1, np.zeros(2)]}, "params['x'][1]"),
    ({"x": {1: 2}}, "params['x']"),
])
def test_bad_params_are_refused_naming_the_parameter(bad: dict, where: str) -> None:
    with pytest.raises(ValueError, match=where.replace("[", r"\[").replace("]", r"\]")):
        Cell(noisy_walk, bad)


def test_bad_cells_are_refused() -> None:
    with pytest.raises(ValueError, match="module-level function"):
        Cell(lambda: {}, {})  # refused when made (stop 69), not when keyed
    with pytest.raises(ValueError, match="seed"):
        Cell(noisy_walk, {"seed": 1})
    with pytest.raises(ValueError, match="trials"):
        Cell(noisy_walk, {}, trials=0)
    with pytest.raises(ValueError, match="seed"):
        Cell(noisy_walk, {}, seed=-1)
    with pytest.raises(ValueError, match="seed"):
        Cell(noisy_walk, {}, seed=())
    with pytest.raises(ValueError, match="cost"):
        Cell(noisy_walk, {}, cost=math.nan)


def test_code_fingerprint_follows_the_source(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "fp_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cells.py").write_text("def f():\n    return {}\n")
    (pkg / "out").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    from fp_pkg.cells import f

    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("")

    def fingerprint() -> str:
        _digest_py_files.cache_clear()
        return code_fingerprint(f)

    before = fingerprint()
    (pkg / "out" / "result.json").write_text("{}")  # outputs inside the package: no change
    (pkg / "out" / "stray.py").write_text("")  # not a sub-package: not its code
    assert fingerprint() == before
    (pkg / "helper.py").write_text("X = 1\n")  # any source file of the package: a change
    after_helper = fingerprint()
    assert after_helper != before
    (pkg / "sub" / "deep.py").write_text("Y = 2\n")  # and of its sub-packages
    assert fingerprint() != after_helper
    _digest_py_files.cache_clear()


# ---------------------------------------------------------------- store


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.dtype == b.dtype and a.shape == b.shape and a.tobytes(order="A") ==
            b.tobytes(order="A") and a.flags.f_contiguous == b.flags.f_contiguous)


def put_get(tmp_path: Path, record: dict) -> dict:
    store = ResultStore(tmp_path / "store")
    store.put({"key": "k" * 32, "function": "mod:fn", "params": {"p": 1}}, record)
    return store.get("mod:fn", "k" * 32)


def test_store_round_trip_is_bit_exact(tmp_path: Path) -> None:
    tiny = np.nextafter(0.0, 1.0)  # the smallest subnormal
    record = {
        "f64": np.array([0.1, -0.0, np.nan, np.inf, -np.inf, tiny, 1e308]),
        "f32": np.arange(5, dtype=np.float32) / 3,
        "big_endian": np.arange(3, dtype=">f8") / 7,
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3) / 9),
        "int8": np.array([-128, 127], dtype=np.int8),
        "bool": np.array([True, False]),
        "complex": np.array([1 + 2j, np.nan - 1j]),
        "empty": np.zeros((0, 3)),
        "zero_d": np.array(2.5),
        "file": np.ones(2),  # a name numpy.savez itself would choke on
        "f32_scalar": np.float32(1 / 3),  # kept as a 0-d array: its dtype survives
        "py_float": 0.1 + 0.2,
        "nan": math.nan, "inf": -math.inf, "neg_zero": -0.0,
        "np_float64": np.float64(1 / 3), "np_int64": np.int64(2**62), "np_bool": np.bool_(True),
        "big_int": 2**70, "text": "ε = 1, ✓", "none": None,
        "nested": {"rows": [{"a": 1.5, "b": [1, 2]}], "flag": False},
    }
    back = put_get(tmp_path, record)
    assert set(back) == set(record)
    for name, v in record.items():
        if isinstance(v, np.ndarray | np.float32):
            assert same_array(np.asarray(v), back[name]), name
        elif isinstance(v, float):
            assert np.float64(v).tobytes() == np.float64(back[name]).tobytes(), name
        else:
            assert back[name] == v and type(back[name]) is type(canonical(v)), name
    assert type(back["np_float64"]) is float and back["np_float64"] == 1 / 3


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(hnp.floating_dtypes(endianness="="), hnp.array_shapes(min_dims=0, max_dims=3,
                                                                      max_side=5)),
       st.floats(allow_nan=True, allow_infinity=True))
def test_store_round_trip_property(tmp_path_factory: pytest.TempPathFactory, a: np.ndarray,
                                   x: float) -> None:
    back = put_get(tmp_path_factory.mktemp("rt"), {"a": a, "x": x})
    assert same_array(a, back["a"])
    assert np.float64(x).tobytes() == np.float64(back["x"]).tobytes()


def test_store_files_are_plain_json_and_npz(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.put({"key": "a" * 32, "function": "pkg.mod:fn", "params": {"eps": 1.0}, "trials": 3,
               "seed": [1, 2]}, {"mean": 0.5, "trace": np.arange(4.0)})
    doc = json.loads((tmp_path / "cells" / "pkg.mod.fn" / f"{'a' * 32}.json").read_text())
    assert doc["params"] == {"eps": 1.0} and doc["values"] == {"mean": 0.5}
    # the checksums, recomputed here with hashlib and json alone (the recipe of FORMAT.md)
    trace_sha = hashlib.sha256(b"<f8|[4]|C|" + np.arange(4.0).tobytes()).hexdigest()
    assert doc["arrays"] == {"trace": {"dtype": "<f8", "shape": [4], "sha256": trace_sha}}
    body = {k: v for k, v in doc.items() if k != "sha256"}
    assert doc["sha256"] == hashlib.sha256(json.dumps(
        body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    with np.load(tmp_path / "cells" / "pkg.mod.fn" / f"{'a' * 32}.npz",
                 allow_pickle=False) as z:
        assert z["trace"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "json_normalize" in (tmp_path / "FORMAT.md").read_text()


def test_table_opens_with_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    store = ResultStore(tmp_path)
    for i, eps in enumerate((0.5, 1.0)):
        store.put({"key": f"{i}" * 32, "function": "m:f", "params": {"eps": eps, "mean": "p"},
                   "trials": 2, "seed": i}, {"mean": eps / 2, "trace": np.ones(3) * eps})
    df = pd.DataFrame(store.table()).sort_values("eps")
    assert df["eps"].tolist() == [0.5, 1.0]
    assert df["values.mean"].tolist() == [0.25, 0.5]  # collides with a parameter: prefixed
    assert df["arrays"].tolist() == [["trace"], ["trace"]]
    # the recipe of docs/sweeps.md, without dpbounds
    cells = [json.loads(p.read_text()) for p in tmp_path.glob("cells/*/*.json")]
    flat = pd.json_normalize(cells).sort_values("params.eps")
    assert flat["values.mean"].tolist() == [0.25, 0.5]


@pytest.mark.parametrize("kind, match", [("object", "object arrays"),
                                         ("not-a-mapping", "mapping"),
                                         ("set", "cannot be part")])
def test_unstorable_records_are_refused(kind: str, match: str) -> None:
    from tests.sweep_cells import bad_record

    with pytest.raises(ValueError, match=match):
        split_record(bad_record(kind))


def test_a_crash_during_the_write_leaves_no_cell(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path)
    real_replace = os.replace

    def crash_on_json(src: str, dst: str) -> None:
        if str(dst).endswith(".json") and "cells" in str(dst):
            raise OSError("disk full (injected)")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_json)
    with pytest.raises(OSError, match="injected"):
        store.put({"key": "c" * 32, "function": "m:f"}, {"x": np.ones(2), "y": 1})
    monkeypatch.setattr(os, "replace", real_replace)
    assert not store.has("m:f", "c" * 32) and store.get("m:f", "c" * 32) is None
    assert list(store.entries()) == []
    assert not list(tmp_path.glob("cells/*/.*.tmp"))  # the temporary was removed


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "cells" / "m.f"
    folder.mkdir(parents=True)
    old, new = folder / ".x.json.1.ab.tmp", folder / ".y.json.2.cd.tmp"
    old.write_text("partial")
    new.write_text("partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert ResultStore(tmp_path).remove_stale_temporaries() == 1
    assert not old.exists() and new.exists()  # one being written right now stays


def test_signed_and_payload_nans_round_trip_bit_exactly(tmp_path: Path) -> None:
    # found by the property test above: JSON has one NaN, so -NaN and payload NaNs must not
    # go through it (they come back as a 0-d float64 array with the same bits)
    import struct

    odd = [struct.unpack("<d", struct.pack("<Q", bits))[0]
           for bits in (0xFFF8000000000000, 0x7FF8000000000001, 0xFFF0000000000001)]
    record = {f"x{i}": v for i, v in enumerate(odd)} | {"plain": math.nan}
    back = put_get(tmp_path, record)
    for name, v in record.items():
        assert np.float64(v).tobytes() == np.float64(back[name]).tobytes(), name
    assert isinstance(back["plain"], float)
