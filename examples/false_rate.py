"""A deliberately false theorem: noisy GD claimed at rate N^(-1), one exponent too good.

The true rate of this method is N^(-1/2) (examples/dp_gd_smooth.py); `verify` must refute the
claim where it is informative (exit status 1):

    dpbounds --plugin examples/false_rate.py verify nonconvex.too_fast_gd --vary N --quick
"""
import sympy as sp

from dpbounds import extend as ex

d, N, eps, delta, G, L, R = ex.symbols("d N eps delta G L R")
log_delta = sp.log(1 / delta)
rate = 2 * sp.sqrt(G) * (8 * L * R * d * log_delta / eps**2) ** sp.Rational(1, 4) / N
claim = ex.theorem(
    "nonconvex.too_fast_gd", rate,
    quantity="(1/T) sum_{t<T} E||grad F(x_t)||", problem_class="nonconvex",
    hyperparameters={"T": N * eps * sp.sqrt(L * R / (8 * d * log_delta)) / G, "eta": 1 / L},
    source=ex.Source("a wrong claim", "Theorem 1", ex.DERIVED, "N^(-1/2) misread as N^(-1)"),
    title="noisy GD, claimed 1/N (false)")

method = ex.Method(
    "too_fast_gd", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)

ex.study(method, claim, measure="grad_avg")
