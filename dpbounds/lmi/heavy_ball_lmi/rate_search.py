r"""The search for the minimal certified rate of Kuru et al., Prop. 3.4, with a proven bracket.

The **minimal rate** :math:`\rho^\ast` is the infimum of the certified :math:`\rho`; it need not be
attained (at :math:`\rho^\ast` the LMI is typically singular), so what is returned is a
bracket ``rho_lower <= rho* <= rho`` in which both ends are proven.

Facts the search relies on (**[DERIVED]**, ``kuru_et_al.md`` §3, §11):

* **Bisection is valid**: feasibility is monotone in :math:`\rho`. If :math:`(P,c_0,c)` is feasible
  at :math:`\rho`, then :math:`(P,c_0+c(\rho'^2-\rho^2)/(2(\mu+L)),c)` is feasible at
  :math:`\rho'>\rho`, because
  :math:`\mathrm{blkdiag}(P,0)-X_2+X_0/(2(\mu+L))=
  \mathrm{blkdiag}(P+\mathrm{diag}(\tfrac{\mu L}{\mu+L}-\tfrac\mu2,0),\tfrac1{\mu+L})\succeq0`
  (since :math:`L\ge\mu`).
* **Lower bounds**: quadratics belong to :math:`\mathcal S_{\mu,L}`, so :math:`\rho^\ast` is never
  below :func:`dpbounds.bounds.strongly_convex.heavy_ball.heavy_ball_rate`; the search starts
  there. A
  :math:`\rho` at which the SDP's dual gives a Farkas certificate (checked exactly, see
  :mod:`dpbounds.lmi.exact`) is also below :math:`\rho^\ast`.
* **Acceptance**: a point counts as feasible when the margin :math:`t` is at least
  the requested *relative* margin times the size of the LMI's terms (default 0) and, for
  :math:`t` within :math:`10^{-8}` of the solver's accuracy, the cleaned certificate passes a
  float64 eigenvalue check with a rounding allowance; the smallest such :math:`\rho` is found
  by a safeguarded secant (Illinois) search whose stopping width is
  :math:`\min(\mathrm{tol},\mathrm{rtol}\,(1-\rho))`. The returned certificate is then
  checked exactly (the next feasible point is tried if it fails), and the largest probed
  infeasible :math:`\rho` whose dual matrix passes the exact Farkas check becomes ``rho_lower``.
  At Kuru et al.'s Section-5 point the certified :math:`1-\rho` is within
  :math:`2.4\cdot10^{-4}` (relative) of the minimal rate's at the default ``tol`` (whose bracket
  width :math:`10^{-6}` allows :math:`2.6\cdot10^{-4}`; it was :math:`6\cdot10^{-5}` in the
  former solver coordinates: where in the bracket the search stops is chance); the former
  absolute margin :math:`10^{-7}` gave :math:`1.2\cdot10^{-2}`
  (``bench/bench_rate_map.py --accuracy``).
* **Coordinates**: the SDP is solved in the coordinates of :func:`_coordinates` (a congruence:
  the same certificates); at :math:`L/\mu\ge10^5` a bracket still wider than :math:`10^{-3}`
  of :math:`1-\rho_{lower}` (or no certificate) is searched again in other coordinates and the
  tighter result kept (``_RETRY_*``), then, while wider than :math:`10^{-4}`, up to twice in
  coordinates in which the best certificate so far is the identity (:func:`_whitening`,
  ``_WHITEN_*``); :func:`heavy_ball_lmi_certificate_at` falls back to the latter coordinates
  when given the minimal rate's certificate as ``reference``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from dpbounds._validation import check_closed_interval, check_finite, check_positive
from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate
from dpbounds.lmi.exact import certificate_holds, farkas_holds, quadratic_rate_lower_bound
from dpbounds.lmi.heavy_ball_lmi.certificate import LMICertificate, NoCertificate
from dpbounds.lmi.heavy_ball_lmi.formulation import (
    _EPS,
    _assemble,
    _blocks,
    _check,
    _check_margin,
    lmi_blocks,
)
from dpbounds.lmi.heavy_ball_lmi.solvers import (
    DEFAULT_MARGIN,
    HeavyBallLMI,
    Probe,
    _shared_lmi,
    transform_blocks,
)
from dpbounds.lmi.heavy_ball_lmi.verification import _verification

__all__ = [
    "heavy_ball_lmi_certificate_at",
    "heavy_ball_lmi_rate",
    "naive_heavy_ball_lmi_rate",
]


#: The naive benchmark baseline keeps the old absolute margin (it has no verification step).
_NAIVE_MARGIN = 1e-7


_TOP = 1.0 - 1e-9  # largest rho tried

#: margins (fractions of the maximal one) of the polished certificates, tried in turn
POLISH_FRACTIONS = (0.5, 0.75, 0.9)


def _coordinates(mu: float, alpha: float, beta: float, exponent: float | None = None
                 ) -> np.ndarray:
    r"""The solver's coordinates :math:`\xi=T\zeta` (normalised units, :math:`L=1`).

    :math:`\zeta=(x_k,(x_k-x_{k-1})/s)`, :math:`s=(1-\beta)^p` with :math:`p` from 1/2 at
    :math:`L/\mu\le10^2` to 1 at :math:`L/\mu\ge10^4` (linear in :math:`\log_{10}(L/\mu)`).
    Why: with momentum near 1 the certificate's :math:`P` is nearly
    :math:`p[[1,-1],[-1,1]]` (entries ~40 where :math:`\mathbf 1^\top P\mathbf 1\sim10^{-4}`
    at :math:`L/\mu=3\cdot10^4`), the margin :math:`tI` and the normalisation the solver sees
    are then set by the cancelling entries, and near the minimal rate its answers fail the
    checks: the certified rate jittered by up to 4% in :math:`1-\rho` between neighbouring
    :math:`(\alpha,\beta)`, which the bound (23) amplifies by :math:`2T(1-\rho)` (~10 there).
    Measured (25 random points of the tuner's box per :math:`L/\mu`, largest
    :math:`(\rho-\rho_{lower})/(1-\rho_{lower})`): in the coordinates of (22)
    3e-5, 1, 7.5e-4, 1.3e-2, 1.8e-2, 0.31 at :math:`L/\mu=1,10^2,\dots,10^6`; here
    2.0e-4, 5.4e-6, 2.6e-4, 4.8e-5, 6.9e-5, 8.9e-4. (22) is congruence invariant, so this
    changes only what the solver sees; the certificates are verified in the coordinates of (22).
    """
    p = min(max(0.5 + 0.25 * (-math.log10(mu) - 2.0), 0.5), 1.0) if exponent is None \
        else exponent
    W = np.eye(3)
    W[:2, :2] = np.array([[1.0, 0.0], [1.0, -(1.0 - beta) ** p]])
    return W


def _whitening(cert: LMICertificate) -> np.ndarray:
    r"""Coordinates in which ``cert``'s :math:`P` (normalised units, :math:`c=1`) is the identity.

    :math:`W=\mathrm{blkdiag}(V\Lambda^{-1/2},1)` for :math:`P/L=V\Lambda V^\top` (eigenvalues
    floored at :math:`10^{-12}` of the largest). Where the optimum of long horizons lies at
    :math:`L/\mu=10^6` (:math:`1-\rho\sim10^{-6}`) the cancelling entries of :math:`P` that
    :func:`_coordinates` removes only in part are removed here at one point, so the solver's
    margin and normalisation measure what is left (see :data:`_WHITEN_ROUNDS`).
    """
    w, V = np.linalg.eigh(0.5 * (cert.P + cert.P.T) / cert.L)
    w = np.maximum(w, 1e-12 * float(w.max()))
    W = np.eye(3)
    W[:2, :2] = V / np.sqrt(w)
    return W


# ----------------------------------------------------------------------------- search
class _Search:
    """Probes of one (mu, L, alpha, beta), cached, with the certificates they give.

    ``g(rho) >= 0`` iff the margin reaches the required one **and** the rescaled certificate
    passes the float64 pre-check; the exact checks run only on what is returned.
    """

    def __init__(self, lmi: HeavyBallLMI, mu: float, L: float, alpha: float, beta: float,
                 margin: float, exponent: float | None = None,
                 coords: np.ndarray | None = None) -> None:
        self.lmi, self.point, self.margin = lmi, (mu, L, alpha, beta), margin
        self.W = _coordinates(mu / L, alpha * L, beta, exponent) if coords is None else coords
        self.Ti = np.linalg.inv(self.W[:2, :2])
        # solve in normalised units (exact scaling) and the coordinates W
        lmi.set_point(mu / L, 1.0, alpha * L, beta, coords=self.W)
        self.start = lmi.solves
        self.probes: dict[float, Probe] = {}
        self.ok: dict[float, bool] = {}
        self.m = _blocks(mu, L, alpha, beta)  # original units: what is verified
        # normalised, in the solver's coordinates: what is solved
        self.mn = n = transform_blocks(_blocks(mu / L, 1.0, alpha * L, beta), self.W)
        AB = np.hstack([n["A"], n["B"]])
        self._norms = (np.linalg.norm(n["X0"]), np.linalg.norm(n["X1"]) + np.linalg.norm(n["X2"]),
                       np.linalg.norm(AB) ** 2 + 1.0)
        self._scale = sum(self._norms)

    @property
    def solves(self) -> int:
        return self.lmi.solves - self.start

    def need(self, rho: float) -> float:
        return self.margin * self.lmi.size(rho) if self.margin > 0 else 0.0

    def probe(self, rho: float) -> Probe:
        if rho not in self.probes:
            self.probes[rho] = self.lmi.probe(rho)
        return self.probes[rho]

    def g(self, rho: float) -> float:
        p = self.probe(rho)
        gap = p.t - self.need(rho)
        if rho not in self.ok:
            # a margin far above the solver's accuracy needs no pre-check (the exact check of
            # the returned certificate still decides); small ones are pre-checked here
            self.ok[rho] = bool(gap >= 0 and p.t > 0 and (
                p.t > 1e-8 * self._scale or self._candidate(rho, p.sol, p.t) is not None))
        # a margin the certificate does not deliver counts as (barely) infeasible
        return gap if self.ok[rho] else min(gap, -1e-300)

    def _candidate(self, rho: float, sol: dict | None, t: float) -> tuple | None:
        r"""Clean a solver certificate, pre-check it, and map it to the original units (c = 1).

        In normalised units and the solver's coordinates (:func:`_coordinates`, where it was
        solved) the certificate is symmetrised, :math:`P`
        made positive definite (eigenvalues clipped, plus a few ulps), :math:`c_0\\ge0`, and
        :math:`c` raised to a floor that keeps half the margin; the LMI's smallest eigenvalue
        must then beat a generous allowance for float64 assembly and ``eigvalsh`` errors. It
        maps back to the coordinates of (22) (:math:`P=T^{-\\top}\\tilde PT^{-1}`) and units
        with :math:`c_0=c_0'/L^2`, :math:`c=c'/L` (same :math:`P`: the original LMI
        is congruent to the normalised one by :math:`\\mathrm{diag}(1,1,1/L)`), rescaled to
        :math:`c=1`. The exact check in the original units is made by the caller.
        """
        if sol is None:
            return None
        L, n = self.point[1], self.mn
        P = 0.5 * (sol["P"] + sol["P"].T)
        if not np.all(np.isfinite(P)):
            return None
        w, V = np.linalg.eigh(P)
        w = np.maximum(w, 0.0)
        P = (V * w) @ V.T + 8 * _EPS * max(float(w.max()), 1e-300) * np.eye(2)
        # raising c by delta moves the LMI by delta*(X1 + (1-rho^2) X2): keep half the margin
        scale = float(np.linalg.norm(n["X1"] + (1.0 - rho**2) * n["X2"], 2))
        cn = max(sol["c"], 0.5 * max(t, 0.0) / max(scale, 1e-300))
        c0n = max(sol["c0"], 0.0)
        n0, n1, n2 = self._norms
        G = _assemble(n, rho, P, c0n, cn)
        if not (cn > 0 and np.linalg.eigvalsh(G)[0]
                > 256 * _EPS * (c0n * n0 + cn * n1 + np.linalg.norm(P) * n2)):
            return None
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            c0 = c0n / (L * cn)
            P = self.Ti.T @ P @ self.Ti * (L / cn)  # back to the coordinates of (22)
        P[1, 0] = P[0, 1]  # exactly symmetric
        if not (math.isfinite(c0) and np.all(np.isfinite(P)) and np.linalg.eigvalsh(P)[0] > 0):
            return None
        return P, c0

    def certificate(self, rho: float, polish: bool) -> tuple | None:
        """``(P, c0, solver, verification)`` at a feasible ``rho``, exactly verified, or None."""
        p = self.probe(rho)
        # polished at half the maximal margin, or failing the checks (near the minimal rate
        # the margins are ~1e-10 and the solver's answer can miss them) at larger fractions,
        # before the maximal-margin point itself: each step is a worse bound, not a jump to
        # the worst one
        fractions = POLISH_FRACTIONS if polish else ()
        tries = ((self.lmi.polish, max(f * p.t, self.need(rho))) for f in fractions)
        for solve, t in (*tries, (None, p.t)):
            sol = p.sol if solve is None else solve(rho, t)
            cand = self._candidate(rho, sol, t)
            if cand is not None and certificate_holds(*self.point, rho, cand[0], cand[1], 1.0):
                with np.errstate(over="ignore", invalid="ignore"):
                    G = _assemble(self.m, rho, cand[0], cand[1], 1.0)
                return cand[0], cand[1], p.name, _verification(G, cand[0], True)
        return None

    def farkas_lower(self, below: float) -> tuple[float, np.ndarray] | None:
        r"""The largest probed rho < ``below`` proven infeasible by an exact Farkas check.

        Returns ``(rho, R)`` with :math:`Z=RR^\top` the certificate in the original units.
        """
        L, m = self.point[1], self.m
        cands = sorted((r for r, p in self.probes.items()
                        if r < below and p.t < 0 and p.Z is not None), reverse=True)
        # the closest probes first; a search run to tol = 1e-15 ends with probes the exact
        # check cannot confirm (too near the boundary), and with three tried the bracket fell
        # back to the quadratic rate, 0.548 for 0.677 (fuzz round 8): a farther probe still
        # proves its own, slightly lower, rho
        for r in cands[:30]:
            Z = self.probes[r].Z
            if Z is None:  # filtered above; keeps the type checker informed
                continue
            w, V = np.linalg.eigh(0.5 * (Z + Z.T))
            # original units and coordinates
            R = np.diag([1.0, 1.0, L]) @ self.W @ (V * np.sqrt(np.maximum(w, 0.0)))
            if not np.all(np.isfinite(R)):
                continue
            Zo = R @ R.T  # float pre-filter: <Z, X1 + (1 - rho^2) X2> < 0
            if np.sum(Zo * (m["X1"] + (1 - r * r) * m["X2"])) < 0 and farkas_holds(
                    *self.point, r, R):
                return r, R
        return None


def _check_bracket(bracket: Any) -> tuple[float, float] | None:
    if bracket is None:
        return None
    try:
        lo, hi = bracket
    except (TypeError, ValueError):
        raise ValueError(f"bracket must be a pair (lo, hi), got {bracket!r}") from None
    return float(check_finite("bracket", lo)), float(check_finite("bracket", hi))


def heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6, rtol: float = 1e-3,
    solver: str | None = None, margin: float = DEFAULT_MARGIN, bracket: tuple | None = None,
    lmi: HeavyBallLMI | None = None, polish: bool = True,
) -> LMICertificate | NoCertificate:
    r"""Smallest :math:`\rho` certified by Prop. 3.4 for heavy ball on :math:`\mathcal S_{\mu,L}`.

    Parameters
    ----------
    mu : float
        Strong convexity of the class, ``0 < mu <= L``.
    L : float
        Smoothness of the class.
    alpha : float
        Step size, ``alpha > 0``.
    beta : float
        Momentum, ``0 <= beta < 1``.
    tol : float
        Absolute bracket width: the search stops when its bracket is narrower than
        ``min(tol, rtol * (1 - rho))``, so both :math:`\rho` and the contraction
        :math:`1-\rho` are accurate.
    rtol : float
        Relative bracket width (it matters when :math:`1-\rho` is small, i.e. for
        ill-conditioned problems).
    solver :
        cvxpy solver name; default: Clarabel directly (then MOSEK if installed, Clarabel
        through cvxpy, SCS).
    margin :
        Required smallest eigenvalue of (22) relative to the size of its terms (in ``[0, 1)``;
        normalised units, :math:`P_{11}+P_{22}+c_0+c=1`). 0 (default) accepts any certificate
        that passes the checks; a positive margin buys robustness and costs a larger
        :math:`\rho` (``rho_lower`` stays a bound on the margin-free minimum). Whatever the
        margin, the returned certificate is verified exactly, or there is none.
    bracket :
        Optional ``(lo, hi)`` guess (e.g. from a neighbouring grid point); it is checked, and
        widened when it does not bracket.
    lmi :
        A :class:`HeavyBallLMI` to reuse (compiled once); created when omitted.
    polish :
        Re-solve once at the final :math:`\rho` for the certificate with the largest :math:`c`
        (half the margin), which keeps :math:`P/c` and the bound (23) small. Off in rate maps.
        At :math:`L/\mu\ge10^5` a bracket wider than :math:`10^{-3}` of
        :math:`1-\rho_{lower}` makes the search run again in other coordinates (about twice
        the solves there); the smaller certified rate and the larger proven lower end are kept.
        While it is still wider than :math:`10^{-4}`, up to two more searches run in
        coordinates in which the best certificate so far is the identity.

    Returns
    -------
    LMICertificate or NoCertificate
        A certificate verified in exact arithmetic with a proven bracket
        ``rho_lower <= rho* <= rho`` of the minimal rate, or a :class:`NoCertificate` (never a
        number) when no :math:`\rho<1` is certified.

    Example
    -------
    >>> c = heavy_ball_lmi_rate(0.02, 5.1028, 0.1 / 5.1028, 0.9)  # Kuru et al., Section 5
    >>> c.verified, round(1 - c.rho, 5), c.rho - c.rho_lower < 1e-6
    (True, 0.0039, True)
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    tol = float(check_positive("tol", tol))
    rtol = float(check_positive("rtol", rtol))
    margin = _check_margin(margin)
    bracket = _check_bracket(bracket)
    rho_q = float(heavy_ball_rate(alpha, beta, mu, L))
    if rho_q >= 1.0:
        # alpha mu below float64's resolution: the rate is 1 - O(alpha mu), which rounds to
        # 1; "does not contract" was said of a method that does (fuzz round 14)
        why = (f"its quadratic rate is 1 to float64's precision (alpha mu = {alpha * mu:.3g}: "
               "it contracts by less than 1e-16 a step), too slow for any certificate"
               if rho_q == 1.0 and 0.0 < alpha * mu < 1e-15 and 0.0 <= beta < 1.0 else
               f"heavy ball does not contract on a quadratic (quadratic rate {rho_q:.6g} >= 1)")
        return NoCertificate(mu, L, alpha, beta, why, rho_q, 0)
    # lmi=3 raised AttributeError, solver=[] "unhashable type" (fuzz round 7)
    if solver is not None and not isinstance(solver, str):
        raise ValueError(f"solver must be a cvxpy solver's name or None, got {solver!r}")
    if lmi is not None and not isinstance(lmi, HeavyBallLMI):
        raise ValueError(f"lmi must be a HeavyBallLMI or None, got {type(lmi).__name__}")
    lmi = lmi or _shared_lmi(solver)
    args = (mu, L, alpha, beta, tol, rtol, margin, bracket, lmi, polish, rho_q)
    res = _rate_search(*args)
    if mu / L > _RETRY_BELOW_MU_OVER_L:
        return res
    # L/mu >= 1e5 with a wide bracket (or none): the search again in other coordinates
    if _wide(res, _RETRY_BRACKET):
        res = _tighter(res, _rate_search(*args, exponent=_RETRY_EXPONENT))
    # and in coordinates in which the best certificate so far is the identity
    for _ in range(_WHITEN_ROUNDS):
        if not (isinstance(res, LMICertificate) and _wide(res, _WHITEN_BRACKET)):
            break
        res = _tighter(res, _rate_search(*args, coords=_whitening(res)))
    return res


