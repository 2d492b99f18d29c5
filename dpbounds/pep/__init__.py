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

Cost (heavy ball, ``time.process_time`` on the 2-core development machine, Clarabel; a point
with ``certify=True`` is two SDP solves, the second with a margin, plus the exact check, so
about twice the solve):

====  ====  ==============  ===================  ==============================
T     n     solve, all      solve, consecutive   exact check (assembly + PSD)
====  ====  ==============  ===================  ==============================
5     12    0.03 s          0.02 s               0.01 s
10    22    0.25 s          0.13 s               0.03 s
20    42    6.6 s           4.2 s                0.19 s
30    62    36 s            12 s                 --
50    102   --              87 s                 --
====  ====  ==============  ===================  ==============================

The interior-point iteration factors the Nesterov-Todd block of the PSD cone, dense in the
:math:`n(n+1)/2` entries of the :math:`n=2T+2` Gram matrix (measured growth about
:math:`T^4`), and all pairs add :math:`O(T^2)` dense constraint rows. ``T = 100`` is out of
reach this way: all pairs would need a 3.4 GB constraint matrix (refused), consecutive pairs an
extrapolated 20 minutes per solve. Long horizons need a Lyapunov (potential) certificate whose
size does not grow with :math:`T` (Kuru et al.'s Prop. 3.4, :mod:`dpbounds.lmi`).

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
