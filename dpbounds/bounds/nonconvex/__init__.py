r"""Bounds for smooth non-convex problems: :math:`\mathbb E\lVert\nabla F(\hat x)\rVert`.

* :mod:`~dpbounds.bounds.nonconvex.tree_momentum` — normalized SGD with tree-aggregated momentum;
* :mod:`~dpbounds.bounds.nonconvex.sensitivity_reduced` — its sensitivity-reduced variant;
* :mod:`~dpbounds.bounds.nonconvex.normalized_sgd` — normalized SGD, :math:`g/(\lVert g\rVert+r)`;
* :mod:`~dpbounds.bounds.nonconvex.clipped_sgd` — clipped SGD;
* :mod:`~dpbounds.bounds.nonconvex.generalized_smoothness` — the :math:`(L_0,L_1)` setting and
  Gaussian noise calibration shared by the last two.
"""