def _wide(res: LMICertificate | NoCertificate, rel: float) -> bool:
    """No certificate, or a bracket wider than ``rel`` times ``1 - rho_lower``."""
    return not isinstance(res, LMICertificate) or res.rho - res.rho_lower > rel * (
        1.0 - res.rho_lower)


def _tighter(res: LMICertificate | NoCertificate, other: LMICertificate | NoCertificate
             ) -> LMICertificate | NoCertificate:
    """The smaller certified rate and the larger proven lower end of two searches."""
    if not isinstance(other, LMICertificate):
        return replace(res, solves=res.solves + other.solves)
    if not isinstance(res, LMICertificate):
        return replace(other, solves=res.solves + other.solves)
    best, low = (other, res) if other.rho < res.rho else (res, other)
    if low.rho_lower > best.rho_lower:  # both ends are proven: keep the narrower bracket
        best = replace(best, rho_lower=low.rho_lower, lower_bound=low.lower_bound,
                       farkas=low.farkas)
    return replace(best, solves=res.solves + other.solves)


#: the retry of :func:`heavy_ball_lmi_rate` in other coordinates (L/mu >= 1e5 only): the rate
#: search is repeated with exponent 0.75 when the bracket is wider than 1e-3 of 1 - rho_lower.
#: Where the optimum of long horizons lies at L/mu = 1e6 (1 - rho ~ 1.6e-6), the exponent 1
#: certified 12 of 25 points of a patch (median bracket 71%), 0.75 all 25 (median 0.5%); over
#: the whole reach 0.75 alone is worse (largest bracket 1.9e-2 against 1.2e-3), hence a retry
_RETRY_BELOW_MU_OVER_L, _RETRY_BRACKET, _RETRY_EXPONENT = 1e-5, 1e-3, 0.75

