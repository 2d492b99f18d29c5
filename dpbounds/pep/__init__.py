r"""Noise-aware performance estimation (PEP) for fixed-step momentum methods on
:math:`\mathcal S_{\mu,L}`.

The worst case of :math:`\mathbb E[F(x_T)]-F^\ast` (or :math:`\mathbb E\lVert x_T-x^\ast\rVert^2`)
over every :math:`L`-smooth :math:`\mu`-strongly convex :math:`F` for gradient descent, heavy
ball, Nesterov or any fixed :math:`(\alpha,\beta,\gamma)`, when the oracle adds zero-mean noise of
second moment :math:`s_t^2` uncorrelated with the past: an SDP over the expected Gram matrix
(Taylor & Bach 2019's stochastic PEP with Taylor, Hendrickx & Glineur's interpolation conditions;
the formulation is **[DERIVED]**). Its value is a valid upper bound on the worst case; its dual is
a certificate :math:`\lambda_0E_0+\sum_t\lambda_ts_t^2` valid for every :math:`E_0` and
:math:`s`, the shape of a DP utility bound, checked in exact rational arithmetic.

One concept per module:

* :mod:`~dpbounds.pep.formulation` — the method family, the Gram basis, the interpolation
  inequalities (float or exact);
* :mod:`~dpbounds.pep.stochastic` — the SDP (cvxpy; Clarabel, then SCS) and its result;
* :mod:`~dpbounds.pep.certificate` — the dual certificate and its exact check.

Examples
--------
>>> from dpbounds.pep import FixedStepMethod, pep_worst_case
>>> r = pep_worst_case(FixedStepMethod.heavy_ball(0.5, 0.3), 0.1, 1.0, 3, initial_gap=1.0,
...                    noise_variances=[0.01, 0.01, 0.01])
>>> r.certified_value >= r.value > 0
True
"""

from __future__ import annotations

from dpbounds.pep.certificate import PEPCertificate, verify_pep_certificate
from dpbounds.pep.formulation import SOURCE_INTERPOLATION, SOURCE_STOCHASTIC_PEP, FixedStepMethod
from dpbounds.pep.stochastic import PEPResult, pep_worst_case

__all__ = [
    "SOURCE_INTERPOLATION",
    "SOURCE_STOCHASTIC_PEP",
    "FixedStepMethod",
    "PEPCertificate",
    "PEPResult",
    "pep_worst_case",
    "verify_pep_certificate",
]
