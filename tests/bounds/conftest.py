"""Shared fixtures of the bounds tests."""

from __future__ import annotations

import pytest

#: A fixed Lemma 3.1 constant so that the comparison tests do not run the accountant.
C2 = 6.5


@pytest.fixture
def problem() -> dict[str, float]:
    return {"d": 100.0, "N": 1e5, "eps": 1.0, "delta": 1e-5, "G": 1.0, "L": 1.0, "R": 1.0,
            "c2": C2}
