r"""Kuru et al., Figure 1: Theorem 3.5's bound vs simulated DP-SHB on a 2-d quadratic.

Setting (VERBATIM, paper text §3.2 / sheet §5): :math:`d=2`, :math:`Q=\mathrm{diag}(\mu,L)`,
:math:`\mu=0.5`, :math:`L=1`, :math:`C_t=t`, noise growing with the horizon
:math:`\sigma_T^2=(Tc_w)^2`, :math:`c_w\in\{10^{-4},10^{-2}\}`. From the reference code
(sheet §12.1): :math:`\alpha\in\{0.1,0.5,1\}/L`, :math:`\beta\in\{0,0.3,0.7,\beta_{NAG}\}`,
:math:`E_0=\mathbb E\lVert\xi_0-\xi^\ast\rVert^2=10`, horizons :math:`T=1..250`, bound at
:math:`t=T`.

What we draw (and where it departs from the paper):

* the bound (25) with the **heavy-ball** roots of App. B.3 (DERIVED decision: the printed (26)
  uses Nesterov's roots, sheet §11 item 2); ρ(β) is also drawn with (26) as printed;
* the exact :math:`\mathbb E[F(x_T)]-F^\ast` (DERIVED, covariance recursion) and a Monte Carlo
  of the real DP-SHB (:func:`dpbounds.algorithms.dp_heavy_ball`): Laplace noise with
  :math:`S_1/(n\epsilon)=c_w/\sqrt2`, :math:`\epsilon=1` over :math:`T` steps gives scale
  :math:`b=Tc_w/\sqrt2`, i.e. exactly :math:`\sigma_T^2=2b^2=(Tc_w)^2` — the "noise grows with
  T" of Fig. 1 is the uniform budget split :math:`\epsilon/T`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpbounds.algorithms import dp_heavy_ball
from dpbounds.bounds.strongly_convex.heavy_ball import (
    heavy_ball_expected_error,
    heavy_ball_quadratic_bound,
    heavy_ball_rate,
    heavy_ball_rate_eq26_as_printed,
)
from dpbounds.bounds.strongly_convex.nesterov import nesterov_momentum
from dpbounds.objectives import QuadraticObjective
from dpbounds.settings import heavy_ball_quadratic
from paper_figs._common import Cell, FigureRun, mean_ci, parse_args, plt, style

SETTING = heavy_ball_quadratic("paper")
MU, L = SETTING["mu"], SETTING["L"]
ALPHAS = SETTING["alphas"]
C_WS = SETTING["c_w"]
E0 = SETTING["initial_state_error"]  # E||xi_0 - xi*||^2 with x_{-1} = x_0: ||x_0||^2 = 5
HORIZONS = SETTING["horizons"]


def beta_nag(alpha: float) -> float:
    return float(nesterov_momentum(alpha, MU))


def curves(c_w: float, alpha: float, beta: float, sim_T: list[int], trials: int,
           seed: tuple[int, ...]) -> dict[str, Any]:
    """One cell: bound (25) and exact error for T = 1..250, and DP-SHB runs at each ``sim_T``
    (run at horizon T seeded with ``(*seed, T)``)."""
    sig2 = (HORIZONS * c_w) ** 2
    x0 = np.full(2, math.sqrt(E0 / 4.0))
    bound = np.array([heavy_ball_quadratic_bound(T, alpha, beta, MU, L, s2, E0)
                      for T, s2 in zip(HORIZONS, sig2)])
    exact = np.array([heavy_ball_expected_error(T, alpha, beta, [MU, L], s2, x0)[1]
                      for T, s2 in zip(HORIZONS, sig2)])
    f = QuadraticObjective([MU, L])
    finals, scales = [], []
    for T in sim_T:
        r = dp_heavy_ball(f, epsilon=1.0, steps=int(T), step_size=alpha, momentum=beta,
                          sensitivity=c_w / math.sqrt(2.0), trials=trials, seed=(*seed, int(T)),
                          x0=x0)
        finals.append(np.asarray(r.final))
        scales.append(float(r.params["laplace_scales"][0]))
    return {"bound": bound, "exact": exact, "final": np.stack(finals),
            "laplace_scale": np.array(scales)}


def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    run = FigureRun.from_args("kuru_fig1", args)
    horizons = HORIZONS
    sim_T = (50,) if args.quick else (10, 25, 50, 100, 150, 200, 250)
    trials = 16 if args.quick else 400
    rows, rate_rows = [], []

    fig = plt.figure(figsize=style.size(style.DOUBLE, 1.0))
    # rows: the rates, a row for the shared legend, the bounds at c_w = 1e-4 and at 1e-2
    gs = fig.add_gridspec(4, 3, height_ratios=(1.0, 0.27, 1.0, 1.0))
    axes = np.array([[fig.add_subplot(gs[r, j]) for j in range(3)] for r in (0, 2, 3)])
    legend_ax = fig.add_subplot(gs[1, :])
    legend_ax.axis("off")
    betas_grid = np.linspace(0.0, 0.99, 100)
    for j, alpha in enumerate(ALPHAS):
        ax = axes[0, j]
        rho_hb = heavy_ball_rate(alpha, betas_grid, MU, L)
        rho_26 = heavy_ball_rate_eq26_as_printed(alpha, betas_grid, MU, L)
        ax.plot(betas_grid, rho_hb, "k-", label=r"$\rho$, heavy-ball roots (App. B.3)")
        ax.plot(betas_grid, rho_26, "--", color="0.55", label=r"$\rho$, eq. (26) as printed")
        fine = np.linspace(0.0, 0.999, 4000)  # the rho-optimal beta, as the paper marks it
        rho_fine = heavy_ball_rate(alpha, fine, MU, L)
        k_best = int(np.argmin(rho_fine))
        ax.plot([fine[k_best]], [rho_fine[k_best]], "v", color="C3", ms=5, zorder=5,
                label=r"$\rho$-optimal $\beta$")
        ax.annotate(rf"$\beta^\ast={fine[k_best]:.3f}$", (fine[k_best], rho_fine[k_best]),
                    xytext=(5, 2), textcoords="offset points", ha="left", fontsize=7,
                    color="C3")
        ax.set_title(rf"$\alpha={alpha:g}/L$", pad=3)
        ax.set_xlabel(r"momentum $\beta$")
        rate_rows += [dict(alpha=alpha, beta=b, rho_heavy_ball=h, rho_eq26_printed=p)
                      for b, h, p in zip(betas_grid, rho_hb, rho_26)]
    axes[0, 0].set_ylabel(r"rate $\rho(\beta)$")

    grid = [(i, cw, j, alpha, k, beta) for i, cw in enumerate(C_WS)
            for j, alpha in enumerate(ALPHAS)
            for k, beta in enumerate((0.0, 0.3, 0.7, beta_nag(alpha)))]
    results = run.sweep([Cell(curves, dict(c_w=cw, alpha=alpha, beta=beta, sim_T=list(sim_T)),
                              trials=trials, seed=(args.seed, i, j, k))
                         for i, cw, j, alpha, k, beta in grid])
    for (i, cw, j, alpha, k, beta), rec in zip(grid, results):
        ax = axes[i + 1, j]
        color = f"C{k}"
        bound, exact = rec["bound"], rec["exact"]
        ax.semilogy(horizons, bound, color=color, lw=1.0)
        ax.semilogy(horizons, exact, ":", color=color, lw=1.2)
        for T, final, scale in zip(sim_T, rec["final"], rec["laplace_scale"]):
            m, h = mean_ci(final)
            ax.errorbar([T], [m], yerr=[[min(h, 0.999 * m)], [h]], fmt="o", color=color, ms=2.5,
                        capsize=1.5, elinewidth=0.8)
            rows.append(dict(c_w=cw, alpha=alpha, beta=beta, T=int(T),
                             bound_eq25=bound[T - 1], exact=exact[T - 1],
                             mc_mean=m, mc_ci95=h, trials=trials,
                             laplace_scale=float(scale),
                             bound_holds=bool(m - h <= bound[T - 1])))
        if k == 3:
            ax.set_title(rf"$c_w={style.sci(cw)}$, $\alpha={alpha:g}/L$", pad=3)
            if j > 0:  # one y scale per row
                ax.sharey(axes[i + 1, 0])
            if i == len(C_WS) - 1:
                ax.set_xlabel("horizon $T$")
            if j == 0:
                ax.set_ylabel(r"$\mathbb{E}[F(x_T)]-F^\ast$")
    # one legend for the six bottom panels: colour = beta, style = what is drawn
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=f"C{k}", lw=1.2, label=lab) for k, lab in
               enumerate((r"$\beta=0$", r"$\beta=0.3$", r"$\beta=0.7$",
                          r"$\beta=\beta_{\mathrm{NAG}}(\alpha)$"))]
    handles = axes[0, 0].get_legend_handles_labels()[0] + handles
    handles += [Line2D([], [], color="0.2", lw=1.0, label="bound (25)"),
                Line2D([], [], color="0.2", ls=":", lw=1.2, label="exact error"),
                Line2D([], [], color="0.2", marker="o", ls="none", ms=3,
                       label=f"DP-SHB, mean of {trials} runs ± 95% t-interval")]
    legend_ax.legend(handles=handles, loc="center", ncol=3, frameon=False,
                     columnspacing=1.2)
    fig.suptitle(r"Kuru et al. Fig. 1: Theorem 3.5 on a quadratic, $d=2$, $\mu=0.5$, $L=1$",
                 y=0.995)
    fig.tight_layout(h_pad=0.3, w_pad=0.6)
    run.save_figure(fig, (
        f"Kuru et al. (2022), Fig. 1 (Theorem 3.5, heavy ball on a 2-d quadratic). Top: rate "
        f"rho(beta) for alpha in {{0.1, 0.5, 1}}/L with the heavy-ball roots of App. B.3 "
        f"(DERIVED correction) and eq. (26) as printed (Nesterov roots); triangles: the "
        f"rho-optimal beta, found numerically, equal to (1 - sqrt(alpha mu))^2 (critical "
        f"damping of the mu-mode) to 3 decimals. Middle and bottom: "
        f"bound (25) (solid), exact E[F(x_T)] - F* (dotted, DERIVED covariance recursion) and "
        f"simulated DP-SHB (dots: mean of {trials} runs, error bars 95% Student-t intervals of "
        f"the mean, {trials - 1} dof) for c_w = 1e-4 and 1e-2. VERBATIM: d = 2, mu = 0.5, "
        f"L = 1, C_t = t, sigma_T^2 = (T c_w)^2; alpha, beta grids and E0 = 10 from the "
        f"reference code; the Laplace realisation of sigma_T^2 is DERIVED."))
    run.write_csv(rows)
    run.write_csv(rate_rows, "rates")
    return run.done()


if __name__ == "__main__":
    main()
