"""The sweep store's integrity promise (issue 36): unkeyed checksums catch accidents, not
forgery; a keyed store (HMAC-SHA256 under a secret key) refuses a forged cell.

The forger here follows the documented recipe (``FORMAT.md``: the SHA-256 of
``json.dumps(doc without sha256, sort_keys=True, separators=(",", ":"))``) with hashlib and
hmac directly, sharing no helper with :mod:`dpbounds.sweep.store`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging

import numpy as np
import pytest

from dpbounds.sweep.store import KEY_ENV, ResultStore

FUNCTION, KEY = "m:f", "0" * 32


def _cell(store: ResultStore) -> None:
    store.put({"key": KEY, "function": FUNCTION, "params": {"x": 0.1}},
              {"y": 0.25, "z": np.arange(3.0)})


def _path(store: ResultStore):
    return store.path / "cells" / "m.f" / f"{KEY}.json"


def _text(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()


def _forge(store: ResultStore, y: float, drop_mac: bool = False) -> None:
    """Change the stored value and recompute the unkeyed checksum, as anyone can."""
    p = _path(store)
    doc = json.loads(p.read_text())
    doc["values"]["y"] = y
    if drop_mac:
        doc.pop("hmac_sha256", None)
    doc.pop("sha256")
    doc["sha256"] = hashlib.sha256(_text(doc)).hexdigest()
    p.write_text(json.dumps(doc, indent=1))


def test_an_unkeyed_store_serves_a_forged_value(tmp_path):
    """The limitation the docs now state (the negative control of the keyed mode)."""
    store = ResultStore(tmp_path, key=None)
    _cell(store)
    _forge(store, 99.0)
    assert store.get(FUNCTION, KEY)["y"] == 99.0


@pytest.mark.parametrize("drop_mac", [False, True])
def test_a_keyed_store_refuses_a_forged_value(tmp_path, caplog, drop_mac):
    store = ResultStore(tmp_path, key="secret")
    _cell(store)
    assert store.get(FUNCTION, KEY)["y"] == 0.25
    _forge(store, 99.0, drop_mac=drop_mac)
    with caplog.at_level(logging.WARNING, logger="dpbounds.sweep"):
        assert store.get(FUNCTION, KEY) is None
    assert "HMAC" in caplog.text and KEY in caplog.text
    # the sha256 the forger wrote is right: an unkeyed reader is fooled, the keyed one is not
    assert ResultStore(tmp_path, key=None).get(FUNCTION, KEY)["y"] == 99.0


def test_the_hmac_is_the_documented_one_and_needs_the_same_key(tmp_path):
    keyed = ResultStore(tmp_path, key=b"k1")
    _cell(keyed)
    doc = json.loads(_path(keyed).read_text())
    body = {k: v for k, v in doc.items() if k not in ("sha256", "hmac_sha256")}
    assert doc["hmac_sha256"] == hmac.new(b"k1", _text(body), hashlib.sha256).hexdigest()
    # the arrays' checksums are inside the document: the HMAC covers the NPZ as well
    assert set(doc["arrays"]) == {"z"} and len(doc["arrays"]["z"]["sha256"]) == 64
    np.testing.assert_array_equal(keyed.get(FUNCTION, KEY)["z"], np.arange(3.0))
    assert ResultStore(tmp_path, key=None).get(FUNCTION, KEY)["y"] == 0.25  # sha256 still valid
    assert ResultStore(tmp_path, key=b"k2").get(FUNCTION, KEY) is None  # another key
    plain = tmp_path / "plain"
    _cell(ResultStore(plain, key=None))
    assert ResultStore(plain, key=b"k1").get(FUNCTION, KEY) is None  # written without a key


def test_the_key_from_the_environment_and_never_in_repr(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "from-env")
    store = ResultStore(tmp_path)
    assert store.keyed and "from-env" not in repr(store) and "keyed" in repr(store)
    _cell(store)
    assert ResultStore(tmp_path, key="from-env").get(FUNCTION, KEY)["y"] == 0.25
    monkeypatch.setenv(KEY_ENV, "")
    assert not ResultStore(tmp_path).keyed  # empty: unset
    with pytest.raises(ValueError, match="key"):
        ResultStore(tmp_path, key="")
