"""Independent review harness (issue 35 review): is the without-replacement Gaussian RDP
bound ever below the exact Rényi divergence of a valid neighbouring pair?

Setting (WBK19's coupling): M_k = (1 - q) P + q Q_k, P = N(0, I), Q_k = N(mu_k, I) (units of
the noise std), |mu_1|, |mu_2|, |mu_1 - mu_2| <= u = 1 / z. The exact D_alpha(M_1 || M_2) is
computed here by trapezoidal quadrature on a uniform grid (1-D or 2-D, the plane of
0, mu_1, mu_2: every configuration is at most 2-D), in log space, with A - 1 integrated
directly (no cancellation against 1) when it is small. Nothing is shared with
dpbounds.privacy; the package is only called for the bound under test.

Also: an independent mpmath implementation of the bound (termwise min of WBK19 Thm 27 and
the integer-moment terms), used for negative controls; a termwise check of each j-th
moment E_{M2}|V|^j against Thm 27's and the integer-moment term; exact lattice sums for the
discrete Gaussian path.

Run: PYTHONPATH=. python bench/review_wor_gaussian.py [section ...]
"""

from __future__ import annotations

import functools
import math
import sys
import time

import mpmath as mp
import numpy as np
from scipy import optimize, special

from dpbounds.privacy.rdp import (
    without_replacement_discrete_gaussian_rdp,
    without_replacement_gaussian_rdp,
)

QS = (0.001, 0.01, 0.1, 0.3, 0.5, 0.9)
ZS = (0.5, 0.8, 1.0, 2.0, 5.0, 20.0)
ORDERS = (2.0, 3.0, 4.0, 5.0, 8.0, 16.0, 32.0, 1.5, 2.5)


# ----------------------------------------------------------------------------- exact values
def _f_series(a: float, d: np.ndarray) -> np.ndarray:
    """expm1(a d) - a expm1(d) = sum_{k>=2} (a^k - a) d^k / k!, for |a d| < 0.5."""
    out = np.zeros_like(d)
    dk = d.copy()
    fact = 1.0
    for k in range(2, 40):
        dk = dk * d
        fact *= k
        out += (a ** k - a) * dk / fact
    return out


def log_a_exact(q: float, mu1: np.ndarray, mu2: np.ndarray, alpha: float,
                h: float = 0.2, margin: float = 11.0) -> float:
    """log E_{M2}[(M1/M2)^alpha] by the trapezoidal rule (mu in R^1 or R^2, noise std 1)."""
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, float)), np.atleast_1d(np.asarray(mu2, float))
    dim = mu1.size
    pts = [np.zeros(dim), mu1, mu2, alpha * mu1, (1 - alpha) * mu2,
           alpha * mu1 + (1 - alpha) * mu2, 2 * mu1, 2 * mu2, 2 * mu1 - mu2]
    lo = np.min(pts, axis=0) - margin
    hi = np.max(pts, axis=0) + margin
    axes = [np.arange(lo[i], hi[i] + h, h) for i in range(dim)]
    if dim == 1:
        x = axes[0][:, None]
    else:
        g0, g1 = np.meshgrid(axes[0], axes[1], indexing="ij")
        x = np.stack([g0.ravel(), g1.ravel()], axis=1)
    lp = -0.5 * np.sum(x * x, axis=1) - 0.5 * dim * math.log(2 * math.pi)
    l1 = x @ mu1 - 0.5 * mu1 @ mu1
    l2 = x @ mu2 - 0.5 * mu2 @ mu2
    lq, l1q = math.log(q), math.log1p(-q)
    lm1 = np.logaddexp(l1q, lq + l1)
    lm2 = np.logaddexp(l1q, lq + l2)
    d = lm1 - lm2  # log(1 + V)
    la = lp + lm2 + alpha * d
    log_vol = dim * math.log(h)
    tot = float(special.logsumexp(la)) + log_vol
    if not math.isfinite(tot):
        raise FloatingPointError("non-finite exact value")
    if tot > 0.05:
        return tot
    small = np.abs(alpha * d) < 0.5
    # integrand of A - 1 = E_{M2}[(1+V)^alpha - 1 - alpha V]: a series where alpha d is
    # small, else M1^a M2^(1-a) - M2 - alpha (M1 - M2) (every exponent finite: la <= ~0)
    big = np.exp(la) - np.exp(lp + lm2) - alpha * (np.exp(lp + lm1) - np.exp(lp + lm2))
    ser = np.exp(lp + lm2) * _f_series(alpha, np.where(small, d, 0.0))
    am1 = float(np.sum(np.where(small, ser, big))) * h ** dim
    out = math.log1p(am1)
    if not math.isfinite(out):
        raise FloatingPointError("non-finite exact value")
    return out


