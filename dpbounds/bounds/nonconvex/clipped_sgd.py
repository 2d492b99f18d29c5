r"""Clipped DP-SGD under :math:`(L_0,L_1)`-smoothness (Yang et al.'s DP-SGD, arXiv 2206.13033).

The setting, Lemma 3.1's noise and the provenance (every constant **DERIVED by dpbounds**; only
the headline exponents are the paper's) are in
:mod:`~dpbounds.bounds.nonconvex.generalized_smoothness`.

Lemma chain:

* :data:`sgd_inner_product` — for :math:`C\ge3\tau_0`:
  :math:`\mathbb E\langle\nabla f,\mathrm{clip}_C(g)\rangle\ge\frac{Cx^2}{3(x+C)}` (no clipping
  when :math:`x\le C-\tau_0`; otherwise :math:`x\ge2\tau_0` and the clipped inner product is
  :math:`\ge\frac13\min(x^2,Cx)`). The paper's condition is :math:`C\ge2\tau_0/(1-\tau_1)`
  (RECONSTRUCTED); our constant 3 is DERIVED.
* descent with the :math:`(L_0,L_1)` descent lemma and inversion by Jensen
  (:math:`x^2/(x+C)` is convex).

Results:

* :data:`sgd_theorem` (Thm 3.4 shape): :math:`Q_C+\sqrt{CQ_C}`,
  :math:`Q_C=6\sqrt{2D_f(L_0+L_1C)V/T}`, :math:`\eta=\sqrt{2D_f/((L_0+L_1C)C^2VT)}`.
* :data:`sgd_corollary` (Cor 3.5): Lemma 3.1's noise and :math:`T\to\infty`; no floor, and the
  constant grows like :math:`\sqrt C`.

Registered as ``nonconvex.clipped_sgd`` (alias ``yang.sgd``).

Example
-------
>>> from dpbounds.bounds.nonconvex import clipped_sgd
>>> print(clipped_sgd.sgd_corollary.exponents(("d", "N", "eps", "log(1/delta)")))
d^(1/4) N^(-1/2) eps^(-1/2) log(1/delta)^(1/4)
"""

from __future__ import annotations

import math

import sympy as sp

from dpbounds.bounds.nonconvex import generalized_smoothness as gs
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.theorem import Assumption, Lemma, Theorem, sym
from dpbounds.provenance import YANG, Provenance, Source

__all__ = [
    "inversion_sgd",
    "sgd_corollary",
    "sgd_descent",
    "sgd_inner_product",
    "sgd_theorem",
]

L0, L1, D_f, tau0 = sym("L0"), sym("L1"), sym("D_f"), sym("tau0")
C, T, eta, x, Q = sym("C"), sym("T"), sym("eta"), sym("x"), sym("Q")

_DERIVED = gs.DERIVED_NOTE
_A_SETTING, _A_DELTA = gs.SETTING, gs.DELTA
V, nu = gs.V, gs.nu
_A_C = Assumption("C >= 3 tau0 (DERIVED clipping condition; paper: C >= 2 tau0/(1-tau1))",
                  C >= 3 * tau0)

sgd_inner_product = Lemma(
    name="yang.sgd_inner_product",
    quantity=r"-\mathbb E\langle\nabla f(x),\mathrm{clip}_C(g)\rangle",
    expr=-C * x**2 / (3 * (x + C)),
    sources=(Source(YANG, "Lemma A.5 (shape)", Provenance.DERIVED,
                    "C >= 3 tau0: no clipping if x <= C - tau0, else >= min(x^2, Cx)/3 >= "
                    "C x^2/(3(x+C)); " + _DERIVED),),
    assumptions=(_A_SETTING, _A_C),
    description="positive for every x > 0: no floor",
)

