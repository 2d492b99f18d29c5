"""DP gradient descent whose noise changes over the run (a noise schedule): a plug-in for dpbounds.

    dpbounds --plugin examples/dp_gd_noise_schedule.py verify nonconvex.dp_gd_two_stage --quick
    dpbounds --plugin examples/dp_gd_noise_schedule.py calibrate dp_gd_two_stage --steps 100 \
        --N 1e4 --G 1
    dpbounds --plugin examples/dp_gd_noise_schedule.py tune bound nonconvex.dp_gd_two_stage --N 1e4

The first half of the steps draws ``ramp`` times the noise of the second half; dpbounds
calibrates the common factor so that the T releases spend exactly the target (zCDP).
"""
import sympy as sp

from dpbounds import extend as ex

d, N, eps, delta, G, L, R, T, ramp = ex.symbols("d N eps delta G L R T ramp")
rho = eps**2 / (8 * sp.log(1 / delta))  # <= the calibrated zCDP rho when eps <= log(1/delta)
# descent lemma at eta = 1/L with noise of variance d sigma_t^2 on step t:
#   E||grad F_t||^2 <= 2L(E F_t - E F_t+1) + d sigma_t^2, summed over t < T, Jensen;
# sigma_t = c w_t with c^2 = Delta^2 sum_t w_t^-2 / (2 rho), Delta = 2G/N (replace-one), so
# (1/T) sum_t sigma_t^2 = Delta^2 (sum w^-2)(sum w^2) / (2 rho T), and with w = ramp on the
# first floor(T/2) steps, 1 after: (sum w^-2)(sum w^2) <= (T^2/4)(2 + ramp^2 + ramp^-2)
# (equality at even T). The uneven schedule costs (2 + ramp^2 + ramp^-2)/4 >= 1 here: for a
# fixed step the even split is best, and `tune bound` finds ramp = 1.
bound = ex.theorem(
    "nonconvex.dp_gd_two_stage",
    sp.sqrt(2 * L * R / T
            + d * (2 * G / N)**2 * T * (2 + ramp**2 + ramp**-2) / (8 * rho)),
    quantity="(1/T) sum_{t<T} E||grad F(x_t)||", problem_class="nonconvex_smooth",
    hyperparameters={"T": N * sp.sqrt(L * R * rho / d) / G, "eta": 1 / L, "ramp": 2},
    tunable={"T": (1, 1e6), "ramp": (0.1, 10)},
    source=ex.Source("my note on noisy GD with two noise stages", "Proposition 2", ex.DERIVED,
                     "descent lemma at eta = 1/L, the schedule's sums, Jensen"),
    assumptions=["F is L-smooth, per-sample gradients of norm <= G",
                 ex.Assumption("eps <= log(1/delta)", eps <= sp.log(1 / delta))],
    title="DP gradient descent, step 1/L, Gaussian noise in two stages (zCDP)")

method = ex.Method(
    "dp_gd_two_stage", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", neighbouring="replace_one",
    sensitivity=lambda f, p: 2 * f.gradient_bound / f.n,  # mean of gradients of norm <= G
    # relative noise of step t: ramp on the first half, 1 on the second (public: t and params)
    noise_schedule=lambda t, p: p["ramp"] if t < p["T"] // 2 else 1.0)

ex.study(method, bound, measure="grad_avg")
ex.audit_setting(method, steps=6, params={"eta": 1.0, "ramp": 3.0})
