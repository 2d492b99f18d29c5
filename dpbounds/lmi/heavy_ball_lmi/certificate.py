r"""A certificate of Kuru et al., Prop. 3.4 (or its absence) and the bound (23) it proves.

What the rate search returns:
:class:`LMICertificate` carries a verified :math:`(\rho,P,c_0,c)` with a proven bracket
``rho_lower <= rho* <= rho`` of the minimal rate; :class:`NoCertificate` says that none with
:math:`\rho<1` exists. :func:`heavy_ball_lmi_bound` is the bound re-derived from Lemma B.1
(**[DERIVED]**); :func:`heavy_ball_lmi_bound_as_printed` is (23) as printed (**[VERBATIM]**;
erratum 11 of ``docs/errata.md``: the printed noise term carries an extra factor :math:`d`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpbounds._validation import check_nonnegative
from dpbounds.bounds.strongly_convex.heavy_ball import SOURCE_PROP34
from dpbounds.lmi.heavy_ball_lmi.verification import Verification
from dpbounds.provenance import Source

__all__ = [
    "LMICertificate",
    "NoCertificate",
    "heavy_ball_lmi_bound",
    "heavy_ball_lmi_bound_as_printed",
]


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LMICertificate:
    r"""A verified rate certificate of Proposition 3.4 (normalised to :math:`c=1`).

    Attributes
    ----------
    rho:
        The certified rate: the smallest found (up to the search tolerance) whose certificate
        passed the checks.
    P, c0, c:
        The certificate of (22).
    rho_lower:
        A proven lower bound on the minimal rate :math:`\rho^\ast`: the largest :math:`\rho`
        proven infeasible by an exactly checked Farkas certificate, or the quadratic rate
        rounded down (see ``lower_bound``). So ``rho_lower <= rho* <= rho``.
    verification:
        Exact check of the certificate (:func:`verify_certificate`); always ``ok``.
    quadratic_rate:
        The closed-form heavy-ball rate on quadratics (a lower bound).
    solves:
        Number of SDP solves used.
    lower_bound:
        What proves ``rho_lower``.
    farkas:
        For a Farkas lower bound, the 3 x k matrix :math:`R` with :math:`Z=RR^\top` the
        certificate (:func:`dpbounds.lmi.exact.farkas_holds`), else ``None``.
    """

    mu: float
    L: float
    alpha: float
    beta: float
    rho: float
    P: np.ndarray
    c0: float
    c: float
    rho_lower: float
    verification: Verification
    quadratic_rate: float
    solver: str
    solves: int
    source: Source = SOURCE_PROP34
    lower_bound: str = "quadratic rate (rounded down)"
    farkas: np.ndarray | None = None
    certified: bool = field(default=True, init=False)

    @property
    def verified(self) -> bool:
        return self.verification.ok

    def bound(self, t: Any, **kwargs: Any) -> Any:
        """The derived noise bound (see :func:`heavy_ball_lmi_bound`) at iteration(s) ``t``."""
        return heavy_ball_lmi_bound(self, t, **kwargs)

    def __str__(self) -> str:
        return (f"Prop. 3.4 certificate: rho = {self.rho:.9f} (minimal rate in "
                f"[{self.rho_lower:.9f}, {self.rho:.9f}], lower end: {self.lower_bound}; "
                f"quadratic rate {self.quadratic_rate:.9f}); "
                f"P = {np.array2string(self.P, precision=4)}, c0 = {self.c0:.4g}, c = 1; "
                f"{self.verification}")


@dataclass(frozen=True)
class NoCertificate:
    """Proposition 3.4 gives no certificate with rho < 1 for these (alpha, beta).

    There is deliberately no ``rho`` number here; ``certified`` is False.
    """

    mu: float
    L: float
    alpha: float
    beta: float
    reason: str
    quadratic_rate: float
    solves: int
    source: Source = SOURCE_PROP34
    certified: bool = field(default=False, init=False)
    verified: bool = field(default=False, init=False)

    def __str__(self) -> str:
        from dpbounds._numfmt import shown

        return (f"no certificate below rho = 1 for alpha = {shown(self.alpha, 4)}, beta = "
                f"{shown(self.beta, 4)} ({self.reason})")


# ----------------------------------------------------------------------------- bounds (23)
def _bound_inputs(cert: Any, t: Any, **values: Any) -> tuple[np.ndarray, dict[str, float]]:
    if not isinstance(cert, LMICertificate | NoCertificate):
        raise ValueError(f"cert must be an LMICertificate, got {type(cert).__name__}")
    if not cert.certified:
        raise ValueError("no certificate: bound (23) needs rho < 1")
    t = np.asarray(check_nonnegative("t", t), dtype=float)
    return t, {k: float(check_nonnegative(k, v)) for k, v in values.items()}


def _geometric_terms(rho: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rho^(2t) and (1 - rho^(2t)) / (1 - rho^2), without cancellation for rho near 1."""
    log_r2 = 2.0 * math.log(rho)
    decay = np.exp(t * log_r2)
    return decay, -np.expm1(t * log_r2) / -math.expm1(log_r2)


