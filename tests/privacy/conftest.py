"""Fixtures of the privacy tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def theorem27_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without replacement, the accountant as it was before issue 35's integer-moment terms:
    Wang, Balle & Kasiviswanathan (2019) Theorem 27 for the Gaussian and Theorem 9 for the
    discrete Gaussian, alone (every moment term of ``_wor_moment_log_terms`` set to +inf, so
    the termwise minimum keeps the theorem's). For the tests that compare with dp_accounting,
    which implements Theorem 27, and for negative controls written against that accountant."""
    from dpbounds.privacy import rdp

    def no_terms(q: float, rho: float, top: int, table: object = None) -> np.ndarray:
        return np.full(top + 1, np.inf)

    monkeypatch.setattr(rdp, "_wor_moment_log_terms", no_terms)
