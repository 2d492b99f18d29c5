"""Fixtures of the privacy tests."""

from __future__ import annotations

import numpy as np
import pytest

from dpbounds.privacy import rdp

#: the without-replacement RDP vectors remembered by (q, z, orders), as the package has it
REMEMBERED = rdp._wor_rdp_remembered


@pytest.fixture(autouse=True)
def _rdp_computed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here computes the without-replacement RDP anew: these tests replace the
    accountant's internals (negative controls, the code before a change as the oracle), and
    a vector remembered from one version must not answer for another (it did: 9 tests failed,
    by the order they ran in). ``remembered_rdp`` puts the memory back for a test of it."""
    monkeypatch.setattr(rdp, "_wor_rdp_remembered", rdp._wor_rdp_computed)


@pytest.fixture
def remembered_rdp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package's remembered RDP vectors, emptied (for the tests of that memory)."""
    monkeypatch.setattr(rdp, "_wor_rdp_remembered", REMEMBERED)
    REMEMBERED.cache_clear()


@pytest.fixture
def theorem27_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without replacement, the accountant as it was before issue 35's integer-moment terms:
    Wang, Balle & Kasiviswanathan (2019) Theorem 27 for the Gaussian and Theorem 9 for the
    discrete Gaussian, alone (every moment term of ``_wor_moment_log_terms`` set to +inf, so
    the termwise minimum keeps the theorem's). For the tests that compare with dp_accounting,
    which implements Theorem 27, and for negative controls written against that accountant."""
    from dpbounds.privacy import rdp

    def no_terms(q: float, rho: float, top: int, table: object = None, *,
                 continuous: bool = False) -> np.ndarray:
        return np.full(top + 1, np.inf)

    monkeypatch.setattr(rdp, "_wor_moment_log_terms", no_terms)
