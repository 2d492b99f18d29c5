r"""Normalized DP-SGD, :math:`g/(\lVert g\rVert+r)` plus Gaussian noise, under
:math:`(L_0,L_1)`-smoothness (Yang et al.'s DP-NSGD, arXiv 2206.13033).

The setting, Lemma 3.1's noise and the provenance (every constant **DERIVED by dpbounds**; only
the headline exponents are the paper's) are in
:mod:`~dpbounds.bounds.nonconvex.generalized_smoothness`.

Lemma chain (each its own :class:`~dpbounds.bounds.theorem.Lemma`):

* :data:`nsgd_inner_product` — :math:`\mathbb E\langle\nabla f,\frac{g}{\lVert g\rVert+r}\rangle
  \ge\frac{x(\kappa x-\tau_0^2/r)}{x+r}`, :math:`x=\lVert\nabla f\rVert`,
  :math:`\kappa=1-\tau_0/r` (write :math:`\frac g{\lVert g\rVert+r}=\frac g{x+r}+g(\cdot)`, bound
  the second part by :math:`x(x+\tau_0)\tau_0/(r(x+r))`); stated as an upper bound of the
  negated inner product.
* descent with the :math:`(L_0,L_1)` descent lemma (Lemma A.1, RECONSTRUCTED); the
  :math:`L_1\lVert\nabla f\rVert` term is absorbed with :math:`x\le x^2/(x+r)+r` and a step-size
  condition (the paper's :math:`T\ge T_0`);
* inversion by Jensen (:math:`x\mapsto x(\kappa'x-c')/(x+r)` is convex).

Results:

* :data:`nsgd_theorem` (Thm 3.2 shape): :math:`\frac2\kappa\big(\frac{\tau_0^2}r+ar+Q\big)+
  \sqrt{2Qr/\kappa}` with :math:`Q=\sqrt{2D_fL_0V/T}`, :math:`a=L_1\sqrt{D_fV/(2L_0T)}\le\kappa/2`,
  :math:`\eta=\sqrt{2D_f/(L_0VT)}`.
* :data:`nsgd_corollary` (Cor 3.3): Lemma 3.1's noise and :math:`T\to\infty` (as the paper's
  proof does).
* the **r trade-off**: :data:`nsgd_floor` :math:`=2\tau_0^2/(r-\tau_0)` (non-vanishing,
  decreasing in :math:`r`) vs :data:`nsgd_decaying` (grows like :math:`\sqrt r`); clipped DP-SGD
  (:mod:`~dpbounds.bounds.nonconvex.clipped_sgd`) has no floor.

Registered as ``nonconvex.normalized_sgd`` (alias ``yang.nsgd``).

Example
-------
>>> from dpbounds.bounds.nonconvex import normalized_sgd
>>> print(normalized_sgd.nsgd_decaying.exponents(("d", "N", "eps", "log(1/delta)")))
d^(1/4) N^(-1/2) eps^(-1/2) log(1/delta)^(1/4)
"""

from __future__ import annotations

import math

import sympy as sp

from dpbounds.bounds.nonconvex.generalized_smoothness import (
    DELTA,
    DERIVED_NOTE,
    HEADLINE,
    PROBLEM_NAMES,
    SETTING,
    V,
    lemma31_sigma,
    nu,
    problem_params,
)
from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.theorem import Assumption, Lemma, Theorem, sym
from dpbounds.provenance import YANG, Provenance, Source

__all__ = [
    "inversion_nsgd",
    "nsgd_corollary",
    "nsgd_decaying",
    "nsgd_descent",
    "nsgd_floor",
    "nsgd_inner_product",
    "nsgd_theorem",
]

L0, L1, D_f, tau0 = sym("L0"), sym("L1"), sym("D_f"), sym("tau0")
r, T, eta = sym("r"), sym("T"), sym("eta")
x, Q, a = sym("x"), sym("Q"), sym("a")

_DERIVED = DERIVED_NOTE
_A_SETTING, _A_DELTA = SETTING, DELTA
_A_R = Assumption("r > tau0 (regulariser above the gradient-noise level)", r > tau0)

kappa = 1 - tau0 / r

nsgd_inner_product = Lemma(
    name="yang.nsgd_inner_product",
    quantity=r"-\mathbb E\langle\nabla f(x),g/(\lVert g\rVert+r)\rangle",
    expr=-x * (kappa * x - tau0**2 / r) / (x + r),
    sources=(Source(YANG, "Lemma A.3 (shape)", Provenance.DERIVED,
                    "E<grad f, g/(||g||+r)> >= x(kappa x - tau0^2/r)/(x+r), x = ||grad f||, "
                    "kappa = 1 - tau0/r; " + _DERIVED),),
    assumptions=(_A_SETTING, _A_R),
    description="negative for x < tau0^2/(r - tau0): the source of the non-vanishing floor",
)

_a = L1 * sp.sqrt(D_f * V / (2 * L0 * T))  # eta L1 V / 2 at the chosen eta

