"""The shipped c2 fits (``dpbounds/bounds/nonconvex/c2_fitted.json``) against fresh fits.

The table replaces 40 RDP calibrations on the first draw of notebook 02; it is only allowed
to if every entry is, bit for bit, what :func:`lemma31_constant` computes now. The file is
read here with ``json`` directly (not through the module's loader), and the refit is the
public function, not ``_fitted_c2`` (which reads the table).
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpbounds.bounds.nonconvex import generalized_smoothness as gs

TABLE = Path(gs.__file__).with_name("c2_fitted.json")


def _rows() -> list[list[float]]:
    return json.loads(TABLE.read_text("utf-8"))["fits"]


def _differences(rows: list[list[float]]) -> list[tuple[float, float, float, float]]:
    """(eps, delta, shipped, refit) for every row whose shipped c2 is not the refit's bits."""
    out = []
    for e, dl, c in rows:
        refit = gs.lemma31_constant(e, dl, sampling_rate=0.01, steps=10_000)
        if not (isinstance(c, float) and c == refit):
            out.append((e, dl, c, refit))
    return out


def test_every_shipped_fit_is_the_fit_bit_for_bit() -> None:
    rows = _rows()
    assert _differences(rows) == []  # regenerate: python -m ...generalized_smoothness --write
    # negative control: one entry one ulp off (the last row: the cheapest refit) is caught
    e, dl, c = rows[-1]
    assert _differences([[e, dl, float(np.nextafter(c, math.inf))]]) != []


def test_the_table_covers_the_notebooks_eps_axis() -> None:
    # notebooks/_nb02_bounds_explorer.py: RANGES["eps"] = (1e-2, 10.0), 40 points, capped at
    # 0.99 log(1/delta), at the default delta 1e-5; written out here, not taken from the module
    delta = 1e-5
    axis = np.geomspace(1e-2, min(10.0, 0.99 * math.log(1 / delta)), 40).tolist()
    shipped = {(e, dl) for e, dl, _ in _rows()}
    assert {(e, delta) for e in axis} <= shipped
    assert (1.0, delta) in shipped  # the default eps (the other two panels' c2)
    # control: a point between two grid points is not in the table
    assert (math.sqrt(axis[0] * axis[1]), delta) not in shipped


def test_fitted_c2_reads_the_table_and_fits_anything_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the module (``dpbounds.privacy.calibrate`` as an attribute is the function)
    calibrate = importlib.import_module("dpbounds.privacy.calibrate")

    def no_calibration(*_a: object, **_k: object) -> float:
        raise AssertionError("calibrated")

    gs._fitted_c2.cache_clear()
    monkeypatch.setattr(calibrate, "noise_multiplier_for_epsilon", no_calibration)
    try:
        for e, dl, c in _rows():
            assert gs._fitted_c2(e, dl) == c  # no calibration ran
        # control: a pair off the table calibrates (here: the patched function is reached)
        with pytest.raises(AssertionError, match="calibrated"):
            gs._fitted_c2(0.5, 1e-5)
    finally:
        gs._fitted_c2.cache_clear()
