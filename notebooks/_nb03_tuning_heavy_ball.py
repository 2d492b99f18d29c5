"""Cells of ``notebooks/03_tuning_heavy_ball.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import STYLED_SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# Tuning DP heavy ball (Kuru et al.)

Where in the $(\\alpha,\\beta)$ plane DP heavy ball converges fastest, where its DP bound is
smallest, and how the tuned choice (`dpbounds.tuning.tune_heavy_ball`: by default the run with the
least **worst-case error** $\\mathbb E[F(x_T)]-F^*$ over every admissible quadratic, as
calibrated; `objective="bound"` minimises the bound instead) compares with the bound's minimiser,
with Polyak's classical $(\\alpha,\\beta)$ and with the paper's Section-5 choice
($\\alpha=1/L$, $\\beta=(1-\\sqrt{\\alpha\\mu})/(1+\\sqrt{\\alpha\\mu})$). Rates on quadratics come
in closed form (heavy-ball roots, App. B.3); on all of $\\mathcal S_{\\mu,L}$ from verified LMI
certificates (Prop. 3.4, `dpbounds.lmi`)."""),
    new_code_cell(STYLED_SETUP + """
from matplotlib.colors import LogNorm
from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate
from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate
from dpbounds.lmi.rate_map import closed_form_rate_map, lmi_rate_map
from dpbounds.settings import LOGISTIC_REGRESSION_SMOOTHNESS, logistic_regression
from dpbounds.tuning import heavy_ball_dp_bound, tune_heavy_ball

# Kuru et al. Section 5: mu = 0.02, d = 20, n = 1e5, with the L that `dpbounds demo` and its
# `dpbounds tune hb` command line use (rounded to 4 decimals): the same problem, the same answer
SETTING = dict(logistic_regression(), L=LOGISTIC_REGRESSION_SMOOTHNESS)
print(SETTING)"""),
    new_markdown_cell("""\
## Rate map and bound map over $(\\alpha,\\beta)$

Left: the quadratic rate as $1-\\rho(\\alpha,\\beta)$ (white: unstable); the
hatched area has no LMI certificate for all of $\\mathcal S_{\\mu,L}$ (a coarse
`lmi_rate_map`). Right: the DP bound
$\\min_{T\\le T_{\\max}}B(\\alpha,\\beta,T)$ on $\\mathbb E F(x_T)-F^*$ for quadratics (the rigorous
(25) with the Laplace noise that $T$ steps of $\\varepsilon/T$ each imply, DERIVED), on a log
colour scale. Markers: the tuned $(\\alpha,\\beta)$, Polyak's and the paper's."""),
    new_code_cell("""\
def draw(epsilon=1.0, n=1e5, d=20, max_horizon=1000):
    # the same call, with the same defaults, as `dpbounds tune hb` and `dpbounds demo`
    s = dict(SETTING, epsilon=epsilon, n=int(round(n)), d=int(round(d)))
    mu, L = s["mu"], s["L"]
    tuning = tune_heavy_ball(**s, max_horizon=int(max_horizon))
    alphas = np.geomspace(1e-2 / L, 3.98 / L, 40)  # heavy ball is stable up to 2(1+β)/L
    betas = np.linspace(0.0, 0.995, 36)
    rho = closed_form_rate_map(mu, L, alphas, betas).rho_closed_form
    coarse = lmi_rate_map(mu, L, alphas[::4], betas[::4], processes=1, progress=False)
    A, B = np.meshgrid(alphas, betas)
    bound = heavy_ball_dp_bound(A.ravel(), B.ravel(), mu, L, d=s["d"], n=s["n"],
                                epsilon=epsilon, sensitivity=s["sensitivity"],
                                initial_distance_sq=2 * s["initial_gap"] / mu,
                                max_horizon=int(max_horizon)).min(axis=1).reshape(A.shape)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5.2))
    speed = np.where(rho < 1, 1 - rho, np.nan)  # 1 - rho: larger is faster; nan: unstable
    im = ax1.pcolormesh(alphas * L, betas, speed, cmap="viridis", shading="auto",
                        norm=LogNorm(vmin=np.nanmax(speed) / 100, vmax=np.nanmax(speed)))
    fig.colorbar(im, ax=ax1, label="1 − ρ(α, β) on quadratics (larger is faster)")
    ax1.contourf(coarse.alphas * L, coarse.betas, (~coarse.certified).astype(float),
                 levels=[0.5, 1.5], colors="none", hatches=["///"])
    finite = np.where(np.isfinite(bound), bound, np.nan)
    # the whole finite range (no saturation), capped at 10 decades above the minimum
    lo, hi = np.nanmin(finite), np.nanmax(finite)
    top = min(hi, lo * 1e10)
    im2 = ax2.pcolormesh(alphas * L, betas, finite, cmap="magma_r", shading="auto",
                         norm=LogNorm(vmin=lo, vmax=top))
    fig.colorbar(im2, ax=ax2, extend="max" if hi > top else "neither",
                 label=f"min over T of the DP bound ({lo:.3g} to {hi:.3g})")
    for c, m in ((tuning.tuned, "*"), (tuning.by_bound, "D"), (tuning.classical, "o"),
                 (tuning.paper_section5, "s")):
        for ax in (ax1, ax2):
            ax.plot(c.alpha * L, c.beta, m, color="red", mec="w", ms=16 if m == "*" else 10,
                    label=f"{c.label}: worst case {c.worst_case_upper:.3g}, bound {c.bound:.3g}"
                          f" at T={c.horizon}")
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set(xlabel="step size α·L", ylabel="momentum β")
    ax1.set_title(f"rates on quadratics (μ={mu:g}, L={L:.3g})\\n"
                  "hatched: no LMI certificate for S_μ,L; white: unstable", fontsize=9)
    ax2.set_title(f"DP bound, quadratic class\\nd={s['d']}, n={s['n']}, ε={epsilon:g}, "
                  f"T ≤ {int(max_horizon)}", fontsize=9)
    handles, labels = ax2.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.subplots_adjust(left=0.07, right=0.97, top=0.88, bottom=0.27, wspace=0.25)
    plt.show()
    print(tuning.table())
    return tuning


tuning = draw()
interact(draw, epsilon=log_slider(1.0, 0.05, 20.0), n=log_slider(1e5, 1e3, 1e7),
         d=log_slider(20, 1, 1000), max_horizon=(50, 1000, 50))"""),
    new_markdown_cell("""\
## LMI rate vs quadratic rate along $\\beta$

At a fixed step $\\alpha$, the Prop. 3.4 rate certified for **all** of $\\mathcal S_{\\mu,L}$
(every certificate verified independently of the solver) against the quadratic rate. The LMI
rate can only be larger; it stops (no certificate below 1) where the quadratic analysis still
promises convergence. Plotted as $1-\\rho$ (log scale): the speed of convergence."""),
    new_code_cell("""\
def draw_lmi(alpha_L=1.0, mu=SETTING["mu"], L=SETTING["L"]):
    alpha = alpha_L / L
    betas = np.linspace(0.0, 0.99, 18)
    quad = np.asarray(heavy_ball_rate(alpha, betas, mu, L))
    lmi = np.array([r.rho if r.certified else np.nan
                    for r in (heavy_ball_lmi_rate(mu, L, alpha, b) for b in betas)])
    assert np.all(np.isnan(lmi) | (lmi >= quad - 1e-9))  # the LMI rate is never the faster
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.semilogy(betas, 1 - quad, "C0-", label="quadratics (closed form)")
    ax.semilogy(betas, 1 - lmi, "C3o-", ms=4, label="all of S_μ,L (LMI, verified)")
    ax.set(xlabel="momentum β", ylabel="1 − ρ  (larger is faster)",
           title=f"α = {alpha_L:g}/L, μ = {mu:g}, L = {L:.3g}")
    ax.legend()
    plt.show()


draw_lmi()
interact(draw_lmi, alpha_L=(0.1, 1.9, 0.1), mu=log_slider(SETTING["mu"], 1e-3, 1.0))"""),
    new_markdown_cell("""\
## DP-SHB against Theorem 3.5 on a 2-d quadratic
Laplace noise with $S_1/(n\\varepsilon)=c_w/\\sqrt2$ gives exactly Fig. 1's
$\\sigma_T^2=(Tc_w)^2$."""),
    new_code_cell("""\
from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.heavy_ball import (
    heavy_ball_expected_error, heavy_ball_quadratic_bound)
from dpbounds.objectives import QuadraticObjective
mu, L = 0.5, 1.0
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
]
