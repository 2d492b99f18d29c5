r"""Objective perturbation for convex DP-ERM: minimise the loss plus a random linear term.

Kamath's lecture, §3: :math:`\mathcal L^{\text{priv}}=\sum\ell+\frac\lambda2\lVert\theta\rVert^2
+\langle b,\theta\rangle`. The lecture gives no constants; :data:`objective_perturbation_sigma`
is :math:`\sigma^2=(8\log(2/\delta)+4\varepsilon)(\zeta/\varepsilon)^2` of the ObjPert baseline
in Lee & Kifer's code (after Kifer, Smith, Thakurta 2012), with its extra regularisation
:math:`2\lambda_H/\varepsilon` (:data:`objective_perturbation_regularisation`).

The algorithm is :func:`dpbounds.algorithms.objective_perturbation`.

Example
-------
>>> from dpbounds.bounds.convex import objective_perturbation as obj
>>> float(obj.objective_perturbation_regularisation.evaluate(lam_H=0.25, eps=0.5))
1.0
"""

from __future__ import annotations

import sympy as sp

from dpbounds.bounds.theorem import Assumption, Lemma, sym
from dpbounds.provenance import KAMATH, Provenance, Source

__all__ = [
    "objective_perturbation_regularisation",
    "objective_perturbation_sigma",
]

eps, delta = sym("eps"), sym("delta")
zeta, lam_H = sym("zeta"), sym("lam_H")

_A_DELTA = Assumption("0 < delta < 1", delta < 1)

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
