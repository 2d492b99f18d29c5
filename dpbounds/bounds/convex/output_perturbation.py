r"""Output perturbation for convex DP-ERM: the exact regularised minimiser plus Gaussian noise.

Kamath's lecture, §2 (after Chaudhuri, Monteleoni & Sarwate 2011 and Rubinstein et al. 2012):

* Lemma 1: argmin sensitivity :math:`2n/\lambda` as printed (VERBATIM) and :math:`2/\lambda` for
  the sum form with replace-one neighbours (DERIVED; the printed value is conservative by a factor
  :math:`n`); Gaussian noise with the classical calibration
  :math:`\sigma=\Delta\sqrt{2\log(1.25/\delta)}/\varepsilon` (Dwork & Roth 2014, Thm A.1,
  :math:`\varepsilon<1`; the lecture only prints
  :math:`O(n^2\log(1/\delta)/(\lambda^2\varepsilon^2))`).

The algorithm is :func:`dpbounds.algorithms.output_perturbation`.

Example
-------
>>> from dpbounds.bounds.convex import output_perturbation as op
>>> float(op.output_perturbation_sigma_tight.evaluate(lam=1.0, eps=0.5, delta=1e-5)) > 0
True
"""

from __future__ import annotations

import sympy as sp

from dpbounds.bounds.theorem import Assumption, Lemma, sym
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = [
    "output_perturbation_sigma",
    "output_perturbation_sigma_tight",
]

n, eps, delta, lam = sym("n"), sym("eps"), sym("delta"), sym("lam")

_A_DELTA = Assumption("0 < delta < 1", delta < 1)
_A_EPS1 = Assumption("eps < 1 (classical Gaussian mechanism)", eps < 1)

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
