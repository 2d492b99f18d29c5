r"""Noisy projected SGD for convex DP-ERM (Bassily, Smith & Thakurta 2014; Kamath's lecture).

The lecture's objective is a **sum** :math:`\mathcal L(\theta,D)=\sum_{i=1}^n\ell(\theta,x_i,y_i)`
of convex :math:`L`-Lipschitz losses over a convex set :math:`\mathcal C` of diameter
``diam`` :math:`=\lVert\mathcal C\rVert_2`; every excess-risk bound comes in the sum form and in the
average form (divided by :math:`n`).

* :data:`bst14_sigma` — the lecture's Algorithm 3 (VERBATIM):
  :math:`\sigma^2=32L^2n^2\log(n/\delta)\log(1/\delta)/\varepsilon^2`, :math:`T=n^2`;
* :data:`bst14_excess_risk` composes Theorem 2 (Shamir & Zhang) with
  :math:`G^2=n^2L^2+d\sigma^2`. The lecture writes Theorem 2 as
  :math:`O(\lVert\mathcal C\rVert_2G\log T/\sqrt T)`; we use the explicit form
  :math:`2\lVert\mathcal C\rVert_2G(2+\log T)/\sqrt T` of Shamir & Zhang (2013, Thm 2, step
  :math:`\lVert\mathcal C\rVert_2/(G\sqrt t)`), labelled RECONSTRUCTED (recalled, not in the seed).
  ``bst14_excess_risk.exponents(("d", "n", "eps"))`` gives :math:`d^{1/2}\varepsilon^{-1}`
  (:math:`n^0` up to logs): the lecture's :math:`\tilde O(\lVert\mathcal C\rVert L
  \sqrt{d\log(1/\delta)}/\varepsilon)`.
* :data:`bst14_excess_risk_average` — the average form, registered as
  ``convex.noisy_projected_sgd`` (alias ``kamath.bst14``);
* :data:`bst14_excess_risk_at_steps` — the same chain at any horizon ``T`` and noise ``sigma``
  (DERIVED: the lecture states only :math:`T=n^2`): the bound of a run of ``T`` steps, e.g.
  :math:`2\lVert\mathcal C\rVert_2\sqrt{n^2L^2+d\sigma^2}(2+\log T)/(n\sqrt T)`.

Example
-------
>>> from dpbounds.bounds.convex import noisy_projected_sgd as npsgd
>>> print(npsgd.bst14_excess_risk.exponents(("d", "n", "eps")))
d^(1/2) eps^(-1)
>>> print(npsgd.bst14_excess_risk_average.exponents(("d", "n", "eps")))
d^(1/2) n^(-1) eps^(-1)
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

from dpbounds.bounds.registry import Entry, register
from dpbounds.bounds.theorem import Assumption, Lemma, Theorem, sym
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = [
    "bst14_excess_risk",
    "bst14_excess_risk_at_steps",
    "bst14_excess_risk_average",
    "bst14_sigma",
    "shamir_zhang",
]

n, d, eps, delta = sym("n"), sym("d"), sym("eps"), sym("delta")
L, diam, G, T = sym("L"), sym("diam"), sym("G"), sym("T")

_A_CONVEX = Assumption("loss convex and L-Lipschitz (||grad l|| <= L) on a convex set C of "
                       "diameter diam; sum-form objective")
_A_DELTA = Assumption("0 < delta < 1", delta < 1)
_A_N = Assumption("n > delta (so log(n/delta) > 0)", n > delta)

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

#: Theorem 2 at the run's own horizon and noise (any T, any sigma)
bst14_excess_risk_at_steps = Theorem(
    name="kamath.algorithm3_utility at T steps (average form)",
    quantity=r"\mathbb E[\frac1n\mathcal L(\theta_T)-\frac1n\mathcal L(\theta^*)]",
    expr=shamir_zhang.compose("_", {"G": _G_noisy}).expr / n,
    sources=(Source(KAMATH, "utility of Algorithm 3 at the run's T and sigma", Provenance.DERIVED,
                    "the lecture states the bound only at T = n^2 with its sigma; Theorem 2 "
                    "(Shamir-Zhang) holds for every T with step diam/(G sqrt(t)), and one step's "
                    "n grad l + N(0, sigma^2 I) has E||G_t||^2 <= n^2 L^2 + d sigma^2 for any "
                    "sigma; divided by n (average form)"),
             *shamir_zhang.sources),
    assumptions=(_A_CONVEX,),
    steps=((None, shamir_zhang),),
    regime={"d": 1, "n": 1},
    description="the bound of a run of T steps at noise sigma (e.g. T = 20 n and the RDP "
                "sigma for T); equals bst14_excess_risk_average at T = n^2, sigma = bst14_sigma",
)


# ----------------------------------------------------------------------------- registry
def problem_params(p: Mapping[str, float]) -> dict[str, float]:
    """The shared problem in the lecture's symbols: Lipschitz constant ``L`` := ``G``,
    ``n`` := ``N``, diameter ``diam`` := ``R`` unless given."""
    return {"d": p["d"], "n": p.get("n", p["N"]), "eps": p["eps"], "delta": p["delta"],
            "L": p["G"], "diam": p.get("diam", p["R"])}


register(Entry(
    name="convex.noisy_projected_sgd",
    title="noisy projected SGD, average loss (Bassily-Smith-Thakurta; Kamath Alg. 3)",
    problem_class="convex",
    theorem=bst14_excess_risk_average,
    tuned=bst14_excess_risk_average,
    to_params=problem_params,
    aliases=("kamath.bst14",),
    notes="Lipschitz constant L := G, diameter := R unless given; T = n^2 (VERBATIM)",
    scaling_variables=("d", "n", "eps"),
    problem_names={"n": "N", "L": "G"},
    algorithm="dpbounds.algorithms.noisy_projected_sgd",
    figure="paper_figs/kamath_erm.py",
    test="tests/bounds/convex/test_dp_erm.py",
))