#: then, while the bracket is wider than 1e-4 of 1 - rho_lower, up to two searches in the
#: coordinates of :func:`_whitening` (the best certificate so far made the identity). Measured
#: at L/mu = 1e6 (9 x 9 patches around the oracle's best points of bench problems 17-19, with
#: the offset certificates of :func:`heavy_ball_lmi_certificate_at`'s ``reference``): every
#: point certified, and the patch's smallest bound 1.8% lower at 17 and 5.5% at 18 than with
#: whitened offset certificates alone (no rounds)
_WHITEN_ROUNDS, _WHITEN_BRACKET = 2, 1e-4


def _rate_search(mu: float, L: float, alpha: float, beta: float, tol: float, rtol: float,
                 margin: float, bracket: tuple | None, lmi: HeavyBallLMI, polish: bool,
                 rho_q: float, exponent: float | None = None, coords: np.ndarray | None = None
                 ) -> LMICertificate | NoCertificate:
    """The search of :func:`heavy_ball_lmi_rate` in the coordinates of ``exponent`` (or
    ``coords``)."""
    s = _Search(lmi, mu, L, alpha, beta, margin, exponent, coords)
    g = s.g

    # --- bracket [lo, hi] with g(lo) < 0 <= g(hi)
    lo, hi = rho_q, _TOP
    if bracket is not None:
        blo, bhi = max(bracket[0], rho_q), min(bracket[1], _TOP)
        if blo < bhi:
            if g(bhi) >= 0:
                hi = bhi
                if blo > rho_q and g(blo) < 0:
                    lo = blo
            else:
                lo = bhi
    if hi == _TOP and g(_TOP) < 0:
        why = ("proven infeasible (exact Farkas certificate)"
               if s.farkas_lower(math.inf) is not None else "not certified")
        if margin > 0:
            why += f" with relative margin {margin:g}"
        return NoCertificate(mu, L, alpha, beta, f"LMI (22) {why} at rho = 1 - 1e-9", rho_q,
                             s.solves)
    g_lo = g(lo)
    if g_lo >= 0:  # certified at the quadratic rate itself: the bound is tight
        hi = lo
    else:
        g_hi = g(hi)
        last, width_before, it = 0, hi - lo, 0
        while hi - lo > min(tol, rtol * (1.0 - hi)) and it < 200:
            # Illinois (regula falsi, halving the stale end); bisection if the bracket stalls
            it += 1
            w = hi - lo
            if it % 3 == 0 and w > 0.5 * width_before:
                x = 0.5 * (lo + hi)
            else:
                x = hi - g_hi * w / (g_hi - g_lo)
                x = min(max(x, lo + 0.02 * w), hi - 0.02 * w)
            if it % 3 == 0:
                width_before = w
            gx = g(x)
            if gx >= 0:
                hi, g_hi = x, gx
                if last == 1:
                    g_lo *= 0.5
                last = 1
            else:
                lo, g_lo = x, gx
                if last == -1:
                    g_hi *= 0.5
                last = -1
    # the smallest feasible point whose certificate passes the exact check (nearly always hi)
    for r in sorted(r for r, ok in s.ok.items() if ok and r >= hi)[:3]:
        cert = s.certificate(r, polish)
        if cert is not None:
            break
    else:
        return NoCertificate(mu, L, alpha, beta, "no certificate passed the exact check", rho_q,
                             s.solves)
    P, c0, name, ver = cert
    farkas = s.farkas_lower(r)
    # the exact quadratic bound costs a millisecond: only when it may be the larger one
    q_low = quadratic_rate_lower_bound(mu, L, alpha, beta) if (
        farkas is None or farkas[0] < rho_q * (1 + 1e-6)) else -math.inf
    if farkas is not None and farkas[0] > q_low:
        return LMICertificate(mu, L, alpha, beta, r, P, c0, 1.0, farkas[0], ver, rho_q, name,
                              s.solves, lower_bound="exact Farkas certificate",
                              farkas=farkas[1])
    return LMICertificate(mu, L, alpha, beta, r, P, c0, 1.0, q_low, ver, rho_q, name, s.solves)


