r"""Bounds for smooth strongly convex problems: :math:`\mathbb E F(x_T)-F^\ast`.

* :mod:`~dpbounds.bounds.strongly_convex.heavy_ball` — heavy ball on quadratics: rate,
  noise term :math:`m(\alpha,\beta)`, exact stationary error;
* :mod:`~dpbounds.bounds.strongly_convex.nesterov` — Nesterov / multi-stage schedules, error
  weights and recursions;
* :mod:`~dpbounds.bounds.strongly_convex.noise_allocation` — optimal per-iteration Laplace noise
  and the horizon choice.
"""
