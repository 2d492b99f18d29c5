r"""Output perturbation for convex DP-ERM: the exact regularised minimiser plus Gaussian noise.

Kamath's lecture, §2 (after Chaudhuri, Monteleoni & Sarwate 2011 and Rubinstein et al. 2012):

* Lemma 1: argmin sensitivity :math:`2n/\lambda` as printed (VERBATIM) and :math:`2/\lambda` for
  the sum form with replace-one neighbours (DERIVED; the printed value is conservative by a factor
  :math:`n`); Gaussian noise with the classical calibration
  :math:`\sigma=\Delta\sqrt{2\log(1.25/\delta)}/\varepsilon` (Dwork & Roth 2014, Thm A.1,
  :math:`\varepsilon<1`; the lecture only prints
  :math:`O(n^2\log(1/\delta)/(\lambda^2\varepsilon^2))`).

* Excess risk (DERIVED, ours; registered as ``convex.output_perturbation``): for the average
  form :math:`F=\frac1n\sum_i\ell_i+R` with :math:`G`-Lipschitz losses, a
  :math:`\mu`-strongly convex regulariser and :math:`F` :math:`L`-smooth, the output
  :math:`\hat\theta=\theta^\ast+b`, :math:`b\sim N(0,\sigma^2I)`, satisfies
  :math:`F(\theta^\ast+b)-F^\ast\le\frac L2\lVert b\rVert^2` (smoothness and
  :math:`\nabla F(\theta^\ast)=0`), so

  .. math:: \mathbb E[F(\hat\theta)]-F^\ast\le\frac{Ld\sigma^2}2
            =\frac{4LdG^2\log(1.25/\delta)}{n^2\mu^2\varepsilon^2}

  with the sensitivity :math:`2G/(n\mu)` (:data:`output_perturbation_sigma_tight` read with
  :math:`\lambda=n\mu` and :math:`G`-Lipschitz losses) and the classical Gaussian
  :math:`\sigma`. Equality holds for :math:`F=\frac L2\lVert\theta-\theta^\ast\rVert^2`;
  strong convexity gives the matching lower bound :math:`\mu d\sigma^2/2`.

The algorithm is :func:`dpbounds.algorithms.output_perturbation`.

Example
-------
>>> from dpbounds.bounds.convex import output_perturbation as op
>>> float(op.output_perturbation_sigma_tight.evaluate(lam=1.0, eps=0.5, delta=1e-5)) > 0
True
>>> print(op.excess_risk.exponents(("d", "n", "eps")))
d n^(-2) eps^(-2)
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.theorem import Assumption, Lemma, sym
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = [
    "excess_risk",
    "excess_risk_of_noise",
    "output_perturbation_sigma",
    "output_perturbation_sigma_tight",
]

n, eps, delta, lam = sym("n"), sym("eps"), sym("delta"), sym("lam")
d, G, L, mu, sigma = sym("d"), sym("G"), sym("L"), sym("mu"), sym("sigma")

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

#: The output moves by the noise only: F(theta* + b) - F* <= (L/2) ||b||^2.
excess_risk_of_noise = Lemma(
    name="output_perturbation.excess_risk (noise std sigma)",
    quantity=r"\mathbb E[F(\hat\theta)]-F^\ast",
    expr=L * d * sigma**2 / 2,
    sources=(Source(KAMATH, "output perturbation: excess risk", Provenance.DERIVED,
                    "F L-smooth, exact unconstrained minimiser theta* (grad F = 0): F(theta*+b) "
                    "- F* <= L ||b||^2/2 and E||b||^2 = d sigma^2; ours, not in the lecture"),),
    assumptions=(Assumption("F = (1/n) sum l_i + R is L-smooth and minimised exactly over R^d; "
                            "the output is theta* + N(0, sigma^2 I)"),),
    regime={"d": 1, "sigma": 1},
)

#: Lemma 1 in the average form: lambda = n mu, G-Lipschitz losses (sensitivity 2G/(n mu)).
_sigma_average = output_perturbation_sigma_tight.compose(
    "output_perturbation.sigma (average form, sensitivity 2G/(n mu))",
    {"lam": n * mu / G},
    exact=("lam",),  # a change of variables (lambda = n mu / G), not an upper bound
    assumptions=(Assumption("losses G-Lipschitz and convex, regulariser mu-strongly convex, "
                            "replace-one neighbours"),),
)

excess_risk = excess_risk_of_noise.compose(
    "output_perturbation.excess_risk (classical Gaussian, average form)",
    {"sigma": _sigma_average},
    regime={"d": 1, "n": 1},
    description="(L/2) d sigma^2 with sigma = 2G/(n mu) sqrt(2 log(1.25/delta))/eps; equality "
                "for F = (L/2)||theta - theta*||^2 (DERIVED)",
)


# ----------------------------------------------------------------------------- registry
def problem_params(p: Mapping[str, float]) -> dict[str, float]:
    """The shared problem in this bound's symbols (``n`` := ``N``; ``G``, ``L``, ``mu`` as
    given)."""
    return {"d": p["d"], "n": p["N"], "eps": p["eps"], "delta": p["delta"], "G": p["G"],
            "L": p["L"], "mu": p["mu"]}


register(Entry(
    name="convex.output_perturbation",
    title="output perturbation, regularised ERM, average loss (Kamath Lemma 1; risk DERIVED)",
    problem_class="convex",
    theorem=excess_risk,
    tuned=excess_risk,
    to_params=problem_params,
    requires=("mu",),
    notes="G-Lipschitz losses, mu-strongly convex regulariser, F L-smooth; classical Gaussian "
          "sigma (eps < 1; the analytic Gaussian's smaller sigma only lowers the risk)",
    scaling_variables=("d", "n", "eps"),
    problem_names={"n": "N"},
    algorithm="dpbounds.algorithms.output_perturbation",
    figure="paper_figs/kamath_erm.py",
    test="tests/bounds/convex/test_output_perturbation.py",
))