def heavy_ball_lmi_certificate_at(
    mu: float, L: float, alpha: float, beta: float, rho: float, *,
    lmi: HeavyBallLMI | None = None, solver: str | None = None, margin: float = DEFAULT_MARGIN,
    reference: LMICertificate | None = None,
) -> LMICertificate | NoCertificate:
    r"""A verified certificate of (22) at a *given* :math:`\rho` (not the smallest one).

    Among the certificates with half the maximal margin it takes the one with the largest
    :math:`c` (smallest :math:`P/c`, :math:`c_0/c`), which keeps the bound (23) small. Above the
    minimal rate this trades a slower :math:`\rho` for a better-conditioned :math:`P`.
    ``rho_lower`` is the quadratic rate rounded down (no search is made); ``margin`` is the
    relative margin of :func:`heavy_ball_lmi_rate`. The certificate is verified exactly, or a
    :class:`NoCertificate` is returned.

    ``reference`` (optional): a certificate of the same :math:`(\mu,L,\alpha,\beta)`, e.g. the
    minimal rate's. When the solver's usual coordinates give no certificate, the SDP is solved
    again in coordinates in which ``reference.P`` is the identity (a congruence: the same
    certificates, verified the same way). At :math:`L/\mu=10^6`, near the best points of the
    tuner's bench problems 17-19, the usual coordinates certified 2-8 of 81 points at the rates
    just above the minimal one, and with the reference all 81.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    rho = float(check_finite("rho", rho))
    if not 0 < rho < 1:
        raise ValueError(f"rho must lie in (0, 1), got {rho}")
    margin = _check_margin(margin)
    if reference is not None and not (
            isinstance(reference, LMICertificate)
            and (reference.mu, reference.L, reference.alpha, reference.beta)
            == (mu, L, alpha, beta)
            and np.shape(reference.P) == (2, 2) and np.all(np.isfinite(reference.P))
            and np.linalg.eigvalsh(0.5 * (reference.P + np.transpose(reference.P)))[0] > 0):
        raise ValueError("reference must be an LMICertificate of the same (mu, L, alpha, beta) "
                         f"with a positive definite P, got {type(reference).__name__}")
    rho_q, q_low = float(heavy_ball_rate(alpha, beta, mu, L)), quadratic_rate_lower_bound(
        mu, L, alpha, beta)
    if rho < q_low:  # quadratics alone rule it out: no solve needed
        return NoCertificate(mu, L, alpha, beta, f"rho = {rho:.6g} is below the quadratic rate "
                             f"{rho_q:.6g}", rho_q, 0)
    lmi = lmi or _shared_lmi(solver)
    solves, cert = 0, None
    for whitened in (False, True):  # the usual coordinates, then the reference's
        if whitened and reference is None:
            break
        s = _Search(lmi, mu, L, alpha, beta, margin,
                    coords=_whitening(reference) if whitened and reference is not None
                    else None)
        cert = s.certificate(rho, polish=True) if s.g(rho) >= 0 else None
        solves += s.solves
        if cert is not None:
            break
    if cert is None:
        return NoCertificate(mu, L, alpha, beta, f"LMI (22) not certified at rho = {rho:.6g}",
                             rho_q, solves)
    P, c0, name, ver = cert
    return LMICertificate(mu, L, alpha, beta, rho, P, c0, 1.0, min(q_low, rho), ver, rho_q,
                          name, solves)


def naive_heavy_ball_lmi_rate(
    mu: float, L: float, alpha: float, beta: float, *, tol: float = 1e-6,
    solver: str = "CLARABEL",
) -> float | None:
    r"""Baseline for benchmarks: rebuild the cvxpy problem and solve it at every bisection step.

    Plain bisection on :math:`\rho\in(0,1)` of the feasibility problem (22) with :math:`c=1`
    (constants, no parameters, no warm start, absolute margin :math:`10^{-7}`, solver
    defaults, no verification). Returns the rate or ``None``.
    """
    mu, L, alpha, beta = _check(mu, L, alpha, beta)
    # below about 1e-15 the bisection cannot split its bracket any further (it never ended)
    tol = float(check_closed_interval("tol", tol, 1e-15, 1.0))
    m = lmi_blocks(mu, L, alpha, beta)
    A, B = m["A"], m["B"]
    import cvxpy as cp  # here: importing the rate search must not import cvxpy (~1 CPU-s)

    def feasible(rho: float) -> bool:
        P = cp.Variable((2, 2), symmetric=True)
        c0 = cp.Variable(nonneg=True)
        Phi = cp.bmat([[A.T @ P @ A - rho**2 * P, A.T @ P @ B], [B.T @ P @ A, B.T @ P @ B]])
        G = c0 * m["X0"] + m["X1"] + (1 - rho**2) * m["X2"] - Phi
        prob = cp.Problem(cp.Minimize(0), [0.5 * (G + G.T) >> _NAIVE_MARGIN * np.eye(3),
                                           P >> 0])
        try:
            prob.solve(solver=solver)
        except cp.error.SolverError:
            return False
        return prob.status == "optimal"

    lo, hi = 0.0, _TOP
    if not feasible(hi):
        return None
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi
