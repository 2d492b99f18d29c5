"""Generate the example notebooks (nbformat v4, no outputs): ``python notebooks/_build.py``.

The notebooks are committed without outputs and rebuilt from this script, so their diffs stay
readable; ``tests/test_notebooks.py`` executes every ``notebooks/*.ipynb``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = """\
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small GEMMs: one BLAS thread is faster here
import math
import numpy as np"""

NB01 = [
    new_markdown_cell("""\
# Privacy accounting with dpbounds

Calibrate the noise of a DP-SGD step for a target $(\\varepsilon,\\delta)$ and compare
accountants. Every calibration returns the **conservative** side: the returned noise was
verified by the accountant to give at most the target $\\varepsilon$. The neighbouring relation
is explicit (Poisson sampling ↔ add/remove; sampling without replacement ↔ replace-one)."""),
    new_code_cell(SETUP + """
from dpbounds.privacy.calibrate import calibrate, epsilon_of
from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism"""),
    new_markdown_cell("""\
## Calibrate σ for DP-SGD: q = 0.01, T = 1000 steps, ε = 1, δ = 1e-5
Gaussian noise of std σ on the sum of per-example gradients clipped to norm 1."""),
    new_code_cell("""\
q, T, eps, delta = 0.01, 1000, 1.0, 1e-5
sigma = {}
for acc in ("rdp", "pld"):
    sigma[acc] = calibrate(lambda s: SubsampledGaussianMechanism(s, q), eps, delta,
                           accountant=acc, count=T)
    print(f"{acc}: sigma = {sigma[acc]:.4f}")
print(f"PLD saves {100 * (1 - sigma['pld'] / sigma['rdp']):.1f} % of the noise")"""),
    new_markdown_cell("""\
## The same σ, the ε each accountant certifies
The noise calibrated by RDP, re-accounted by RDP, PLD and (if installed) Google's
`dp_accounting` as an independent check."""),
    new_code_cell("""\
mech = SubsampledGaussianMechanism(sigma["rdp"], q)
rows = {acc: epsilon_of(mech, delta, accountant=acc, count=T) for acc in ("rdp", "pld")}
try:
    import dp_accounting
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma["rdp"])), T)
    acct = dp_accounting.rdp.RdpAccountant()
    acct.compose(event)
    rows["dp_accounting RDP (independent)"] = acct.get_epsilon(delta)
except ImportError:
    print("dp_accounting not installed: skipping the independent check")
for name, e in rows.items():
    print(f"{name:<34} eps = {e:.4f}")
assert rows["rdp"] <= eps + 1e-9"""),
    new_markdown_cell("""\
## Pure DP with Laplace noise (Kuru et al.) and zCDP (Lee & Kifer)
Kuru et al. split ε uniformly over T steps and amplify by subsampling without replacement
(eq. (13)); Lee & Kifer convert (ε, δ) to a zCDP budget ρ by eq. (5)."""),
    new_code_cell("""\
from dpbounds.privacy import per_step_epsilon, dp_to_zcdp_rho, zcdp_to_dp_epsilon
n, m, S1 = 100_000, 1_000, 40.0
for T in (100, 1000):
    eps0 = per_step_epsilon(1.0, T, n, m)
    print(f"T={T:5d}: eps_0 = {eps0:.4f}, Laplace scale b = S1/(m eps_0) = {S1 / (m * eps0):.4g}")
rho = dp_to_zcdp_rho(1.0, 1e-8)
print(f"(1, 1e-8)-DP -> rho = {rho:.4g} zCDP -> back to eps = {zcdp_to_dp_epsilon(rho, 1e-8):.6f}")"""),
    new_markdown_cell("## The privacy table: every mechanism and accountant side by side"),
    new_code_cell("""\
from dpbounds.privacy.table import format_table, privacy_table
print(format_table(privacy_table(epsilon=1.0, delta=1e-5, steps=1000, sampling_rate=0.01)))"""),
]

NB02 = [
    new_markdown_cell("""\
# Bounds explorer

Every utility bound in dpbounds is a theorem object: a sympy expression with its assumptions,
hyper-parameter choices and citations (with provenance labels). For Tran & Cutkosky and
Yang et al. **only the exponents are the papers'**; every constant is DERIVED by dpbounds."""),
    new_code_cell(SETUP + """
from IPython.display import Math, display
from dpbounds.bounds.nonconvex import tree_momentum as tc, sensitivity_reduced as sr
from dpbounds.bounds.nonconvex import normalized_sgd"""),
    new_markdown_cell("## Algorithm 1 (tree-aggregated momentum): the tuned Theorem 6"),
    new_code_cell("""\
thm = tc.theorem6_tuned
display(Math(thm.latex()))
print("provenance:", thm.provenance.value)
print("scaling:", thm.exponents(("d", "N", "eps")))
print("value at d=100, N=1e5, eps=1:", float(thm.evaluate(d=100, N=1e5, eps=1.0, delta=1e-5,
                                                           G=1, L=1, R=1)))"""),
    new_markdown_cell("## Vectorised evaluation over a grid"),
    new_code_cell("""\
N = np.geomspace(1e4, 1e8, 5)  # E >= 1 epoch needs N large enough
a1 = tc.theorem6_tuned.evaluate(d=100, N=N, eps=1.0, delta=1e-5, G=1, L=1, R=1)
a2 = sr.theorem9_tuned.evaluate(d=100, N=N, eps=1.0, delta=1e-5, G=1, L=1, R=1)
for n_, x, y in zip(N, a1, a2):
    print(f"N = {n_:9.3g}: Alg. 1 {x:9.4g}   Alg. 2 {y:9.4g}   {'Alg. 2' if y < x else 'Alg. 1'} wins")"""),
    new_markdown_cell("""\
## All non-convex bounds side by side, and where they cross
`compare` evaluates every registered bound at one problem and finds the crossovers in N."""),
    new_code_cell("""\
from dpbounds.bounds.compare import compare
print(compare(dict(d=100, N=1e5, eps=1.0, delta=1e-5, G=1, L=1, R=1), tune=False))"""),
    new_markdown_cell("""\
## The d^{1/6} story
There is **no** $d^{1/6}$ rate: Algorithm 2's rate scales as $d^{1/3}/(\\varepsilon N)^{2/3}$
(abstract, VERBATIM). $d^{\\pm1/6}$ lives only in intermediate quantities under the tuned
choices — computed here symbolically, not typed in."""),
    new_code_cell("""\
for row in sr.d_one_sixth_report():
    print(f"{row.quantity:<42} d^{str(row.d_exponent):<6} N^{str(row.n_exponent):<6} "
          f"eps^{row.eps_exponent}")"""),
    new_markdown_cell("## Yang et al.: the DP-NSGD floor vs r, and the audit trail of a bound"),
    new_code_cell("""\
for r in (1.5, 3.0, 10.0):
    print(f"r = {r:5.1f}: floor 2 tau0^2/(r - tau0) = {normalized_sgd.nsgd_floor.evaluate(r=r, tau0=1.0):.3f}")
print(normalized_sgd.nsgd_decaying.exponents(("d", "N", "eps", "log(1/delta)")))
print(tc.theorem6.audit()[:1500])"""),
]