def eps_exact(q: float, mu1, mu2, alpha: float, **kw) -> float:
    return log_a_exact(q, mu1, mu2, alpha, **kw) / (alpha - 1.0)


def eps_both(q: float, mu1, mu2, alpha: float, **kw) -> float:
    return max(eps_exact(q, mu1, mu2, alpha, **kw), eps_exact(q, mu2, mu1, alpha, **kw))


# ------------------------------------------------------------------- my bound (mpmath)
def _fd(rho: mp.mpf, n: int) -> mp.mpf:
    return mp.fsum(mp.binomial(n, i) * (-1) ** (n - i) * mp.exp(i * (i - 1) * rho)
                   for i in range(n + 1))


@functools.lru_cache(maxsize=64)
def _fd_table(z: float, top: int) -> tuple:
    """D_n = Delta^n g(0), g(i) = e^{i(i-1) rho}, n = 0..top, by repeated differences at a
    precision covering their cancellation."""
    with mp.workdps(60 + int((top + 3) * math.log10(2.0 + 3.0 * z))):
        r = mp.mpf(1) / (2 * mp.mpf(z) ** 2)
        row = [mp.exp(i * (i - 1) * r) for i in range(top + 1)]
        out = [row[0]]
        for _ in range(top):
            row = [row[i + 1] - row[i] for i in range(len(row) - 1)]
            out.append(row[0])
        return tuple(out)


def my_terms(q: float, z: float, top: int, variant: str = "full") -> list:
    """[bound on E_{M2}[V^j]] for j = 0..top (entries 0, 1 unused), written from the
    theorems. variant: full (min of Thm 27 and the integer-moment term), thm27, own,
    ctl_t2_div8 (Thm 27's q^2 term / 8), ctl_hi_div4 (Thm 27's j >= 3 terms / 4)."""
    with mp.workdps(60 + int((top + 3) * math.log10(2.0 + 3.0 * z))):
        r, qq = mp.mpf(1) / (2 * mp.mpf(z) ** 2), mp.mpf(q)
        tab = _fd_table(z, top + 2)
        dd = {n: +tab[n] for n in range(2, top + 3, 2)}
        u = {n: 4 ** (n // 2) * dd[n] for n in dd}
        v = dict(dd)
        u[2] = 2 * mp.exp(2 * r) - 2 * mp.exp(r)
        out = [mp.inf, mp.inf]
        for j in range(2, top + 1):
            if j % 2 == 0:
                uj, vj = u[j], v[j]
                lo = hi = j
            else:
                uj, vj = mp.sqrt(u[j - 1] * u[j + 1]), mp.sqrt(v[j - 1] * v[j + 1])
                lo, hi = j - 1, j + 1
            gen_v = mp.exp(j * (j - 1) * r) + 1
            uj, vj = min(uj, 2 ** j * gen_v), min(vj, gen_v)
            own = qq ** j * ((1 - qq) * uj + qq * vj)
            if j == 2:
                t27 = qq ** 2 * min(4 * mp.expm1(2 * r), 2 * mp.exp(2 * r))
                if variant == "ctl_t2_div8":
                    t27 /= 8
            else:
                t27 = qq ** j * min(4 * mp.sqrt(dd[lo] * dd[hi]), 2 * mp.exp((j - 1) * j * r))
                if variant == "ctl_hi_div4":
                    t27 /= 4
            if variant == "thm27":
                out.append(t27)
            elif variant == "own":
                out.append(own)
            else:
                out.append(min(t27, own))
        return out


def my_log_a(q: float, z: float, alpha: int, variant: str = "full") -> float:
    t = my_terms(q, z, alpha, variant)
    with mp.workdps(60 + int((alpha + 3) * math.log10(2.0 + 3.0 * z))):
        s = mp.fsum(mp.binomial(alpha, j) * t[j] for j in range(2, alpha + 1))
        return float(mp.log1p(s))


def my_eps(q: float, z: float, alpha: float, variant: str = "full") -> float:
    lo, hi = math.floor(alpha), math.ceil(alpha)
    la = 0.0 if lo == 1 else my_log_a(q, z, lo, variant)
    lb = my_log_a(q, z, hi, variant) if hi != lo else la
    t = alpha - lo
    return min(((1 - t) * la + t * lb) / (alpha - 1), alpha / (2 * z * z))


def pkg_eps(q: float, z: float, orders) -> np.ndarray:
    return np.asarray(without_replacement_gaussian_rdp(q, z, np.asarray(orders, float)))


# ------------------------------------------------------------------------ configurations
def configs(u: float, rng: np.random.Generator, n_random: int) -> list[tuple[str, np.ndarray,
                                                                                np.ndarray]]:
    out = []
    for a in np.linspace(0.0, 1.0, 9):  # 1-D, |mu1 - mu2| = u
        out.append((f"1d a={a:.3f}", np.array([a * u]), np.array([(a - 1) * u])))
    out.append(("1d (u, 0.5u)", np.array([u]), np.array([0.5 * u])))
    out.append(("1d (0.7u, -0.3u)", np.array([0.7 * u]), np.array([-0.3 * u])))
    c, s = math.cos(math.pi / 3), math.sin(math.pi / 3)
    out.append(("2d equilateral", np.array([u, 0.0]), np.array([u * c, u * s])))
    for k in range(n_random):
        while True:
            m1 = rng.uniform(-u, u, 2)
            m2 = rng.uniform(-u, u, 2)
            if (m1 @ m1 <= u * u and m2 @ m2 <= u * u
                    and (m1 - m2) @ (m1 - m2) <= u * u):
                break
        out.append((f"2d random {k}", m1, m2))
    return out


def project(p: np.ndarray, u: float) -> tuple[np.ndarray, np.ndarray]:
    """(r1, r2, theta) -> a feasible configuration (scaled into the constraints)."""
    r1, r2 = np.clip(p[:2], 0.0, 1.0) * u
    m1 = np.array([r1, 0.0])
    m2 = r2 * np.array([math.cos(p[2]), math.sin(p[2])])
    dist = float(np.linalg.norm(m1 - m2))
    if dist > u:
        m1, m2 = m1 * u / dist, m2 * u / dist
    return m1, m2


# -------------------------------------------------------------------------------- sections
def section_grid(n_random: int = 3) -> None:
    """Fixed and random configurations, every q, z and order; ratio true / bound."""
    rng = np.random.default_rng(20261204)
    t0 = time.process_time()
    worst_all = (0.0, None)
    n_eval = 0
    print("| q | z | worst true/bound | order | config | configs x orders |")
    print("|---|---|---|---|---|---|")
    for q in QS:
        for z in ZS:
            u = 1.0 / z
            bound = pkg_eps(q, z, ORDERS)
            worst = (0.0, None)
            cfgs = configs(u, rng, n_random)
            for name, m1, m2 in cfgs:
                for k, a in enumerate(ORDERS):
                    if a >= 16 and m1.size == 2 and "random" in name and z < 1:
                        continue  # big 2-D boxes: covered by the equilateral and NM
                    true = eps_both(q, m1, m2, a)
                    n_eval += 2
                    r = true / bound[k]
                    if r > worst[0]:
                        worst = (r, (a, name, m1.tolist(), m2.tolist(), true, bound[k]))
            if worst[0] > worst_all[0]:
                worst_all = (worst[0], (q, z) + worst[1])
            w = worst[1]
            print(f"| {q} | {z} | {worst[0]:.6f} | {w[0]} | {w[1]} | {len(cfgs)}x{len(ORDERS)} |",
                  flush=True)
    print(f"\nworst overall {worst_all}; {n_eval} exact divergences, "
          f"{time.process_time() - t0:.0f} CPU-s")


def section_nm(qs: tuple[float, ...] = QS, orders=(2.0, 5.0, 16.0), maxfev: int = 30) -> None:
    """Nelder-Mead over 2-D configurations maximising true / bound."""
    t0 = time.process_time()
    worst_all = (0.0, None)
    print("| q | z | order | NM max true/bound | config (mu1, mu2) |")
    print("|---|---|---|---|---|")
    for q in qs:
        for z in ZS:
            u = 1.0 / z
            bound = pkg_eps(q, z, orders)
            for k, a in enumerate(orders):
                def neg(p: np.ndarray, q=q, u=u, a=a, b=bound[k]) -> float:
                    m1, m2 = project(p, u)
                    return -eps_exact(q, m1, m2, a) / b
                best = (0.0, None)
                for start in ([1.0, 1.0, math.pi / 3], [0.5, 0.5, math.pi], [1.0, 0.0, 0.0]):
                    res = optimize.minimize(neg, np.array(start), method="Nelder-Mead",
                                            options={"maxfev": maxfev, "xatol": 1e-3,
                                                     "fatol": 1e-9})
                    if -res.fun > best[0]:
                        m1, m2 = project(res.x, u)
                        best = (-res.fun, (m1.round(4).tolist(), m2.round(4).tolist()))
                if best[0] > worst_all[0]:
                    worst_all = (best[0], (q, z, a) + best[1])
                print(f"| {q} | {z} | {a} | {best[0]:.6f} | {best[1]} |", flush=True)
    print(f"\nworst overall {worst_all}; {time.process_time() - t0:.0f} CPU-s")


def section_controls() -> None:
    """Negative controls: the harness must report true / bound > 1 for each."""
    t0 = time.process_time()
    c, s = math.cos(math.pi / 3), math.sin(math.pi / 3)
    print("| control | q | z | order | config | true/bound |")
    print("|---|---|---|---|---|---|")
    for q, z, a in ((0.01, 5.0, 2.0), (0.1, 2.0, 3.0), (0.001, 20.0, 8.0), (0.3, 1.0, 4.0),
                    (0.5, 0.8, 8.0), (0.1, 0.8, 5.0)):
        u = 1.0 / z
        tri = (np.array([u, 0.0]), np.array([u * c, u * s]))
        true = eps_both(q, *tri, a)
        half = float(pkg_eps(q, z * math.sqrt(2.0), [a])[0])  # the bound at rho / 2
        print(f"| bound at rho/2 (package) | {q} | {z} | {a} | equilateral | "
              f"{true / half:.4f} |")
        for variant in ("ctl_t2_div8", "ctl_hi_div4"):
            b = my_eps(q, z, a, variant)
            print(f"| {variant} (own impl.) | {q} | {z} | {a} | equilateral | "
                  f"{true / b:.4f} |")
        # a violated constraint: |mu1 - mu2| = 2u (collinear u, -u)
        out = eps_both(q, np.array([u]), np.array([-u]), a)
        print(f"| constraint violated (u, -u) | {q} | {z} | {a} | 1d | "
              f"{out / float(pkg_eps(q, z, [a])[0]):.4f} |")
    print(f"\n{time.process_time() - t0:.0f} CPU-s")


def section_impl() -> None:
    """My mpmath implementation of the bound against the package's (same theorems)."""
    t0 = time.process_time()
    worst = 0.0
    worst_below = 0.0
    for q in QS:
        for z in ZS:
            got = pkg_eps(q, z, ORDERS)
            for k, a in enumerate(ORDERS):
                mine = my_eps(q, z, a)
                rel = (got[k] - mine) / mine
                worst = max(worst, abs(rel))
                worst_below = min(worst_below, rel)
    print(f"package vs own implementation: max |rel diff| {worst:.3e}, most negative "
          f"(package below mine) {worst_below:.3e} over {len(QS) * len(ZS) * len(ORDERS)} "
          f"(q, z, order); {time.process_time() - t0:.0f} CPU-s")


def _moment(q: float, mu1, mu2, j: int, h: float = 0.2, margin: float = 11.0) -> float:
    """E_{M2}|V|^j, V = q (Q1 - Q2) / M2, by the trapezoidal rule."""
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, float)), np.atleast_1d(np.asarray(mu2, float))
    dim = mu1.size
    pts = [np.zeros(dim), mu1, mu2, j * mu1, j * mu2, (1 - j) * mu2, j * mu1 + (1 - j) * mu2,
           (1 - j) * mu1 + j * mu2]
    lo, hi = np.min(pts, axis=0) - margin, np.max(pts, axis=0) + margin
    axes = [np.arange(lo[i], hi[i] + h, h) for i in range(dim)]
    if dim == 1:
        x = axes[0][:, None]
    else:
        g0, g1 = np.meshgrid(axes[0], axes[1], indexing="ij")
        x = np.stack([g0.ravel(), g1.ravel()], axis=1)
    lp = -0.5 * np.sum(x * x, axis=1) - 0.5 * dim * math.log(2 * math.pi)
    l1 = x @ mu1 - 0.5 * mu1 @ mu1
    l2 = x @ mu2 - 0.5 * mu2 @ mu2
    lq, l1q = math.log(q), math.log1p(-q)
    lm2 = np.logaddexp(l1q, lq + l2)
    # log|Q1 - Q2| - log P
    big, sml = np.maximum(l1, l2), np.minimum(l1, l2)
    with np.errstate(divide="ignore"):
        ldiff = big + np.log(-np.expm1(sml - big))
    lv = lq + ldiff - lm2
    return float(special.logsumexp(lp + lm2 + j * lv)) + dim * math.log(h)


