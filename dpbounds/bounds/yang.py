r"""Yang et al.: DP-NSGD (:math:`g/(\lVert g\rVert+r)`) and clipped DP-SGD under
:math:`(L_0,L_1)`-smoothness.

The seed lost every formula. **Only the headline rate is the paper's (abstract, VERBATIM):**
:math:`\min_t\mathbb E\lVert\nabla f(x_t)\rVert=
  O\big((d\log(1/\delta))^{1/4}/\sqrt{N\epsilon}\big)`,
plus, for DP-NSGD, a non-vanishing term governed by :math:`r`. Every bound, constant,
learning rate and condition below is **DERIVED by dpbounds** (theory sheet ``yang_et_al.md``
§§5-8) for the noise model :math:`\tau_1=0` (:math:`\lVert\nabla f(x;z)-\nabla f(x)\rVert\le
\tau_0` a.s.); the :math:`\tau_1>0` case is not derived here.

Lemma chain (each its own :class:`~dpbounds.bounds.theorem.Lemma`):

* :data:`nsgd_inner_product` — :math:`\mathbb E\langle\nabla f,\frac{g}{\lVert g\rVert+r}\rangle
  \ge\frac{x(\kappa x-\tau_0^2/r)}{x+r}`, :math:`x=\lVert\nabla f\rVert`,
  :math:`\kappa=1-\tau_0/r` (write :math:`\frac g{\lVert g\rVert+r}=\frac g{x+r}+g(\cdot)`, bound
  the second part by :math:`x(x+\tau_0)\tau_0/(r(x+r))`); stated as an upper bound of the
  negated inner product.
* :data:`sgd_inner_product` — for :math:`C\ge3\tau_0`:
  :math:`\mathbb E\langle\nabla f,\mathrm{clip}_C(g)\rangle\ge\frac{Cx^2}{3(x+C)}` (no clipping
  when :math:`x\le C-\tau_0`; otherwise :math:`x\ge2\tau_0` and the clipped inner product is
  :math:`\ge\frac13\min(x^2,Cx)`). The paper's condition is :math:`C\ge2\tau_0/(1-\tau_1)`
  (RECONSTRUCTED); our constant 3 is DERIVED.
* descent with the :math:`(L_0,L_1)` descent lemma (Lemma A.1, RECONSTRUCTED), noise
  :math:`\sigma` on the batch sum, :math:`V=1+\sigma^2d/B^2`; the :math:`L_1\lVert\nabla f\rVert`
  term is absorbed with :math:`x\le x^2/(x+r)+r` and a step-size condition (the paper's
  :math:`T\ge T_0`);
* inversion by Jensen (:math:`x\mapsto x(\kappa'x-c')/(x+r)` and :math:`x^2/(x+C)` are convex).

Results:

* :data:`nsgd_theorem` (Thm 3.2 shape): :math:`\frac2\kappa\big(\frac{\tau_0^2}r+ar+Q\big)+
  \sqrt{2Qr/\kappa}` with :math:`Q=\sqrt{2D_fL_0V/T}`, :math:`a=L_1\sqrt{D_fV/(2L_0T)}\le\kappa/2`,
  :math:`\eta=\sqrt{2D_f/(L_0VT)}`.
* :data:`sgd_theorem` (Thm 3.4 shape): :math:`Q_C+\sqrt{CQ_C}`,
  :math:`Q_C=6\sqrt{2D_f(L_0+L_1C)V/T}`, :math:`\eta=\sqrt{2D_f/((L_0+L_1C)C^2VT)}`.
* :data:`nsgd_corollary`, :data:`sgd_corollary` (Cor 3.3, 3.5): Lemma 3.1's
  :math:`\sigma=c_2B\sqrt{T\log(1/\delta)}/(N\epsilon)` and :math:`T\to\infty` (as the paper's
  proof does): :math:`V/T\to\nu^2=c_2^2d\log(1/\delta)/(N\epsilon)^2`. ``c2`` is Lemma 3.1's
  existential constant; :func:`lemma31_constant` fits it for a given accountant.
* the **r / C trade-off**: :data:`nsgd_floor` :math:`=2\tau_0^2/(r-\tau_0)` (non-vanishing,
  decreasing in :math:`r`) vs :data:`nsgd_decaying` (grows like :math:`\sqrt r`); DP-SGD has no
  floor and its constant grows like :math:`\sqrt C`.

Example
-------
>>> from dpbounds.bounds import yang
>>> print(yang.nsgd_decaying.exponents(("d", "N", "eps", "log(1/delta)")))
d^(1/4) N^(-1/2) eps^(-1/2) log(1/delta)^(1/4)
>>> print(yang.sgd_corollary.exponents(("d", "N", "eps", "log(1/delta)")))
d^(1/4) N^(-1/2) eps^(-1/2) log(1/delta)^(1/4)
"""