NB03 = [
    new_markdown_cell("""\
# Tuning DP heavy ball (Kuru et al.)

Rate map by closed form, a verified LMI certificate (Prop. 3.4), tuned vs classical
$(\\alpha,\\beta,T)$, and a short DP-SHB simulation against Theorem 3.5's bound."""),
    new_code_cell(SETUP + """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from dpbounds.lmi.rate_map import closed_form_rate_map
from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate
from dpbounds.bounds.strongly_convex.heavy_ball import (
    classical_heavy_ball_parameters, heavy_ball_rate)"""),
    new_markdown_cell("## Rate map ρ(α, β) on quadratics (heavy-ball roots, App. B.3)"),
    new_code_cell("""\
mu, L = 0.5, 1.0
alphas, betas = np.linspace(0.05, 2.0, 60), np.linspace(0.0, 0.95, 60)
rmap = closed_form_rate_map(mu, L, alphas, betas)
rho = np.asarray(rmap.rho_closed_form)
fig, ax = plt.subplots(figsize=(5, 4))
im = ax.contourf(betas, alphas, np.minimum(rho, 1.0), levels=20)
fig.colorbar(im, label="ρ")
ax.set_xlabel("β"); ax.set_ylabel("α")
a_hb, b_hb = classical_heavy_ball_parameters(mu, L)
ax.plot([b_hb], [a_hb], "r*", label="Polyak's (α, β)"); ax.legend()
print(f"best rho on the grid: {np.nanmin(rho):.4f}; Polyak: {heavy_ball_rate(a_hb, b_hb, mu, L):.4f}")"""),
    new_markdown_cell("""\
## An LMI certificate for all of $\\mathcal S_{\\mu,L}$ (Prop. 3.4)
The certificate is verified independently of the solver (eigenvalues of the assembled LMI).
The LMI rate can only be larger than the quadratic rate."""),
    new_code_cell("""\
cert = heavy_ball_lmi_rate(mu, L, 1.0, 0.2)
print(cert)
assert cert.rho >= heavy_ball_rate(1.0, 0.2, mu, L) - 1e-9"""),
    new_markdown_cell("""\
## Tuned vs classical (α, β, T) for the Section-5 setting
d = 20, n = 10⁵, ε = 1, S₁ = 40, μ = 0.02 (and the paper's conservative L ≈ 5.1)."""),
    new_code_cell("""\
from dpbounds.tuning import tune_heavy_ball
tuning = tune_heavy_ball(0.02, 5.1, d=20, n=100_000, epsilon=1.0, sensitivity=40.0,
                         initial_gap=10.0, max_horizon=300, grid=15)
print(tuning.table())"""),
    new_markdown_cell("""\
## DP-SHB against Theorem 3.5 on a 2-d quadratic
Laplace noise with $S_1/(n\\varepsilon)=c_w/\\sqrt2$ gives exactly Fig. 1's
$\\sigma_T^2=(Tc_w)^2$."""),
    new_code_cell("""\
from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.heavy_ball import (
    heavy_ball_expected_error, heavy_ball_quadratic_bound)
from dpbounds.objectives import QuadraticObjective
f = QuadraticObjective([mu, L])
x0 = np.full(2, math.sqrt(2.5))
alpha, beta, cw = 0.5, 0.3, 1e-2
for T in (10, 30, 100):
    r = dp_heavy_ball(f, epsilon=1.0, steps=T, step_size=alpha, momentum=beta,
                      sensitivity=cw / math.sqrt(2), trials=500, seed=T, x0=x0)
    s2 = (T * cw) ** 2
    bound = heavy_ball_quadratic_bound(T, alpha, beta, mu, L, s2, 10.0)
    exact = heavy_ball_expected_error(T, alpha, beta, [mu, L], s2, x0)[1]
    print(f"T={T:4d}: simulated {r.final.mean():.4g} ± {1.96 * r.final.std() / math.sqrt(500):.2g}"
          f"   exact {exact:.4g}   bound (25) {bound:.4g}")"""),
    new_markdown_cell("## Optional: interactive ρ(β) slider (needs ipywidgets)"),
    new_code_cell("""\
try:
    import ipywidgets as widgets
    def show(alpha=0.5):
        b = np.linspace(0, 0.99, 100)
        print(f"argmin_beta rho = {b[np.argmin(heavy_ball_rate(alpha, b, mu, L))]:.3f}")
    widgets.interact(show, alpha=(0.05, 2.0, 0.05))
except ImportError:
    print("ipywidgets not installed: the slider is skipped")"""),
]


def build() -> list[Path]:
    out = []
    for name, cells in (("01_privacy_accounting", NB01), ("02_bounds_explorer", NB02),
                        ("03_tuning_heavy_ball", NB03)):
        nb = new_notebook(cells=cells, metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}})
        path = HERE / f"{name}.ipynb"
        nbformat.validate(nb)
        nbformat.write(nb, path)
        out.append(path)
    return out


if __name__ == "__main__":
    for p in build():
        print(p)