def _finite(out: np.ndarray, what: str) -> Any:
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{what} overflows float64 at these inputs (initial error or noise "
                         "level too large)")
    return float(out) if out.ndim == 0 else out


def _lyapunov0(cert: LMICertificate, distance_sq: float, f_gap: float) -> float:
    # x_{-1} = x_0: V_P = (P11 + 2 P12 + P22) ||x0 - x*||^2
    return float(np.sum(cert.P)) * distance_sq + cert.c * f_gap


def heavy_ball_lmi_bound_as_printed(
    cert: LMICertificate, t: Any, *, initial_distance_sq: float, initial_gap: float,
    d: int, noise_level: float,
) -> Any:
    r"""(23) as printed (VERBATIM), with :math:`x_{-1}=x_0`.

    .. math:: \rho^{2t}\frac1cV_{P,c}(\xi_0)+\frac{1-\rho^{2t}}{1-\rho^2}\frac{Ld\alpha^2}{2}
              \mathcal E_T\Big(1+\frac{2P_{12}^2}{P_{22}cL+2|P|}\Big)

    ``noise_level`` is :math:`\mathcal E_T` of (20) (already a trace over the ``d`` coordinates, so
    the printed :math:`d` makes the term ``d`` times larger than Lemma B.1 needs).
    """
    from dpbounds._validation import check_int

    t, v = _bound_inputs(cert, t, initial_distance_sq=initial_distance_sq,
                         initial_gap=initial_gap, noise_level=noise_level)
    d = check_int("d", d, minimum=1)
    rho, P, c = cert.rho, cert.P, cert.c
    det = float(np.linalg.det(P))
    den = P[1, 1] * c * cert.L + 2.0 * det
    extra = 0.0 if den == 0 else 2.0 * P[0, 1] ** 2 / den
    decay, geo = _geometric_terms(rho, t)
    v0 = _lyapunov0(cert, v["initial_distance_sq"], v["initial_gap"])
    with np.errstate(over="ignore", invalid="ignore"):
        out = decay * v0 / c + geo * (
            cert.L * d * cert.alpha**2 / 2 * v["noise_level"] * (1 + extra))
    return _finite(out, "bound (23)")


def heavy_ball_lmi_bound(
    cert: LMICertificate, t: Any, *, initial_distance_sq: float, initial_gap: float,
    noise_second_moment: float,
) -> Any:
    r"""Expected suboptimality of DP-SHB from a Prop. 3.4 certificate **[DERIVED]**.

    From (22) and Lemma B.1 (with :math:`x_{-1}=x_0`):
    :math:`\mathbb E V_{P,c}(\xi_{t+1})\le\rho^2\mathbb EV_{P,c}(\xi_t)
    +(\alpha^2P_{11}+cL\alpha^2/2)\mathbb E\lVert w_t\rVert^2`, and
    :math:`c(F-F^\ast)\le V_{P,c}`, so

    .. math:: \mathbb E[F(x_t)]-F^\ast\le\rho^{2t}\frac{V_{P,c}(\xi_0)}c
              +\frac{1-\rho^{2t}}{1-\rho^2}\Big(\frac{\alpha^2P_{11}}c+\frac{L\alpha^2}2\Big)
              \mathbb E\lVert w\rVert^2 .

    ``noise_second_moment`` is :math:`\mathbb E\lVert w_t\rVert^2` (e.g. :math:`\mathcal E_T` of
    (20): :math:`2db^2+\sigma_s^2`). The noise term's :math:`\alpha^2P_{11}/c` (noise entering
    :math:`V_P`) differs from the printed factor of (23); see
    :func:`heavy_ball_lmi_bound_as_printed`.
    """
    t, v = _bound_inputs(cert, t, initial_distance_sq=initial_distance_sq,
                         initial_gap=initial_gap, noise_second_moment=noise_second_moment)
    rho, c = cert.rho, cert.c
    decay, geo = _geometric_terms(rho, t)
    v0 = _lyapunov0(cert, v["initial_distance_sq"], v["initial_gap"])
    coef = cert.alpha**2 * cert.P[0, 0] / c + cert.L * cert.alpha**2 / 2
    with np.errstate(over="ignore", invalid="ignore"):
        out = decay * v0 / c + geo * coef * v["noise_second_moment"]
    return _finite(out, "bound")