def section_terms(top: int = 10) -> None:
    """Each j-th moment E_{M2}|V|^j against Thm 27's and the integer-moment term."""
    rng = np.random.default_rng(7)
    t0 = time.process_time()
    worst = {"thm27": (0.0, None), "own": (0.0, None)}
    for q in (0.01, 0.3, 0.5, 0.9):
        for z in (0.5, 1.0, 2.0, 5.0):
            u = 1.0 / z
            b27 = my_terms(q, z, top, "thm27")
            bown = my_terms(q, z, top, "own")
            for name, m1, m2 in configs(u, rng, 3):
                for j in range(2, top + 1):
                    lm = _moment(q, m1, m2, j)
                    for key, b in (("thm27", b27), ("own", bown)):
                        r = math.exp(lm - float(mp.log(b[j])))
                        if r > worst[key][0]:
                            worst[key] = (r, (q, z, j, name))
    print(f"worst E|V|^j / term: {worst}; {time.process_time() - t0:.0f} CPU-s")


def section_error() -> None:
    """Quadrature error: h = 0.2, margin 11 against h = 0.1, margin 15."""
    t0 = time.process_time()
    rng = np.random.default_rng(3)
    worst = 0.0
    n = 0
    for q in (0.001, 0.1, 0.5, 0.9):
        for z in (0.5, 1.0, 5.0, 20.0):
            for _name, m1, m2 in configs(1.0 / z, rng, 1)[::3]:
                for a in (1.5, 2.0, 5.0, 16.0):
                    if m1.size == 2 and a >= 16 and z < 1:
                        continue
                    x = log_a_exact(q, m1, m2, a)
                    y = log_a_exact(q, m1, m2, a, h=0.1, margin=15.0)
                    worst = max(worst, abs(x - y) / abs(y))
                    n += 1
    print(f"quadrature: max rel diff of log A (h 0.2 vs 0.1, margin 11 vs 15) {worst:.2e} "
          f"over {n}; {time.process_time() - t0:.0f} CPU-s")
    hi_worst = 0.0
    c, s_ = math.cos(math.pi / 3), math.sin(math.pi / 3)
    for q, _z, a, m1, m2 in ((0.9, 2.0, 256.0, [0.0], [-0.5]), (0.01, 5.0, 256.0, [0.2], [0.0]),
                            (0.001, 5.0, 64.0, [0.2, 0.0], [0.2 * c, 0.2 * s_]),
                            (0.5, 0.8, 32.0, [1.25, 0.0], [1.25 * c, 1.25 * s_]),
                            (0.001, 20.0, 2.0, [0.05, 0.0], [0.05 * c, 0.05 * s_])):
        x = log_a_exact(q, np.array(m1), np.array(m2), a)
        y = log_a_exact(q, np.array(m1), np.array(m2), a, h=0.1, margin=15.0)
        w = log_a_exact(q, np.array(m1), np.array(m2), a, h=0.05, margin=18.0) if len(m1) == 1 \
            or a <= 8 else y
        hi_worst = max(hi_worst, abs(x - y) / abs(y), abs(w - y) / abs(y))
    print(f"quadrature at the tightest / largest cases (orders up to 256): max rel diff "
          f"{hi_worst:.2e}")
    # a second method: mpmath quadrature in 1-D
    for q, z, a, m1, m2 in ((0.1, 1.0, 2.5, 1.0, 0.0), (0.01, 2.0, 8.0, 0.25, -0.25),
                            (0.3, 0.8, 16.0, 0.0, -1.25)):
        with mp.workdps(30):
            def dens(x, mu):
                return mp.npdf(x, mu, 1)

            def f(x, q=q, m1=m1, m2=m2, a=a):
                mm1 = (1 - q) * dens(x, 0) + q * dens(x, m1)
                mm2 = (1 - q) * dens(x, 0) + q * dens(x, m2)
                return mm1 ** a * mm2 ** (1 - a)
            ref = float(mp.log(mp.quad(f, [-mp.inf, -5, 0, 5, a * 1.5 / z, mp.inf])))
        got = log_a_exact(q, np.array([m1]), np.array([m2]), a)
        print(f"1-D mpmath quad: q {q} z {z} order {a}: rel diff {(got - ref) / ref:.2e}")
    # a closed form: q = 1 gives the Gaussian's alpha |mu1 - mu2|^2 / 2 ... q close to 1
    for a in (2.0, 2.5, 8.0):
        x = eps_exact(1 - 1e-12, np.array([0.5, 0.0]), np.array([0.0, 1.0]), a)
        want = a * 1.25 / 2
        print(f"q -> 1 closed form order {a}: {x:.12f} vs {want:.12f}")


