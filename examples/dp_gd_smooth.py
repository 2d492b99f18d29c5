"""DP gradient descent with step 1/L on a smooth non-convex loss: a plug-in for dpbounds.

    dpbounds --plugin examples/dp_gd_smooth.py bound nonconvex.dp_gd_smooth --N 1e5
    dpbounds --plugin examples/dp_gd_smooth.py verify nonconvex.dp_gd_smooth --vary N --quick
"""
import sympy as sp

from dpbounds import extend as ex

d, N, eps, delta, G, L, R, T = ex.symbols("d N eps delta G L R T")
rho = eps**2 / (8 * sp.log(1 / delta))  # <= the calibrated zCDP rho when eps <= log(1/delta)
# descent lemma with eta = 1/L: E||grad F_t||^2 <= 2L(E F_t - E F_t+1) + d sigma^2, summed over
# t < T, Jensen; sigma = (2G/N) sqrt(T/(2 rho)) for T releases of sensitivity 2G/N (replace-one)
bound = ex.theorem(
    "nonconvex.dp_gd_smooth", sp.sqrt(2 * L * R / T + 2 * d * G**2 * T / (N**2 * rho)),
    quantity="(1/T) sum_{t<T} E||grad F(x_t)||", problem_class="nonconvex_smooth",
    hyperparameters={"T": N * sp.sqrt(L * R * rho / d) / G, "eta": 1 / L},
    tunable={"T": (1, 1e6)},  # what `dpbounds tune bound` searches
    source=ex.Source("my note on noisy GD", "Proposition 1", ex.DERIVED,
                     "descent lemma at eta = 1/L, Jensen; T balances the two terms"),
    assumptions=["F is L-smooth, per-sample gradients of norm <= G",
                 ex.Assumption("eps <= log(1/delta)", eps <= sp.log(1 / delta))],
    title="DP gradient descent, step 1/L, Gaussian noise (zCDP)")

method = ex.Method(
    "dp_gd_smooth", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", neighbouring="replace_one",
    sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)  # mean of gradients of norm <= G

ex.study(method, bound, measure="grad_avg")
ex.audit_setting(method, steps=5, params={"eta": 1.0})
