"""Noisy gradient descent on smooth strongly convex ERM: a published rate as a dpbounds plug-in.

The rate d log(n) / (n^2 eps^2) (times the condition number kappa = L/mu, up to log(1/delta))
of DP gradient descent on smooth strongly convex losses, the follow-up of Bassily, Smith and
Thakurta's (2014) d log^2(n) / (n^2 eps^2), is reproduced with constants of our own:

    dpbounds --plugin examples/dp_gd_strongly_convex.py bound strongly_convex.dp_gd_linear
    dpbounds --plugin examples/dp_gd_strongly_convex.py verify strongly_convex.dp_gd_linear \
        --vary N --quick
"""
import sympy as sp

from dpbounds import extend as ex

d, N, eps, delta, L, mu, R, S1, T = ex.symbols("d N eps delta L mu R S1 T")
rho = eps**2 / (8 * sp.log(1 / delta))  # <= the calibrated zCDP rho when eps <= log(1/delta)
# eta = 1/L, descent lemma + Polyak-Lojasiewicz: E gap_{t+1} <= (1 - mu/L) gap_t + d sigma^2/(2L),
# so gap_T <= R e^(-mu T/L) + d sigma^2/(2 mu), sigma^2 = (S1/N)^2 T/(2 rho); T balances the two
floor = d * S1**2 / (4 * mu * N**2 * rho)  # the noise term per step
bound = ex.theorem(
    "strongly_convex.dp_gd_linear", R * sp.exp(-mu * T / L) + floor * T,
    quantity="E F(x_T) - F*", problem_class="smooth_strongly_convex",
    hyperparameters={"T": L / mu * sp.log(1 + mu * R / (L * floor)), "eta": 1 / L},
    tunable={"T": (1.0, 1e7)},
    source=[ex.Source("Wang, Ye, Xu (2017), Differentially Private Empirical Risk Minimization "
                      "Revisited: Faster and More General, NeurIPS", "DP-GD on smooth strongly "
                      "convex losses (Sec. 3): rate d log(n)/(n^2 eps^2), result number not "
                      "checked", ex.DERIVED, "headline shape as published; every constant, "
                      "the log factors and T are ours (no copy of the paper at hand)")],
    assumptions=["F is L-smooth and mu-strongly convex; replacing one record moves the sum "
                 "of gradients by at most S1 in L1 (>= L2) norm", "R = F(x0) - F*",
                 ex.Assumption("eps <= log(1/delta)", eps <= sp.log(1 / delta))],
    title="DP gradient descent, step 1/L, linear rate plus noise floor (zCDP)")

method = ex.Method(
    "dp_gd_linear", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", neighbouring="replace-one",
    sensitivity=lambda f, p: f.l1_sensitivity / f.n)  # mean gradient; L2 <= L1

ex.study(method, bound, measure="subopt")