sgd_descent = Lemma(
    name="yang.sgd_descent",
    quantity=r"\frac1T\sum_t\mathbb E\frac{\lVert\nabla f(x_t)\rVert^2}"
             r"{\lVert\nabla f(x_t)\rVert+C}",
    expr=6 / C * (D_f / (eta * T) + (L0 + L1 * C) * eta * C**2 * V / 2),
    sources=(Source(YANG, "Theorem 3.4 proof (Lemmas A.1, C.1, C.2)", Provenance.DERIVED,
                    "descent lemma + E||g^||^2 <= C^2 V + x <= x^2/(x+C) + C, "
                    "L1 eta C V <= 1/3; " + _DERIVED),),
    assumptions=(_A_SETTING, _A_C),
    hyperparameters={"eta": sp.sqrt(2 * D_f / ((L0 + L1 * C) * C**2 * V * T))},
)

inversion_sgd = Lemma(
    name="yang.sgd_inversion",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=Q + sp.sqrt(C * Q),
    sources=(Source(YANG, "Theorem 3.4 proof", Provenance.DERIVED,
                    "x^2/(x+C) convex increasing; Jensen; m^2/(m+C) <= Q => m <= Q + sqrt(CQ); "
                    + _DERIVED),),
)

_sgd_cond = L1 * sp.sqrt(2 * D_f * V / ((L0 + L1 * C) * T))
sgd_theorem = inversion_sgd.compose(
    "yang.sgd_theorem (Theorem 3.4 shape)",
    {"Q": sgd_descent.tuned()},
    sources=(Source(YANG, "Theorem 3.4, eqs. (8)-(9)", Provenance.DERIVED,
                    "paper's statement MISSING; shape and all constants " + _DERIVED),),
    assumptions=(_A_SETTING, _A_C,
                 Assumption("L1 eta C V <= 1/3 (T >= T0)", _sgd_cond <= sp.Rational(1, 3))),
    regime={"T": 1},
)

_QC = 6 * sp.sqrt(2 * D_f * (L0 + L1 * C)) * nu
sgd_corollary = Theorem(
    name="yang.sgd_corollary (Corollary 3.5 shape)",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=_QC + sp.sqrt(C * _QC),
    sources=(Source(YANG, "Corollary 3.5", Provenance.DERIVED,
                    "Theorem 3.4 shape with Lemma 3.1 sigma, T -> oo; no non-vanishing term; "
                    + _DERIVED),
             gs.HEADLINE, *sgd_theorem.sources, *gs.lemma31_sigma.sources),
    assumptions=(_A_SETTING, _A_C, _A_DELTA,
                 Assumption("L1 sqrt(2 D_f/(L0 + L1 C)) nu <= 1/3",
                            L1 * sp.sqrt(2 * D_f / (L0 + L1 * C)) * nu <= sp.Rational(1, 3))),
    steps=((None, sgd_theorem), ("sigma", gs.lemma31_sigma)),
    hyperparameters={"C": 3 * tau0},
    description="the bound increases with C, so the smallest admissible C = 3 tau0 is chosen",
)


# ----------------------------------------------------------------------------- registry
register(Entry(
    name="nonconvex.clipped_sgd",
    title="clipped SGD (Yang et al. DP-SGD, Cor 3.5, T -> oo)",
    problem_class="nonconvex",
    theorem=sgd_corollary,
    tuned=sgd_corollary.tuned("yang.sgd_corollary (C = 3 tau0)"),
    to_params=gs.problem_params,
    aliases=("yang.sgd",),
    tunable={"C": lambda p: (3 * p["tau0"], math.inf)},
    notes="tau0 = 2G, L0 = L, L1 = 0, D_f = R unless given; c2 fitted with the "
          "without-replacement RDP accountant",
    problem_names=gs.PROBLEM_NAMES,
    algorithm="dpbounds.algorithms.dp_sgd",
    figure="paper_figs/yang_nsgd.py",
    test="tests/bounds/nonconvex/test_normalized_and_clipped_sgd.py",
))
