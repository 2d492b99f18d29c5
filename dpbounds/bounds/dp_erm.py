r"""Convex DP-ERM baselines from Kamath's lecture (CS 860, Lecture 13).

The lecture's objective is a **sum** :math:`\mathcal L(\theta,D)=\sum_{i=1}^n\ell(\theta,x_i,y_i)`
of convex :math:`L`-Lipschitz losses over a convex set :math:`\mathcal C` of diameter
``diam`` :math:`=\lVert\mathcal C\rVert_2`; every excess-risk bound comes in the sum form and in the
average form (divided by :math:`n`).

* Noisy projected SGD (Bassily, Smith, Thakurta 2014; the lecture's Algorithm 3, VERBATIM):
  :data:`bst14_sigma` :math:`\sigma^2=32L^2n^2\log(n/\delta)\log(1/\delta)/\varepsilon^2`,
  :math:`T=n^2`; :data:`bst14_excess_risk` composes Theorem 2 (Shamir & Zhang) with
  :math:`G^2=n^2L^2+d\sigma^2`. The lecture writes Theorem 2 as
  :math:`O(\lVert\mathcal C\rVert_2G\log T/\sqrt T)`; we use the explicit form
  :math:`2\lVert\mathcal C\rVert_2G(2+\log T)/\sqrt T` of Shamir & Zhang (2013, Thm 2, step
  :math:`\lVert\mathcal C\rVert_2/(G\sqrt t)`), labelled RECONSTRUCTED (recalled, not in the seed).
  ``bst14_excess_risk.exponents(("d", "n", "eps"))`` gives :math:`d^{1/2}\varepsilon^{-1}`
  (:math:`n^0` up to logs): the lecture's :math:`\tilde O(\lVert\mathcal C\rVert L
  \sqrt{d\log(1/\delta)}/\varepsilon)`.
* Output perturbation (Lemma 1): argmin sensitivity :math:`2n/\lambda` as printed (VERBATIM) and
  :math:`2/\lambda` for the sum form with replace-one neighbours (DERIVED; the printed value is
  conservative by a factor :math:`n`); Gaussian noise with the classical calibration
  :math:`\sigma=\Delta\sqrt{2\log(1.25/\delta)}/\varepsilon` (Dwork & Roth 2014, Thm A.1,
  :math:`\varepsilon<1`; the lecture only prints
  :math:`O(n^2\log(1/\delta)/(\lambda^2\varepsilon^2))`).
* Objective perturbation: the lecture gives no constants; :data:`objective_perturbation_sigma`
  is :math:`\sigma^2=(8\log(2/\delta)+4\varepsilon)(\zeta/\varepsilon)^2` of the ObjPert baseline
  in Lee & Kifer's code (after Kifer, Smith, Thakurta 2012), with its extra regularisation
  :math:`2\lambda_H/\varepsilon`.

Example
-------
>>> from dpbounds.bounds import dp_erm
>>> print(dp_erm.bst14_excess_risk.exponents(("d", "n", "eps")))
d^(1/2) eps^(-1)
>>> print(dp_erm.bst14_excess_risk_average.exponents(("d", "n", "eps")))
d^(1/2) n^(-1) eps^(-1)
"""

from __future__ import annotations

import sympy as sp

from dpbounds.bounds.theorem import Assumption, Lemma, Theorem, sym
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = [
    "bst14_excess_risk",
    "bst14_excess_risk_average",
    "bst14_sigma",
    "objective_perturbation_regularisation",
    "objective_perturbation_sigma",
    "output_perturbation_sigma",
    "output_perturbation_sigma_tight",
    "shamir_zhang",
]

n, d, eps, delta = sym("n"), sym("d"), sym("eps"), sym("delta")
L, diam, lam, G, T = sym("L"), sym("diam"), sym("lam"), sym("G"), sym("T")
zeta, lam_H = sym("zeta"), sym("lam_H")

_A_CONVEX = Assumption("loss convex and L-Lipschitz (||grad l|| <= L) on a convex set C of "
                       "diameter diam; sum-form objective")
_A_DELTA = Assumption("0 < delta < 1", delta < 1)
_A_N = Assumption("n > delta (so log(n/delta) > 0)", n > delta)
_A_EPS1 = Assumption("eps < 1 (classical Gaussian mechanism)", eps < 1)

_SRC_SZ = Source("Shamir & Zhang, Stochastic Gradient Descent for Non-smooth Optimization, "
                 "ICML 2013", "Theorem 2", Provenance.RECONSTRUCTED,
                 "constant 2(2 + log T) recalled from the primary source; the lecture "
                 "(Theorem 2) prints O(diam G log T/sqrt(T))")

shamir_zhang = Lemma(
    name="kamath.theorem2 (Shamir-Zhang)",
    quantity=r"\mathbb E[F(\theta_T)-F(\theta^*)]",
    expr=2 * diam * G * (2 + sp.log(T)) / sp.sqrt(T),
    sources=(Source(KAMATH, "Theorem 2", Provenance.VERBATIM,
                    "O(||C||_2 G log T/sqrt(T)), step ||C||_2/(G sqrt(t)), E||G_t||^2 <= G^2"),
             _SRC_SZ),
    assumptions=(Assumption("F convex; unbiased gradients with E||G_t||^2 <= G^2; projection "
                            "onto C of diameter diam"),),
)