nsgd_descent = Lemma(
    name="yang.nsgd_descent",
    quantity=r"\frac1T\sum_t\mathbb E\,\psi(\lVert\nabla f(x_t)\rVert),\ "
             r"\psi(x)=\frac{x((\kappa-a)x-\tau_0^2/r-ar)}{x+r}",
    expr=D_f / (eta * T) + L0 * eta * V / 2,
    sources=(Source(YANG, "Theorem 3.2 proof (Lemmas A.1, B.1, B.2)", Provenance.DERIVED,
                    "descent lemma + E||g^||^2 <= V + x <= x^2/(x+r) + r; a = eta L1 V/2; "
                    + _DERIVED),),
    assumptions=(_A_SETTING, _A_R),
    hyperparameters={"eta": sp.sqrt(2 * D_f / (L0 * V * T))},
)

inversion_nsgd = Lemma(
    name="yang.nsgd_inversion",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=2 / kappa * (tau0**2 / r + a * r + Q) + sp.sqrt(2 * Q * r / kappa),
    sources=(Source(YANG, "Theorem 3.2 proof", Provenance.DERIVED,
                    "psi convex; Jensen; largest root of psi(m) = Q with kappa - a >= kappa/2; "
                    + _DERIVED),),
    assumptions=(Assumption("a <= kappa/2 (step-size condition, the paper's T >= T0)"),),
)

nsgd_theorem = inversion_nsgd.compose(
    "yang.nsgd_theorem (Theorem 3.2 shape)",
    {"Q": nsgd_descent.tuned(), "a": _a},
    exact=("a",),  # a names the step-size term (a definition), it is not bounded by _a
    sources=(Source(YANG, "Theorem 3.2, eqs. (4)-(5)", Provenance.DERIVED,
                    "paper's statement MISSING; shape and all constants " + _DERIVED),),
    assumptions=(Assumption("L1 sqrt(D_f V/(2 L0 T)) <= (1 - tau0/r)/2 (T >= T0)",
                            _a <= kappa / 2),),
    regime={"T": 1},
)


_Qn = sp.sqrt(2 * D_f * L0) * nu
_an = L1 * sp.sqrt(D_f / (2 * L0)) * nu
nsgd_corollary = Theorem(
    name="yang.nsgd_corollary (Corollary 3.3 shape)",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=2 / kappa * (tau0**2 / r + _an * r + _Qn) + sp.sqrt(2 * _Qn * r / kappa),
    sources=(Source(YANG, "Corollary 3.3", Provenance.DERIVED,
                    "Theorem 3.2 shape with Lemma 3.1 sigma, T -> oo; " + _DERIVED),
             HEADLINE, *nsgd_theorem.sources, *lemma31_sigma.sources),
    assumptions=(_A_SETTING, _A_R, _A_DELTA,
                 Assumption("L1 sqrt(D_f/(2 L0)) nu <= (1 - tau0/r)/2",
                            _an <= kappa / 2)),
    steps=((None, nsgd_theorem), ("sigma", lemma31_sigma)),
    hyperparameters={"r": tau0 + tau0 ** sp.Rational(4, 3) * _Qn ** sp.Rational(-1, 3)},
    description="nu = c2 sqrt(d log(1/delta))/(N eps); the T -> oo limit of nsgd_theorem "
                "with sigma of Lemma 3.1 (V/T -> nu^2). Choice of r: balances the floor "
                "2 tau0^2/(r - tau0) against sqrt(2 Q r) (the floor then decays as nu^(1/3)).",
)

#: The non-vanishing part of DP-NSGD (T -> oo, nu -> 0): decreasing in r.
nsgd_floor = Theorem(
    name="yang.nsgd_floor",
    quantity="non-vanishing term of DP-NSGD",
    expr=2 * tau0**2 / (r - tau0),
    sources=(Source(YANG, "Theorem 3.2 (non-vanishing term)", Provenance.DERIVED,
                    "(2/kappa) tau0^2/r = 2 tau0^2/(r - tau0); " + _DERIVED),),
    assumptions=(_A_R,),
)

#: The decaying part of DP-NSGD: grows like sqrt(r), decays as (d log(1/delta))^(1/4)/sqrt(N eps).
nsgd_decaying = Theorem(
    name="yang.nsgd_decaying",
    quantity="decaying term of DP-NSGD",
    expr=2 / kappa * (_an * r + _Qn) + sp.sqrt(2 * _Qn * r / kappa),
    sources=nsgd_corollary.sources,
    assumptions=nsgd_corollary.assumptions,
)


# ----------------------------------------------------------------------------- registry
register(Entry(
    name="nonconvex.normalized_sgd",
    title="normalized SGD g/(||g|| + r) (Yang et al. DP-NSGD, Cor 3.3, T -> oo)",
    problem_class="nonconvex",
    theorem=nsgd_corollary,
    tuned=nsgd_corollary.tuned("yang.nsgd_corollary (tuned r)"),
    to_params=problem_params,
    aliases=("yang.nsgd",),
    tunable={"r": lambda p: (p["tau0"] * (1 + 1e-9), math.inf)},
    notes="tau0 = 2G, L0 = L, L1 = 0, D_f = R unless given; c2 fitted with the "
          "without-replacement RDP accountant; at fixed r the bound keeps the floor "
          "2 tau0^2/(r - tau0), so the paper's headline rate is that of the decaying part; "
          "r tuned to the problem trades the floor against it (DERIVED)",
    scaling_bound=nsgd_decaying,
    scaling_label="decaying part at fixed r",
    problem_names=PROBLEM_NAMES,
    algorithm="dpbounds.algorithms.dp_nsgd",
    figure="paper_figs/yang_nsgd.py",
    test="tests/bounds/nonconvex/test_normalized_and_clipped_sgd.py",
))
