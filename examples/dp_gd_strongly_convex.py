"""Noisy gradient descent on smooth strongly convex ERM: a published rate as a dpbounds plug-in.

Wang, Ye & Xu (NeurIPS 2017; arXiv 1802.05251) give near-optimal d log(n) / (n^2 eps^2) rates for
smooth strongly convex DP-ERM (by DP-SVRG, as the seed papers summarise it) and a bound under
the Polyak-Lojasiewicz condition. Their text was not at hand: the theorem numbers and constants
are not checked. The bound below is ours (DERIVED): full-batch DP-GD, step 1/L, descent lemma
and PL, with the same d N^-2 eps^-2 shape up to logs. It is reproduced and checked as follows:

    dpbounds --plugin examples/dp_gd_strongly_convex.py bound strongly_convex.dp_gd_linear
    dpbounds --plugin examples/dp_gd_strongly_convex.py verify strongly_convex.dp_gd_linear \
        --vary N --quick
    dpbounds --plugin examples/dp_gd_strongly_convex.py verify strongly_convex.dp_gd_linear \
        --problem logistic_erm --vary N --values 2000 4000 8000     # an ERM problem of our own
    dpbounds --plugin examples/dp_gd_strongly_convex.py tune dp_gd_linear \
        --mu 0.1 --S1 0.5 --R 2 --max-horizon 300    # eta, T by worst case, proven bracket
"""
import numpy as np
import sympy as sp

from dpbounds import extend as ex
from dpbounds.objectives import LogisticRegression

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
                      "Revisited: Faster and More General, NeurIPS (arXiv 1802.05251)",
                      "result not identified (the paper's text not at hand)", ex.DERIVED,
                      "only the d log(n)/(n^2 eps^2) shape is theirs, as recalled (by DP-SVRG, "
                      "per the seed Lee & Kifer 2018); the bound, its constants, logs "
                      "and T are ours: full-batch DP-GD, descent lemma and PL")],
    assumptions=["F is L-smooth and mu-strongly convex; replacing one record moves the sum "
                 "of gradients by at most S1 in L1 (>= L2) norm", "R = F(x0) - F*",
                 ex.Assumption("eps <= log(1/delta)", eps <= sp.log(1 / delta))],
    title="DP gradient descent, step 1/L, linear rate plus noise floor (zCDP)")

method = ex.Method(
    "dp_gd_linear", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", neighbouring="replace_one",
    # mean gradient; L2 <= L1, so the bound's S1 is valid for Gaussian noise, but loose: a
    # bound in S2 with f.l2_sensitivity / f.n adds sqrt(d)-times less noise (the built-in
    # Gaussian dp_gd's choice; its runs were 8x better in stop 77's walkthrough)
    sensitivity=lambda f, p: f.l1_sensitivity / f.n,
    linear=ex.LinearMomentum(alpha="eta"))  # GD: checked, then `tune dp_gd_linear`

ex.study(method, bound, measure="subopt")
ex.audit_setting(method)  # eta: the study's (1/L), derived; `dpbounds audit dp_gd_linear`


def logistic_erm(N, d, seed, spec):  # ridge logistic regression, unit rows, random labels
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N, d))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    # the rows' domain declared (unit rows: ||a||_2 <= 1, ||a||_1 <= sqrt(d)), so the noise
    # is calibrated to a public bound, not to the drawn rows' largest norm
    f = LogisticRegression(A, rng.choice([-1.0, 1.0], size=N), l2=spec.mu,  # L <= 1/4 + mu
                           l1_radius=np.sqrt(d), l2_radius=1.0)
    return f, np.full(d, spec.start / np.sqrt(d))


ex.verify_problem("logistic_erm", logistic_erm, problem_class="smooth_strongly_convex",
                  f_star=lambda f: f.optimum.value,  # trust-region Newton, gradient < 1e-13
                  defaults={"L": 1.0, "mu": 0.1, "start": 3.0},
                  description="ridge logistic regression (unit rows, random labels)")
