"""An independent oracle for the Gaussian's RDP without replacement (replace-one), written
from the theorems alone (no code of :mod:`dpbounds.privacy`): per integer order the log of

    1 + sum_{j >= 2} C(alpha, j) min{own_j, thm27_j, thm9_j},

each a bound on the same j-th term of WBK19's binomial expansion (the smallest one is kept):

* own_j (issue 35, DERIVED; ``without_replacement_discrete_gaussian_rdp``'s docstring):
  q^j [(1 - q) U_j + q V_j] with U_2 = 2 e^{2 rho} - 2 e^rho, U_{2m} = 4^m D_{2m},
  V_{2m} = D_{2m}, odd j the geometric means of their even neighbours, and above level
  ``LEVELS`` the generic U_j = 2^j (e^{j(j-1) rho} + 1), V_j = e^{j(j-1) rho} + 1, each
  also capped by the log-normal bound (issue 36, DERIVED: ``_log_lognormal_moment``)
  U_j = 2^j B_j, V_j = B_j;
* thm27_j (Wang, Balle & Kasiviswanathan 2019, Theorem 27, j >= 3): 4 q^j sqrt(D_lo D_hi),
  lo, hi the even numbers next to j (levels up to ``LEVELS``);
* thm9_j (their Theorem 9): q^2 min{4 (e^{2 rho} - 1), 2 e^{2 rho}}, and 2 q^j e^{(j-1) j rho};

D_n = sum_i C(n, i) (-1)^{n-i} e^{i(i-1) rho} the Gaussian's forward differences, computed
in mpmath at a precision covering their cancellation; rho = 1 / (2 z^2). Fractional orders
interpolate log A linearly between integers (WBK19 Cor. 10); every order is capped by the
Gaussian's alpha rho. Used by the tests that compare the package's ledgers with an
independent accountant (``test_run_privacy``, ``test_wor_small_eps``).
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
from scipy.special import gammaln, logsumexp

LEVELS = 256


#: the longest table of log D_n computed so far, per z: D_n uses only the first n + 1
#: exponentials, so a shorter table is a prefix of a longer one (the longer one's precision
#: covers more cancellation; checked bit for bit against one table per length at the noise of
#: tests/privacy/test_table_cli.py and a few others). Without it every integer order of a curve
#: rebuilt the table from scratch (O(top^3) mpmath work: ~19 s for orders up to 256).
_LOG_D_TABLES: dict[float, tuple[float, ...]] = {}


def _log_d(z: float, top: int) -> tuple[float, ...]:
    """log D_n for n = 0..top (-inf where D_n = 0)."""
    have = _LOG_D_TABLES.get(z)
    if have is None or len(have) <= top:
        have = _LOG_D_TABLES[z] = _log_d_table(z, top)
    return have[: top + 1]


def _log_d_table(z: float, top: int) -> tuple[float, ...]:
    """log D_n for n = 0..top (-inf where D_n = 0), in one pass."""
    rho = 1.0 / (2.0 * z * z)
    with mp.workdps(30 + int((top + 1) * math.log10(2.0 + 3.0 * z))):
        r = mp.mpf(rho)
        row = [mp.exp(i * (i - 1) * r) for i in range(top + 1)]
        out = [-math.inf] * (top + 1)
        for n in range(1, top + 1):
            row = [row[i + 1] - row[i] for i in range(len(row) - 1)]
            if row[0] > 0:
                out[n] = float(mp.log(row[0]))
    return tuple(out)


def _log_lognormal_moment(s2: float, n: int) -> float:
    """log of a bound on E|L - 1|^n, L = e^W, W ~ N(-s2/2, s2) (n >= 1; +inf for n = 0):
    |e^w - 1| <= |w| e^|w|; Cauchy-Schwarz splits E[|W|^n e^(n|W|)] into
    sqrt(E W^(2n)) sqrt(E e^(2n|W|)); E e^(2n|W|) <= E e^(2nW) + E e^(-2nW)
    = e^(2 n^2 s2 - n s2) + e^(2 n^2 s2 + n s2); Minkowski on W = s X - s2/2 gives
    E W^(2n) <= (s ((2n - 1)!!)^(1/(2n)) + s2/2)^(2n). Written from that chain here."""
    if n < 1:
        return math.inf
    s = math.sqrt(s2)
    log_double_factorial = math.lgamma(2 * n + 1) - n * math.log(2.0) - math.lgamma(n + 1)
    log_even_moment = 2 * n * math.log(s * math.exp(log_double_factorial / (2 * n)) + s2 / 2)
    # log(e^(2 n^2 s2 - n s2) + e^(2 n^2 s2 + n s2)), written to avoid cosh's overflow
    log_exp_moment = 2 * n * n * s2 + n * s2 + math.log1p(math.exp(-2 * n * s2))
    return 0.5 * (log_even_moment + log_exp_moment)


@functools.lru_cache(maxsize=16)
def _log_terms(q: float, z: float, top: int) -> np.ndarray:
    """log of min{own_j, thm27_j, thm9_j} for j = 0..top (entries 0, 1 unused)."""
    rho = 1.0 / (2.0 * z * z)
    levels = min(top + 1, LEVELS)
    d = np.full(top + 2, np.inf)
    d[: levels + 1] = _log_d(z, levels)
    j = np.arange(top + 1, dtype=float)
    lq, l1q = math.log(q), math.log1p(-q)
    gen_v = np.logaddexp(j * (j - 1) * rho, 0.0)
    u = np.full(top + 2, np.inf)
    v = np.full(top + 2, np.inf)
    for n in range(2, levels + 1, 2):  # even levels, then U_2 by its supremum
        v[n] = d[n]
        u[n] = n / 2 * math.log(4.0) + d[n]
    u[2] = math.log(2.0 * math.exp(rho) * math.expm1(rho))
    for n in range(3, levels, 2):  # odd: Cauchy-Schwarz between the even neighbours
        v[n] = 0.5 * (v[n - 1] + v[n + 1])
        u[n] = 0.5 * (u[n - 1] + u[n + 1])
    u, v = u[: top + 1], v[: top + 1]
    u = np.minimum(u, j * math.log(2.0) + gen_v)
    v = np.minimum(v, gen_v)
    lognormal = np.array([_log_lognormal_moment(2.0 * rho, int(n)) for n in range(top + 1)])
    u = np.minimum(u, j * math.log(2.0) + lognormal)
    v = np.minimum(v, lognormal)
    own = np.logaddexp(l1q + u, lq + v) + j * lq
    thm27 = np.full(top + 1, np.inf)
    for n in range(3, min(top, levels) + 1):
        lo, hi = 2 * (n // 2), 2 * ((n + 1) // 2)
        if hi <= levels:
            thm27[n] = math.log(4.0) + 0.5 * (d[lo] + d[hi]) + n * lq
    thm9 = math.log(2.0) + (j - 1) * j * rho + j * lq
    thm9[2] = 2 * lq + min(math.log(4.0 * math.expm1(2 * rho)), math.log(2.0) + 2 * rho)
    return np.minimum(np.minimum(own, thm27), thm9)


def wor_log_a(q: float, z: float, alpha: int) -> float:
    """log A_alpha at an integer order alpha >= 2."""
    terms = _log_terms(q, z, max(int(alpha), 2))
    k = np.arange(2, alpha + 1, dtype=float)
    log_binom = gammaln(alpha + 1.0) - gammaln(k + 1.0) - gammaln(alpha - k + 1.0)
    return float(np.logaddexp(0.0, logsumexp(log_binom + terms[2 : alpha + 1])))


def wor_rdp(q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """The RDP curve of one step at ``orders`` (> 1), noise multiplier ``z`` relative to the
    replace-one sensitivity, sampling rate ``q`` in (0, 1)."""
    orders = np.asarray(orders, dtype=float)
    if orders.size:  # the longest table first: every order's table is then a prefix of it
        _log_d(z, min(max(math.ceil(float(np.max(orders))), 2) + 1, LEVELS))
    out = []
    for a in orders:
        lo, hi = math.floor(a), math.ceil(a)
        la = 0.0 if lo == 1 else wor_log_a(q, z, lo)
        lb = wor_log_a(q, z, hi) if hi != lo else la
        t = a - lo
        out.append(min(((1 - t) * la + t * lb) / (a - 1), a / (2 * z * z)))
    return np.array(out)


def wor_epsilon(q: float, z: float, steps: int, delta: float, orders: np.ndarray) -> float:
    """``epsilon`` at ``delta`` of ``steps`` such steps: the oracle's curve on ``orders``,
    converted by dp_accounting's ``compute_epsilon`` (its improved conversion)."""
    from dp_accounting.rdp import rdp_privacy_accountant as ref

    orders = np.asarray(orders, dtype=float)
    return float(ref.compute_epsilon(orders, steps * wor_rdp(q, z, orders), delta)[0])