def section_ternary(zs: tuple[float, ...] = (0.3, 0.5, 0.8, 1.0, 2.0, 5.0, 20.0, 100.0),
                    ms: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16), n_th: int = 10) -> None:
    """Exact even moments T_2m(P) = E_P[(Q1/P - Q2/P)^2m] (closed form from
    E_P[(Q1/P)^a (Q2/P)^b] = exp((|a mu1 + b mu2|^2 - a|mu1|^2 - b|mu2|^2) / 2), mpmath),
    their supremum over a grid of configurations, against Thm 27's 4 D_2m (with its
    Thm 9 alternative 2 e^{2m(2m-1) rho}) and the integer-moment U_2m."""
    t0 = time.process_time()
    print("| z | m | sup T_2m(P) / Thm27 bracket | at (r1, r2, theta) | sup / U_2m "
          "| sup T / (4 D_2m) | sup T / (2 e^{n(n-1) rho}) |")
    print("|---|---|---|---|---|---|---|")
    worst27, worst_u, worst4d = 0.0, 0.0, 0.0
    for z in zs:
        with mp.workdps(150):
            # the configuration in mpmath (float rounding of u^2 would move it off the
            # constraint by ~1e-16, which e^{n(n-1) rho} amplifies to ~1e-12)
            uu = 1 / mp.mpf(z) ** 2
            cfg = []
            for r1 in (mp.mpf(k) / 5 for k in range(1, 6)):
                for r2 in (mp.mpf(k) / 5 for k in range(0, 6)):
                    for i in range(n_th):
                        c = mp.cos(mp.pi * i / (n_th - 1))
                        if r1 * r1 + r2 * r2 - 2 * r1 * r2 * c <= 1 + mp.mpf(10) ** -140:
                            cfg.append((float(r1), float(r2), round(math.pi * i / (n_th - 1), 3),
                                        r1 * r1 * uu, r2 * r2 * uu, r1 * r2 * c * uu))
            rho = uu / 2
            for m in ms:
                n = 2 * m
                dn = _fd(rho, n)
                b27 = min(4 * dn, 2 * mp.exp(n * (n - 1) * rho))
                if m == 1:
                    b27 = min(4 * mp.expm1(2 * rho), 2 * mp.exp(2 * rho))
                un = 2 * mp.exp(2 * rho) - 2 * mp.exp(rho) if m == 1 else 4 ** m * dn
                best = (mp.mpf(0), None)
                for r1, r2, th, s11, s22, s12 in cfg:
                    a11, a22, a12 = s11, s22, s12
                    t = mp.fsum(mp.binomial(n, k) * (-1) ** k * mp.exp(
                        ((n - k) ** 2 * a11 + k * k * a22 + 2 * (n - k) * k * a12
                         - (n - k) * a11 - k * a22) / 2) for k in range(n + 1))
                    if t > best[0]:
                        best = (t, (r1, r2, th))
                r27, ru = float(best[0] / b27), float(best[0] / un)
                r4d = float(best[0] / (4 * (dn if m > 1 else mp.expm1(2 * rho))))
                r9 = float(best[0] / (2 * mp.exp(n * (n - 1) * rho)))
                worst27, worst_u = max(worst27, r27), max(worst_u, ru)
                worst4d = max(worst4d, r4d)
                print(f"| {z} | {m} | {r27:.12f} | {best[1]} | {ru:.12f} | {r4d:.6f} "
                      f"| {r9:.6f} |", flush=True)
    print(f"\nworst sup/Thm27 {worst27:.12f}, sup/U {worst_u:.12f}, sup/(4D) {worst4d:.6f} "
          f"({len(cfg)} configurations "
          f"per z); {time.process_time() - t0:.0f} CPU-s")


