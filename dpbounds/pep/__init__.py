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
* :mod:`~dpbounds.pep.banded` — the banded relaxation for long horizons;
* :mod:`~dpbounds.pep.certificate` — the dual certificate and its exact check;
* :mod:`~dpbounds.pep.recovery` — the worst-case function recovered from a solution;
* :mod:`~dpbounds.pep.lyapunov` — a noise-aware Lyapunov bound at any horizon for heavy ball
  (about 1 CPU-s; 1.02x to 4.3x the PEP value at T <= 6, about 2.2x the banded PEP at T = 100
  for (alpha, beta) = (0.5, 0.3), mu = 0.1, against 3.9e4x for Prop. 3.4's rate-optimal
  potential there), Nesterov and the two-parameter family (about 0.8 CPU-s; 1.005x to 1.9x
  the PEP value at T <= 6 on eight random problems, 2.1x the banded PEP at T = 100 for
  (0.5, 0.3)).

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
extrapolated 20 minutes per solve.

Long horizons: ``pairs="banded"`` (:mod:`~dpbounds.pep.banded`) keeps the interpolation pairs
and the noise orthogonality within ``window`` steps, writes the Gram matrix over the iterates and
gradients (where every kept constraint is banded) and replaces the one big PSD cone by the
chain of small window cones, which is exact for that relaxation (chordal completion). A valid
upper bound, not the PEP: 0.6% above it at T = 10 (window 1), equal to it when the window covers
the horizon. Cost, heavy ball (alpha, beta) = (0.5, 0.3), mu = 0.1, L = 1, E0 = 1,
s_t^2 = 0.01, ``time.process_time`` on the shared 2-core machine, certificate included (its
second solve and the exact banded check):

====  ==========  ==========  ==========  =====================
T     window 1    window 2    window 3    value (w = 1, 2, 3)
====  ==========  ==========  ==========  =====================
10    0.36 s      0.16 s      0.33 s      0.23858 0.23813 0.23782
20    0.32 s      0.43 s      1.0 s       0.05717 0.05659 0.05619
30    0.54 s      0.97 s      2.2 s       0.01762 0.01720 0.01688
50    0.96 s      1.6 s       3.4 s       0.006087 0.005979 0.005886
100   3.0 s       6.6 s       9.0 s       0.005381 0.005309 0.005247
200   12 s        19 s        39 s        0.005381 0.005309 0.005247
====  ==========  ==========  ==========  =====================

(``MAX_BANDED_STEPS`` = 200 caps the horizon). The relaxation's slack grows with T (same
problem, full PEP with all pairs against windows 1, 2, 3, 5):

====  ========  ===================================================
T     full      banded w = 1, 2, 3, 5 (excess over the full PEP)
====  ========  ===================================================
10    0.23713   0.23858, 0.23813, 0.23782, -- (+0.6%, +0.4%, +0.3%)
20    0.05501   0.05717, 0.05659, 0.05619, 0.05566 (+3.9%, +2.9%, +2.1%, +1.2%)
30    0.01583   0.01762, 0.01720, 0.01688, 0.01645 (+11%, +8.6%, +6.6%, +3.9%)
====  ========  ===================================================

(the full PEP took 6.8 and 36 CPU-s at T = 20 and 30 without its certificate).

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
from dpbounds.pep.lyapunov import LyapunovBound, lyapunov_bound
from dpbounds.pep.recovery import RecoveredFunction, recover_worst_function
from dpbounds.pep.stochastic import PEPResult, pep_worst_case

__all__ = [
    "SOURCE_INTERPOLATION",
    "SOURCE_STOCHASTIC_PEP",
    "FixedStepMethod",
    "LyapunovBound",
    "PEPCertificate",
    "PEPResult",
    "RecoveredFunction",
    "lyapunov_bound",
    "pep_worst_case",
    "recover_worst_function",
    "verify_pep_certificate",
]