bst14_sigma = Lemma(
    name="kamath.algorithm3_sigma (BST14)",
    quantity=r"\sigma\ \text{(Gaussian noise std per step)}",
    expr=sp.sqrt(32 * L**2 * n**2 * sp.log(n / delta) * sp.log(1 / delta)) / eps,
    sources=(Source(KAMATH, "Algorithm 3", Provenance.VERBATIM,
                    "sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta)/eps^2, T = n^2; the "
                    "privacy argument is approximate ('roughly'): a sufficient calibration"),),
    assumptions=(_A_DELTA, _A_N),
)

_G_noisy = sp.sqrt(n**2 * L**2 + d * sym("sigma") ** 2)

bst14_excess_risk = shamir_zhang.compose(
    "kamath.algorithm3_utility (BST14, sum form)",
    {"G": _G_noisy},
    sources=(Source(KAMATH, "utility of Algorithm 3", Provenance.VERBATIM,
                    "O~(||C||_2 L sqrt(d log(1/delta))/eps) (sum form); explicit constant from "
                    "Shamir-Zhang (RECONSTRUCTED)"),),
    assumptions=(_A_CONVEX, _A_DELTA, _A_N),
    hyperparameters={"T": n**2, "sigma": bst14_sigma.expr},
    regime={"d": 1, "n": 1},
).tuned("kamath.algorithm3_utility (BST14, sum form)")
bst14_excess_risk = bst14_excess_risk.replace(
    steps=bst14_excess_risk.steps + (("sigma", bst14_sigma),))

bst14_excess_risk_average = Theorem(
    name="kamath.algorithm3_utility (BST14, average form)",
    quantity=r"\mathbb E[\frac1n\mathcal L(\hat\theta)-\frac1n\mathcal L(\theta^*)]",
    expr=bst14_excess_risk.expr / n,
    sources=(Source(KAMATH, "utility of Algorithm 3, average form", Provenance.DERIVED,
                    "sum form divided by n: O~(||C|| L sqrt(d log(1/delta))/(n eps))"),
             *bst14_excess_risk.sources),
    assumptions=bst14_excess_risk.assumptions,
    steps=((None, bst14_excess_risk),),
    regime={"d": 1, "n": 1},
)

output_perturbation_sigma = Lemma(
    name="kamath.output_perturbation_sigma (lecture sensitivity 2n/lambda)",
    quantity=r"\sigma\ \text{(output noise std)}",
    expr=(2 * n / lam) * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / delta)) / eps,
    sources=(Source(KAMATH, "Lemma 1 + output perturbation", Provenance.VERBATIM,
                    "argmin sensitivity 2n/lambda as printed (1-Lipschitz losses)"),
             Source("Dwork & Roth, The Algorithmic Foundations of DP, 2014", "Theorem A.1",
                    Provenance.RECONSTRUCTED,
                    "sigma = Delta sqrt(2 log(1.25/delta))/eps for eps < 1; the lecture prints "
                    "O(n^2 log(1/delta)/(lambda^2 eps^2)) for the variance")),
    assumptions=(_A_DELTA, _A_EPS1,
                 Assumption("1-Lipschitz convex losses, 1-strongly convex regulariser N")),
)

output_perturbation_sigma_tight = Lemma(
    name="kamath.output_perturbation_sigma (sum-form sensitivity 2/lambda)",
    quantity=r"\sigma\ \text{(output noise std)}",
    expr=(2 / lam) * sp.sqrt(2 * sp.log(sp.Rational(5, 4) / delta)) / eps,
    sources=(Source(KAMATH, "Lemma 1 (caution)", Provenance.DERIVED,
                    "for sum + lambda N(theta) with replace-one neighbours the minimiser moves by "
                    "<= ||grad l_j - grad l'_j||/lambda <= 2/lambda (1-Lipschitz)"),
             output_perturbation_sigma.sources[1]),
    assumptions=output_perturbation_sigma.assumptions,
)

objective_perturbation_sigma = Lemma(
    name="kamath.objective_perturbation_sigma",
    quantity=r"\sigma\ \text{(std of the linear perturbation } b\text{)}",
    expr=sp.sqrt(8 * sp.log(2 / delta) + 4 * eps) * zeta / eps,
    sources=(Source(KAMATH, "objective perturbation", Provenance.VERBATIM,
                    "L^priv = sum l + lambda/2 ||theta||^2 + <b, theta>; no constants in the "
                    "lecture"),
             Source("Lee & Kifer, KDD 2018, ObjPert baseline (code ppmlguy/DP-AGD), after "
                    "Kifer, Smith, Thakurta 2012", "delta > 0 branch",
                    Provenance.RECONSTRUCTED,
                    "sigma^2 = (8 log(2/delta) + 4 eps)(zeta/eps)^2, zeta = Lipschitz constant; "
                    "facts read from the code")),
    assumptions=(_A_DELTA, Assumption("exact minimiser; loss zeta-Lipschitz with "
                                      "lambda_H-bounded Hessian")),
)

objective_perturbation_regularisation = Lemma(
    name="kamath.objective_perturbation_regularisation",
    quantity=r"\Delta\ \text{(extra ridge coefficient required)}",
    expr=2 * lam_H / eps,
    sources=(objective_perturbation_sigma.sources[1],),
)