def section_ternary_fine() -> None:
    """section_ternary on a finer theta grid, between the regimes and to m = 30."""
    section_ternary(zs=(0.4, 0.6, 0.9, 1.2, 1.5, 3.0), ms=(2, 3, 5, 8, 20, 30), n_th=13)


def section_low_orders() -> None:
    """Orders in (1, 2) (log A interpolated between 1 and 2)."""
    c, s = math.cos(math.pi / 3), math.sin(math.pi / 3)
    worst = 0.0
    for q in (0.001, 0.1, 0.5):
        for z in (0.8, 2.0, 20.0):
            u = 1 / z
            b = pkg_eps(q, z, [1.01, 1.1, 1.9])
            for m1, m2 in ((np.array([u, 0.0]), np.array([u * c, u * s])),
                           (np.array([u]), np.array([0.0])), (np.array([0.0]), np.array([u]))):
                for k, a in enumerate((1.01, 1.1, 1.9)):
                    worst = max(worst, eps_exact(q, m1, m2, a) / b[k])
    print(f"orders 1.01, 1.1, 1.9: worst true/bound {worst:.6f} (3 q x 3 z x 3 configs)")


def section_random() -> None:
    """40 random 2-D configurations per (q, z) at orders 2, 3, 4, 8, also against the
    bound with max_exact_order = 2 (Theorem 27's j >= 3 terms replaced by Theorem 9's)."""
    t0 = time.process_time()
    rng = np.random.default_rng(11)
    worst: tuple = (0.0, None)
    n = 0
    orders = [2.0, 3.0, 4.0, 8.0]
    for q, z in ((0.3, 1.0), (0.1, 2.0), (0.5, 0.8), (0.01, 5.0), (0.9, 1.0)):
        b = pkg_eps(q, z, orders)
        bs = np.asarray(without_replacement_gaussian_rdp(q, z, np.array(orders),
                                                         max_exact_order=2.0))
        for _name, m1, m2 in configs(1 / z, rng, 40)[12:]:
            for k, a in enumerate(orders):
                t = eps_exact(q, m1, m2, a)
                n += 1
                for lab, bb in (("default", b[k]), ("max_exact_order=2", bs[k])):
                    if t / bb > worst[0]:
                        worst = (t / bb, (lab, q, z, a, m1.round(3).tolist(),
                                          m2.round(3).tolist()))
    print(f"random 2-D configurations: {n} divergences, worst true/bound {worst}; "
          f"{time.process_time() - t0:.0f} CPU-s")


