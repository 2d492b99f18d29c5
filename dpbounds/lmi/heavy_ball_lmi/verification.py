r"""The check of a certificate of (22) (Kuru et al., Prop. 3.4) in exact arithmetic, solver-free.

**Verification** never trusts the solver (**[DERIVED]**, ``kuru_et_al.md`` §3, §11):
:func:`verify_certificate` assembles (22) from the given floats in exact rational arithmetic and
decides :math:`G\succeq0`, :math:`P\succeq0` exactly (:mod:`dpbounds.lmi.exact`). A result is
``certified`` only if it is ``verified``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbounds.lmi.exact import certificate_holds
from dpbounds.lmi.heavy_ball_lmi.formulation import _check_certificate, assemble_lmi

__all__ = [
    "Verification",
    "verify_certificate",
]


@dataclass(frozen=True)
class Verification:
    """Result of :func:`verify_certificate`.

    ``ok`` is decided in exact rational arithmetic (:mod:`dpbounds.lmi.exact`); the two smallest
    eigenvalues are float64 values for display.
    """

    ok: bool
    min_eig_lmi: float
    min_eig_P: float
    tolerance: float = 0.0
    method: str = "exact rational arithmetic"

    def __str__(self) -> str:
        return (f"{'verified' if self.ok else 'NOT verified'} ({self.method}): min eig(LMI) = "
                f"{self.min_eig_lmi:.3e}, min eig(P) = {self.min_eig_P:.3e}")


def verify_certificate(
    mu: float, L: float, alpha: float, beta: float, rho: float, P: Any, c0: float, c: float,
) -> Verification:
    r"""Check a certificate of (22) independently of any solver, in exact arithmetic.

    Accepts when :math:`0<\rho<1`, :math:`c_0\ge0`, :math:`c>0`, :math:`P` is symmetric and
    :math:`P\succeq0` and :math:`G\succeq0`, where :math:`G` is (22) assembled from the given
    floats as exact rationals (no rounding; every principal minor :math:`\ge0`).

    Example
    -------
    >>> verify_certificate(0.5, 1.0, 0.5, 0.0, 0.76, [[1.0, 0.0], [0.0, 0.0]], 0.6, 0.01).ok
    True
    """
    G = assemble_lmi(mu, L, alpha, beta, rho, P, c0, c)
    rho, P, c0, c = _check_certificate(rho, P, c0, c)
    return _verification(G, P, certificate_holds(mu, L, alpha, beta, rho, P, c0, c))


def _verification(G: np.ndarray, P: np.ndarray, ok: bool) -> Verification:
    # display values; inf if G does not fit in float64 (the exact check does not need it to)
    eg = float(np.linalg.eigvalsh(G)[0]) if np.all(np.isfinite(G)) else math.inf
    return Verification(ok=bool(ok), min_eig_lmi=eg,
                        min_eig_P=float(np.linalg.eigvalsh(0.5 * (P + P.T))[0]))