from __future__ import annotations

import math

import sympy as sp

from dpbounds._validation import check_choice, check_int, check_open_interval, check_positive
from dpbounds.bounds.theorem import Assumption, Lemma, Theorem, sym
from dpbounds.provenance import YANG, Provenance, Source

__all__ = [
    "inversion_nsgd",
    "inversion_sgd",
    "lemma31_constant",
    "lemma31_sigma",
    "nsgd_corollary",
    "nsgd_decaying",
    "nsgd_descent",
    "nsgd_floor",
    "nsgd_inner_product",
    "nsgd_theorem",
    "sgd_corollary",
    "sgd_descent",
    "sgd_inner_product",
    "sgd_theorem",
]

d, N, eps, delta = sym("d"), sym("N"), sym("eps"), sym("delta")
L0, L1, D_f, tau0 = sym("L0"), sym("L1"), sym("D_f"), sym("tau0")
r, C, B, T, eta, sigma = sym("r"), sym("C"), sym("B"), sym("T"), sym("eta"), sym("sigma")
c2, x, Q, a = sym("c2"), sym("x"), sym("Q"), sym("a")

_DERIVED = "DERIVED by dpbounds (theory sheet yang_et_al.md), not the paper's"
_A_SETTING = Assumption(
    "f is (L0, L1)-smooth in the descent form of Lemma A.1; D_f = f(x_0) - inf f; "
    "E[grad f(x;z)] = grad f(x) and ||grad f(x;z) - grad f(x)|| <= tau0 a.s. (tau1 = 0); "
    "batches of size B without replacement; Gaussian noise sigma on the batch sum")
_A_R = Assumption("r > tau0 (regulariser above the gradient-noise level)", r > tau0)
_A_C = Assumption("C >= 3 tau0 (DERIVED clipping condition; paper: C >= 2 tau0/(1-tau1))",
                  C >= 3 * tau0)
_A_DELTA = Assumption("0 < delta < 1", delta < 1)

kappa = 1 - tau0 / r
V = 1 + sigma**2 * d / B**2

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
    sources=(Source(YANG, "Theorem 3.2, eqs. (4)-(5)", Provenance.DERIVED,
                    "paper's statement MISSING; shape and all constants " + _DERIVED),),
    assumptions=(Assumption("L1 sqrt(D_f V/(2 L0 T)) <= (1 - tau0/r)/2 (T >= T0)",
                            _a <= kappa / 2),),
    regime={"T": 1},
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

#: Lemma 3.1 (RECONSTRUCTED): sigma on the batch sum for (eps, delta)-DP, c2 existential.
lemma31_sigma = Lemma(
    name="yang.lemma31",
    quantity=r"\sigma\ \text{(noise std on the batch sum, per unit sensitivity bound)}",
    expr=c2 * B * sp.sqrt(T * sp.log(1 / delta)) / (N * eps),
    sources=(Source(YANG, "Lemma 3.1", Provenance.RECONSTRUCTED,
                    "same expression as Abadi et al. 2016 Thm 1; c1, c2 existential absolute "
                    "constants (fit c2 with lemma31_constant for a given accountant)"),),
    assumptions=(_A_DELTA,),
)

