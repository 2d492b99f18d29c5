r"""Heavy ball (DP-SHB) on quadratics: rate, additive noise term, exact stationary error.

Kuru et al., Section 3.2, Theorem 3.5 and its proof (Appendix B.3). Heavy ball with step
:math:`\alpha` and momentum :math:`\beta` on :math:`F(x)=\tfrac12x^\top Qx+a^\top x+b` with
:math:`\mu I\preceq Q\preceq LI` and noisy gradients :math:`\nabla F(x_t)+w_t`,
:math:`\mathbb E[w_tw_t^\top|x_t]\preceq\sigma_T^2I` (for Laplace noise of scale :math:`b`,
:math:`\sigma_T^2=2b^2`):

.. math::
   \mathbb E[F(x_t)]-F^\ast\le V(\xi_0)C_t^2\rho^{2t}+L\,m(\alpha,\beta) \qquad (25)

   m(\alpha,\beta)=\frac{\sigma_T^2}{2}\sum_{i=1}^d
       \frac{2\alpha(1+\beta)}{(1-\beta)\lambda_i(2+2\beta-\alpha\lambda_i)}.

One concept per module (each states what it settles, see ``kuru_et_al.md`` §11):

* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.dynamics` — iteration matrices, the rate
  (heavy-ball roots vs eq. (26) as printed) and the transient constant;
* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.stationary_error` — the exact noise term
  (stationary and finite-time error);
* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.quadratic_bound` — the bound (25);
* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.theorems` — the sympy theorem objects;
* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball.sources` — their citations.

Examples
--------
>>> from dpbounds.bounds.strongly_convex.heavy_ball import (
...     heavy_ball_rate, heavy_ball_rate_eq26_as_printed)
>>> round(heavy_ball_rate(1.0, 0.3, mu=0.5, L=1.0), 4)        # HB roots (App. B.3)
0.5477
>>> round(heavy_ball_rate_eq26_as_printed(1.0, 0.3, mu=0.5, L=1.0), 4)  # NAG roots
0.3873
"""

from __future__ import annotations

from dpbounds.bounds.strongly_convex.heavy_ball.dynamics import (
    classical_heavy_ball_parameters,
    heavy_ball_iteration_blocks,
    heavy_ball_iteration_matrix,
    heavy_ball_rate,
    heavy_ball_rate_eq26_as_printed,
    heavy_ball_transient_constant,
    nesterov_quadratic_rate,
)
from dpbounds.bounds.strongly_convex.heavy_ball.quadratic_bound import (
    heavy_ball_bound_valid,
    heavy_ball_quadratic_bound,
)
from dpbounds.bounds.strongly_convex.heavy_ball.sources import (
    SOURCE_B3_ROOTS,
    SOURCE_BOUND_DERIVED,
    SOURCE_EQ26_PRINTED,
    SOURCE_PROP34,
    SOURCE_STATIONARY,
    SOURCE_THM35,
)
from dpbounds.bounds.strongly_convex.heavy_ball.stationary_error import (
    StationaryError,
    heavy_ball_expected_error,
    heavy_ball_noise_term,
    heavy_ball_stationary_error,
    stationary_variance,
    stationary_variance_symbolic,
)
from dpbounds.bounds.strongly_convex.heavy_ball.theorems import (
    heavy_ball_symbolic,
    stationary_error_theorem,
    theorem_3_5,
)

__all__ = [
    "SOURCE_B3_ROOTS",
    "SOURCE_BOUND_DERIVED",
    "SOURCE_EQ26_PRINTED",
    "SOURCE_PROP34",
    "SOURCE_STATIONARY",
    "SOURCE_THM35",
    "StationaryError",
    "classical_heavy_ball_parameters",
    "heavy_ball_bound_valid",
    "heavy_ball_expected_error",
    "heavy_ball_iteration_blocks",
    "heavy_ball_iteration_matrix",
    "heavy_ball_noise_term",
    "heavy_ball_quadratic_bound",
    "heavy_ball_rate",
    "heavy_ball_rate_eq26_as_printed",
    "heavy_ball_stationary_error",
    "heavy_ball_transient_constant",
    "nesterov_quadratic_rate",
    "stationary_variance",
    "stationary_variance_symbolic",
    "stationary_error_theorem",
    "theorem_3_5",
    "heavy_ball_symbolic",
]
