"""The citations (``dpbounds.provenance.Source``) of the heavy-ball results of Kuru et al.

Theorem 3.5 and Proposition 3.4 as printed (**VERBATIM**), the heavy-ball roots of Appendix B.3,
eq. (26) as printed, and the two results re-derived here (**DERIVED**): the noise term of
Prop. 3.4 / Lemma B.1 and the exact stationary error.
"""

from __future__ import annotations

from dpbounds.provenance import KURU, Provenance, Source

__all__ = [
    "SOURCE_B3_ROOTS",
    "SOURCE_BOUND_DERIVED",
    "SOURCE_EQ26_PRINTED",
    "SOURCE_PROP34",
    "SOURCE_STATIONARY",
    "SOURCE_THM35",
]


SOURCE_THM35 = Source(KURU, "Theorem 3.5, eqs. (24)-(25)", Provenance.VERBATIM)


SOURCE_B3_ROOTS = Source(
    KURU, "Appendix B.3, roots a_{lambda,+-} of (47)", Provenance.VERBATIM,
    "heavy-ball characteristic roots; eq. (26) as printed uses NAG's roots (sheet §11.2)",
)


SOURCE_EQ26_PRINTED = Source(
    KURU, "eq. (26) as printed", Provenance.VERBATIM,
    "roots of z^2-(1+b)(1-a l)z+b(1-a l): Nesterov on a quadratic, not heavy ball",
)


SOURCE_PROP34 = Source(
    KURU, "Proposition 3.4, eqs. (22)-(23)", Provenance.VERBATIM,
    "with B = [-alpha; 0] (eq. (18) prints +alpha, sheet §11.1)",
)


SOURCE_BOUND_DERIVED = Source(
    KURU, "Proposition 3.4 / Lemma B.1, noise term re-derived", Provenance.DERIVED,
    "E V(xi_{t+1}) <= rho^2 E V(xi_t) + (alpha^2 P11 + c L alpha^2/2) E||w||^2",
)


SOURCE_STATIONARY = Source(
    KURU, "Theorem 3.5 / App. B.3: exact stationary error", Provenance.DERIVED,
    "discrete Lyapunov equation of the 2x2 recursion per eigenvalue, solved with sympy",
)