def section_high() -> None:
    """Large orders (64, 128, 256, 100.5): 1-D configurations and the equilateral."""
    t0 = time.process_time()
    orders = (64.0, 100.5, 128.0, 256.0)
    worst_all = (0.0, None)
    print("| q | z | worst true/bound | order | config |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for q in QS:
        for z in (2.0, 5.0, 20.0):
            u = 1.0 / z
            bound = pkg_eps(q, z, orders)
            worst = (0.0, None)
            for name, m1, m2 in configs(u, rng, 0):
                for k, a in enumerate(orders):
                    if m1.size == 2 and a * u > 40:
                        continue
                    r = eps_both(q, m1, m2, a) / bound[k]
                    if r > worst[0]:
                        worst = (r, (a, name))
            if worst[0] > worst_all[0]:
                worst_all = (worst[0], (q, z) + worst[1])
            print(f"| {q} | {z} | {worst[0]:.6f} | {worst[1][0]} | {worst[1][1]} |", flush=True)
    print(f"\nworst overall {worst_all}; {time.process_time() - t0:.0f} CPU-s")


def section_impl_high() -> None:
    """The package against my mpmath bound at large orders (precision adapted)."""
    t0 = time.process_time()
    worst_below = 0.0
    worst = 0.0
    for q in (0.01, 0.1, 0.5):
        for z in (1.0, 3.0, 10.0, 20.0, 60.0):
            orders = (64.0, 128.0, 255.5, 256.0)
            got = pkg_eps(q, z, orders)
            for k, a in enumerate(orders):
                mine = my_eps(q, z, a)
                rel = (got[k] - mine) / mine
                worst, worst_below = max(worst, abs(rel)), min(worst_below, rel)
    print(f"large orders: max |rel diff| {worst:.3e}, most negative {worst_below:.3e}; "
          f"{time.process_time() - t0:.0f} CPU-s")


# ---------------------------------------------------------------------- discrete Gaussian
def _dg_eps(q: float, s: float, mu1, mu2, alpha: float, dim: int) -> float:
    half = int(14 * s) + 20 + int(alpha * 4)
    x = np.arange(-half, half + 1, dtype=float)
    if dim == 1:
        pts = x[:, None]
    else:
        g0, g1 = np.meshgrid(x, x, indexing="ij")
        pts = np.stack([g0.ravel(), g1.ravel()], axis=1)
    mu1, mu2 = np.asarray(mu1, float), np.asarray(mu2, float)

    def logn(c: np.ndarray) -> np.ndarray:
        lw = -np.sum((pts - c) ** 2, axis=1) / (2 * s * s)
        return lw - special.logsumexp(lw)

    lp, l1, l2 = logn(np.zeros(dim)), logn(mu1), logn(mu2)
    lq, l1q = math.log(q), math.log1p(-q)
    m1 = np.logaddexp(l1q + lp, lq + l1)
    m2 = np.logaddexp(l1q + lp, lq + l2)
    d12 = special.logsumexp(alpha * m1 + (1 - alpha) * m2)
    d21 = special.logsumexp(alpha * m2 + (1 - alpha) * m1)
    if max(d12, d21) > 0.05:
        return max(d12, d21) / (alpha - 1)
    # small: A - 1 directly
    out = 0.0
    for a_, b_ in ((m1, m2), (m2, m1)):
        d = a_ - b_
        small = np.abs(alpha * d) < 0.5
        big = np.exp(alpha * a_ + (1 - alpha) * b_) - np.exp(b_) - alpha * (
            np.exp(a_) - np.exp(b_))
        ser = np.exp(b_) * _f_series(alpha, np.where(small, d, 0.0))
        out = max(out, math.log1p(float(np.sum(np.where(small, ser, big)))))
    if not math.isfinite(out):
        raise FloatingPointError("non-finite exact value")
    return out / (alpha - 1)


def section_discrete() -> None:
    t0 = time.process_time()
    worst_all = (0.0, None)
    print("| q | u | s | dim | worst true/bound | order | config | n configs |")
    print("|---|---|---|---|---|---|---|---|")
    orders = (2.0, 3.0, 4.0, 5.0, 8.0, 16.0, 1.5, 2.5)
    for q in (0.02, 0.3, 0.5):
        for u, s, dim in ((1, 0.8, 1), (1, 2.0, 1), (2, 1.5, 1), (3, 1.0, 1), (3, 6.0, 1),
                          (2, 1.5, 2), (2, 3.0, 2), (3, 4.0, 2), (1, 0.7, 2)):
            rho = u * u / (2 * s * s)
            bound = np.asarray(without_replacement_discrete_gaussian_rdp(
                q, rho, np.array(orders)))
            if dim == 1:
                pts = [(a,) for a in range(-u, u + 1)]
            else:
                pts = [(a, b) for a in range(-u, u + 1) for b in range(-u, u + 1)
                       if a * a + b * b <= u * u]
            cf = [(m1, m2) for m1 in pts for m2 in pts if m1 > m2
                  and sum((x - y) ** 2 for x, y in zip(m1, m2)) <= u * u]
            worst = (0.0, None)
            for m1, m2 in cf:
                for k, a in enumerate(orders):
                    if dim == 2 and a > 8 and len(cf) > 20:
                        continue
                    r = _dg_eps(q, s, m1, m2, a, dim) / bound[k]
                    if r > worst[0]:
                        worst = (r, (a, m1, m2))
            if worst[0] > worst_all[0]:
                worst_all = (worst[0], (q, u, s, dim) + worst[1])
            print(f"| {q} | {u} | {s} | {dim} | {worst[0]:.6f} | {worst[1][0]} | "
                  f"{worst[1][1:]} | {len(cf)} |", flush=True)
    # control: rho / 2
    q, u, s = 0.02, 2, 1.5
    half = float(without_replacement_discrete_gaussian_rdp(q, u * u / (4 * s * s),
                                                          np.array([2.0]))[0])
    tr = _dg_eps(q, s, (2,), (0,), 2.0, 1)
    print(f"\ncontrol rho/2 (q 0.02, u 2, s 1.5, order 2, 1-D (2, 0)): ratio {tr / half:.4f}")
    print(f"worst overall {worst_all}; {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    sections = sys.argv[1:] or ["impl", "error", "controls", "grid", "nm", "terms", "discrete"]
    for sec in sections:
        name, _, arg = sec.partition(":")
        print(f"\n## {sec}\n", flush=True)
        if arg:
            globals()[f"section_{name}"](tuple(float(x) for x in arg.split(",")))
        else:
            globals()[f"section_{name}"]()
