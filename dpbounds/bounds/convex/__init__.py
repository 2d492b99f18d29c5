"""Bounds for convex DP-ERM: the excess empirical risk.

* :mod:`~dpbounds.bounds.convex.noisy_projected_sgd` — noisy projected SGD;
* :mod:`~dpbounds.bounds.convex.output_perturbation` — minimiser plus Gaussian noise;
* :mod:`~dpbounds.bounds.convex.objective_perturbation` — random linear term in the objective.
"""