#: lim_{T->oo} V/T when sigma follows Lemma 3.1: V/T = 1/T + nu^2.
nu_squared = c2**2 * d * sp.log(1 / delta) / (N * eps) ** 2
_nu = sp.sqrt(nu_squared)

_SRC_COR = Source(YANG, "abstract", Provenance.VERBATIM,
                  "min_t E||grad f|| = O((d log(1/delta))^(1/4)/sqrt(N eps)) (exponents only)")

_Qn = sp.sqrt(2 * D_f * L0) * _nu
_an = L1 * sp.sqrt(D_f / (2 * L0)) * _nu
nsgd_corollary = Theorem(
    name="yang.nsgd_corollary (Corollary 3.3 shape)",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=2 / kappa * (tau0**2 / r + _an * r + _Qn) + sp.sqrt(2 * _Qn * r / kappa),
    sources=(Source(YANG, "Corollary 3.3", Provenance.DERIVED,
                    "Theorem 3.2 shape with Lemma 3.1 sigma, T -> oo; " + _DERIVED),
             _SRC_COR, *nsgd_theorem.sources, *lemma31_sigma.sources),
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

_QC = 6 * sp.sqrt(2 * D_f * (L0 + L1 * C)) * _nu
sgd_corollary = Theorem(
    name="yang.sgd_corollary (Corollary 3.5 shape)",
    quantity=r"\min_t\mathbb E\lVert\nabla f(x_t)\rVert",
    expr=_QC + sp.sqrt(C * _QC),
    sources=(Source(YANG, "Corollary 3.5", Provenance.DERIVED,
                    "Theorem 3.4 shape with Lemma 3.1 sigma, T -> oo; no non-vanishing term; "
                    + _DERIVED),
             _SRC_COR, *sgd_theorem.sources, *lemma31_sigma.sources),
    assumptions=(_A_SETTING, _A_C, _A_DELTA,
                 Assumption("L1 sqrt(2 D_f/(L0 + L1 C)) nu <= 1/3",
                            L1 * sp.sqrt(2 * D_f / (L0 + L1 * C)) * _nu <= sp.Rational(1, 3))),
    steps=((None, sgd_theorem), ("sigma", lemma31_sigma)),
    hyperparameters={"C": 3 * tau0},
    description="the bound increases with C, so the smallest admissible C = 3 tau0 is chosen",
)


def lemma31_constant(
    epsilon: float,
    delta: float,
    sampling_rate: float = 0.01,
    steps: int = 10_000,
    sampling: str = "without_replacement",
) -> float:
    r"""Fit Lemma 3.1's constant :math:`c_2` for one accountant and configuration.

    :math:`c_2=\sigma\,\epsilon/(q\sqrt{T\log(1/\delta)})` with :math:`\sigma` the noise std on the
    batch sum of normalised (norm < 1) or clipped-to-1 per-sample vectors:
    :func:`dpbounds.privacy.rdp.noise_multiplier_for_epsilon` times the sum's sensitivity (2 for
    sampling without replacement, replace-one; 1 for Poisson, add/remove). The value is only
    meaningful "for that accountant" (the paper's :math:`c_2` is existential).
    """
    from dpbounds.privacy.rdp import noise_multiplier_for_epsilon

    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    q = check_open_interval("sampling_rate", sampling_rate, 0.0, 1.0)
    steps = check_int("steps", steps, minimum=1)
    sampling = check_choice("sampling", sampling, ("without_replacement", "poisson"))
    z = noise_multiplier_for_epsilon(epsilon, delta, q, steps, sampling=sampling)
    sens = 2.0 if sampling == "without_replacement" else 1.0
    return z * sens * epsilon / (q * math.sqrt(steps * math.log(1.0 / delta)))
