r"""The LMI certificate of Kuru et al., Prop. 3.4, for DP heavy ball on :math:`\mathcal S_{\mu,L}`.

For a step :math:`\alpha` and momentum :math:`\beta`, a rate :math:`\rho\in(0,1)` is certified when
there are a symmetric :math:`P\succeq0` (2x2), :math:`c_0\ge0` and :math:`c>0` with

.. math:: c_0X_0+c\,[X_1+(1-\rho^2)X_2]\succeq\Phi(A,B,P,\rho)
          =\begin{bmatrix}A^\top PA-\rho^2P&A^\top PB\\B^\top PA&B^\top PB\end{bmatrix}
          \qquad(22)

(:math:`3\times3`; :math:`A=[[1+\beta,-\beta],[1,0]]`, :math:`B=[-\alpha;0]`, :math:`C=[1,0]`).
Then (23) bounds :math:`\mathbb E[F(x_t)-F^\ast]` for every :math:`F\in\mathcal S_{\mu,L}`.
The **minimal rate** :math:`\rho^\ast` is the infimum of the certified :math:`\rho`; it need not be
attained (at :math:`\rho^\ast` the LMI is typically singular), so what is returned is a
bracket ``rho_lower <= rho* <= rho`` in which both ends are proven.

The package holds one concept per module (each states the conventions it settles, **[DERIVED]**,
``kuru_et_al.md`` §3, §11):

* :mod:`~dpbounds.lmi.heavy_ball_lmi.formulation` — the blocks of (22) and its assembly
  (sign of :math:`B`, :math:`c>0`);
* :mod:`~dpbounds.lmi.heavy_ball_lmi.verification` — the exact, solver-free check of a
  certificate;
* :mod:`~dpbounds.lmi.heavy_ball_lmi.certificate` — the result types and the bound (23);
* :mod:`~dpbounds.lmi.heavy_ball_lmi.solvers` — the margin SDP at one :math:`\rho` (cvxpy and
  direct Clarabel back-ends, normalised units);
* :mod:`~dpbounds.lmi.heavy_ball_lmi.rate_search` — the search for the minimal certified rate
  and its proven lower end.

Examples
--------
>>> from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate
>>> cert = heavy_ball_lmi_rate(mu=0.5, L=1.0, alpha=0.5, beta=0.3)
>>> cert.certified, cert.verified, 0.6 < cert.rho_lower <= cert.rho < 0.75
(True, True, True)
>>> heavy_ball_lmi_rate(mu=0.1, L=1.0, alpha=1.9, beta=0.9).certified
False
"""

from __future__ import annotations

from dpbounds.bounds.strongly_convex.heavy_ball import SOURCE_PROP34
from dpbounds.lmi.heavy_ball_lmi.certificate import (
    LMICertificate,
    NoCertificate,
    heavy_ball_lmi_bound,
    heavy_ball_lmi_bound_as_printed,
)
from dpbounds.lmi.heavy_ball_lmi.formulation import assemble_lmi, lmi_blocks
from dpbounds.lmi.heavy_ball_lmi.rate_search import (
    heavy_ball_lmi_certificate_at,
    heavy_ball_lmi_rate,
    naive_heavy_ball_lmi_rate,
)
from dpbounds.lmi.heavy_ball_lmi.solvers import (
    DEFAULT_MARGIN,
    HeavyBallLMI,
    Probe,  # noqa: F401 (public before the split)
)
from dpbounds.lmi.heavy_ball_lmi.verification import Verification, verify_certificate

__all__ = [
    "DEFAULT_MARGIN",
    "SOURCE_PROP34",
    "HeavyBallLMI",
    "LMICertificate",
    "NoCertificate",
    "Verification",
    "assemble_lmi",
    "heavy_ball_lmi_bound",
    "heavy_ball_lmi_bound_as_printed",
    "heavy_ball_lmi_certificate_at",
    "heavy_ball_lmi_rate",
    "lmi_blocks",
    "naive_heavy_ball_lmi_rate",
    "verify_certificate",
]
