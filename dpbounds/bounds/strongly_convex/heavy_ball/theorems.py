"""Theorem objects (:class:`~dpbounds.bounds.theorem.Theorem`) of the heavy-ball results, in sympy.

Theorem 3.5 of Kuru et al. (**VERBATIM**, with the heavy-ball or the printed rate) and the exact
stationary error (**DERIVED**), built on first use and cached.
"""

from __future__ import annotations

import functools
from typing import Any

import sympy as sp

from dpbounds.bounds.strongly_convex.heavy_ball.sources import (
    SOURCE_B3_ROOTS,
    SOURCE_EQ26_PRINTED,
    SOURCE_STATIONARY,
    SOURCE_THM35,
)
from dpbounds.bounds.strongly_convex.heavy_ball.stationary_error import stationary_variance_symbolic

__all__ = [
    "stationary_error_theorem",
    "theorem_3_5",
    "heavy_ball_symbolic",
]


# ----------------------------------------------------------------------------- theorem objects
def _hb_rate_expr(alpha: sp.Expr, beta: sp.Expr, lam: sp.Expr, printed: bool) -> sp.Expr:
    if printed:  # (26) as printed: roots of z^2 - (1+b)(1-a l) z + b (1-a l)
        s, q = (1 + beta) * (1 - alpha * lam), beta * (1 - alpha * lam)
    else:  # App. B.3: roots of z^2 - (1+b-a l) z + b
        s, q = 1 + beta - alpha * lam, beta
    disc = s**2 - 4 * q
    return sp.Piecewise((sp.sqrt(sp.Max(q, 0)), disc < 0),
                        ((sp.Abs(s) + sp.sqrt(sp.Max(disc, 0))) / 2, True))


@functools.lru_cache(maxsize=2)
def theorem_3_5(rate: str = "heavy_ball") -> Any:
    r"""Theorem 3.5 / (25) as a :class:`~dpbounds.bounds.theorem.Theorem` (Fig. 1 form, d = 2).

    .. math:: \mathbb E[F(x_t)]-F^\ast\le\Big(E_0+\frac{\sigma^2\alpha^2}{1-\rho^2}\Big)(Ct)^2
              \rho^{2t}+L\,m(\alpha,\beta),\qquad Q=\mathrm{diag}(\mu,L)

    Symbols: ``alpha, beta, mu, L, sigma2`` (per-coordinate noise variance :math:`\sigma_T^2`),
    ``t``, ``C`` (:math:`C_t=Ct`) and ``E0`` (:math:`\mathbb E\lVert\xi_0-\xi^\ast\rVert^2`).
    ``rate="heavy_ball"`` uses the App. B.3 roots (correct); ``"eq26_as_printed"`` the printed
    (26) (Nesterov's roots), to reproduce Fig. 1.

    Example
    -------
    >>> thm = theorem_3_5()
    >>> round(float(thm.evaluate(alpha=0.5, beta=0.3, mu=0.5, L=1.0, sigma2=1e-4, t=50, C=1.0,
    ...                          E0=10.0)), 8)
    0.00012325
    """
    from dpbounds.bounds.theorem import Assumption, Theorem, sym

    if rate not in ("heavy_ball", "eq26_as_printed"):
        raise ValueError(f"rate must be 'heavy_ball' or 'eq26_as_printed', got {rate!r}")
    a, b, mu, L, s2, t, C, E0 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2", "t",
                                                   "C", "E0"))
    printed = rate == "eq26_as_printed"
    rho = sp.Max(_hb_rate_expr(a, b, mu, printed), _hb_rate_expr(a, b, L, printed))
    m = s2 / 2 * sum(2 * a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam)) for lam in (mu, L))
    V0 = E0 + s2 * a**2 / (1 - rho**2)
    expr = V0 * (C * t) ** 2 * rho ** (2 * t) + L * m
    sources = (SOURCE_THM35, SOURCE_EQ26_PRINTED if printed else SOURCE_B3_ROOTS)
    return Theorem(
        name=f"kuru.theorem_3_5[{rate}]",
        quantity=r"\mathbb E[F(x_t)]-F^\ast",
        expr=expr,
        sources=sources,
        assumptions=(
            Assumption("F quadratic (24) with spectrum {mu, L} (Fig. 1, d = 2)"),
            Assumption("0 <= beta < 1", b < 1),
            Assumption("mu <= L", mu <= L),
            Assumption("rho < 1", rho < 1),
            Assumption("E[w w^T | x] <= sigma2 I, E[w | x] = 0"),
        ),
        regime={"t": 1},
        description="C_t = C t (the paper fixes C = 1 in Fig. 1); rho from "
                    + ("(26) as printed" if printed else "App. B.3 roots"),
    )


@functools.lru_cache(maxsize=1)
def stationary_error_theorem() -> Any:
    r"""Exact stationary :math:`\mathbb E[F(x)-F^\ast]` of DP-SHB on :math:`\mathrm{diag}(\mu,L)`.

    :math:`\tfrac12\sum_{\lambda\in\{\mu,L\}}\alpha(1+\beta)\sigma^2/((1-\beta)(2+2\beta-\alpha
    \lambda))` **[DERIVED]**, an equality (the :math:`L\,m(\alpha,\beta)` of (25) is >= 2 times it).
    """
    from dpbounds.bounds.theorem import Assumption, Theorem, sym

    a, b, mu, L, s2 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2"))
    sub = stationary_variance_symbolic()["suboptimality"]
    al, be, la, si = sp.symbols("alpha beta lam sigma2", positive=True)
    expr = sum(sub.xreplace({al: a, be: b, la: x, si: s2}) for x in (mu, L))
    return Theorem(
        name="kuru.stationary_error",
        quantity=r"\lim_t\mathbb E[F(x_t)]-F^\ast",
        expr=expr,
        sources=(SOURCE_STATIONARY, SOURCE_THM35),
        assumptions=(Assumption("0 <= beta < 1", b < 1),
                     Assumption("stability: alpha L < 2 (1 + beta)", a * L < 2 * (1 + b))),
        regime={"sigma2": 1},
        description="equality, not a bound: solution of the 2x2 discrete Lyapunov equation",
    )


def heavy_ball_symbolic(rate: str = "heavy_ball") -> dict[str, sp.Expr]:
    r"""Sympy expressions of :math:`\rho(\alpha,\beta;\mu,L)` and :math:`m(\alpha,\beta)` (d = 2).

    ``rate="heavy_ball"``: App. B.3 roots; ``"eq26_as_printed"``: (26) as printed. Symbols are
    :func:`dpbounds.bounds.theorem.sym` symbols ``alpha, beta, mu, L, sigma2``; ``m`` uses the
    spectrum :math:`\{\mu,L\}`. Evaluate with ``sympy.lambdify`` or through :func:`theorem_3_5`.
    """
    from dpbounds.bounds.theorem import sym

    if rate not in ("heavy_ball", "eq26_as_printed"):
        raise ValueError(f"rate must be 'heavy_ball' or 'eq26_as_printed', got {rate!r}")
    a, b, mu, L, s2 = (sym(k) for k in ("alpha", "beta", "mu", "L", "sigma2"))
    printed = rate == "eq26_as_printed"
    rho = sp.Max(_hb_rate_expr(a, b, mu, printed), _hb_rate_expr(a, b, L, printed))
    m = s2 / 2 * sum(2 * a * (1 + b) / ((1 - b) * lam * (2 + 2 * b - a * lam)) for lam in (mu, L))
    return {"rho": rho, "m": m}
