"""Cells of ``notebooks/02_bounds_explorer.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import STYLED_SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# Bounds explorer

Every utility bound in dpbounds is a registered theorem (`dpbounds.bounds.registry`; on the
command line `dpbounds bound --list`): a sympy expression with its assumptions, closed-form
hyper-parameter choices and citations (with provenance labels), or a numeric bound (a recursion,
a horizon search, an LMI) where no closed form exists. For Tran & Cutkosky and Yang et al.
**only the exponents are the papers'**; every constant is DERIVED by dpbounds."""),
    new_code_cell(STYLED_SETUP + """
import io
from functools import lru_cache
from IPython.display import Image, Math
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from dpbounds.bounds import registry
from dpbounds.bounds.compare import compare
from dpbounds.bounds.nonconvex.generalized_smoothness import _fitted_c2
from dpbounds.bounds.problem import DEFAULT_PROBLEM
from dpbounds.bounds.theorem import Bound
for e in registry.entries():
    print(f"{e.name:<36} {e.problem_class:<16} {e.kind.split(':')[0]:<9} {e.title}")"""),
    new_markdown_cell("""\
## One theorem over $d$, $N$ and $\\varepsilon$

For the chosen theorem (tuned: the closed-form hyper-parameter choices substituted) each panel
varies one of $d$, $N$, $\\varepsilon$ with the other two held at the control values (marked by
the vertical line), on log-log axes:

* **black**: the bound; **coloured dashed**: its additive terms (symbolic bounds only), each
  named by its number in the theorem, its leading constant and its scaling in $d, N,
  \\varepsilon$;
* **grey**: the other registered bounds of the same problem class; a **red circle** marks
  where one of them crosses the chosen bound *below the trivial bound* (the sign change on the
  grid, interpolated in log-log; crossings in the vacuous region say nothing and are not marked;
  `dpbounds.bounds.compare.crossover` refines them with Brent's method);
* **red shading**: the vacuous region, bound $\\geq$ the trivial bound, the value doing nothing
  attains (dotted red line: $G$ for $\\lVert\\nabla F\\rVert$, $G\\cdot\\mathrm{diam}$ for the
  excess risk, $R=F(x_0)-F^*$ in the strongly convex case); **grey shading**: a stated
  assumption fails (e.g. fewer than one epoch).

Strongly convex bounds also need $\\mu$ and the sensitivity $S_1$ (below: $\\mu=0.05$, $S_1=1$,
$T\\le 300$); numeric bounds are evaluated at 25 points per panel. The defaults ($d=100$,
$N=10^8$, $\\varepsilon=1$) sit where the default theorem is informative (bound $\\approx 0.28
< G = 1$).

**Speed.** Every curve is vectorised (one NumPy call per curve), the terms are compiled once
per theorem (and only for the chosen one: the grey peers draw their bound alone) and each
panel's curves are cached, so moving one control recomputes only the two panels it changes;
the figure is made once and redrawn in place (its ticks, text layouts and renderer are
reused). Yang et al.'s $c_2$ at the 40 points of the eps axis is read from the fits dpbounds
ships (`dpbounds/bounds/nonconvex/c2_fitted.json`, refitted to 1e-12 by its tests) instead
of 40 noise calibrations. Measured on a 2-vCPU AMD EPYC (`bench/bench_notebook02_redraw.py`):
the first draw costs 1.4-1.9 s of CPU (7-9 s with the calibrations, 14 s on a loaded host),
a slider move 0.4-0.7 s, choosing another theorem 0.2-1.1 s, the first cell 1.4-1.9 s. The
heavy-ball LMI bound (`strongly_convex.heavy_ball_lmi`, Kuru et al. Prop. 3.4) solves an SDP
at every point (about a second each) and is left out of the dropdown and of the grey peers:
notebook 03 maps it, and `draw("strongly_convex.heavy_ball_lmi")` draws it on an 8-point grid
(about a minute)."""),
    new_code_cell("""\
EXTRA = {"strongly_convex": dict(mu=0.05, S1=1.0, max_horizon=300),
         "quadratic": dict(mu=0.05, S1=1.0, max_horizon=300),
         "convex": dict(mu=0.05)}  # mu: output perturbation's regularisation
SLOW = {"strongly_convex.heavy_ball_lmi"}  # an SDP per point: not a live control
LIVE = [n for n in registry.names() if n not in SLOW]
RANGES = {"d": (1.0, 1e6), "N": (1e2, 1e12), "eps": (1e-2, 10.0)}
TEX = {"d": "d", "N": "N", "eps": "\\\\varepsilon"}
LABEL = {"d": "dimension $d$", "N": "dataset size $N$", "eps": "privacy budget $\\\\varepsilon$"}


def problem_for(entry, **values):
    p = {**DEFAULT_PROBLEM, **EXTRA.get(entry.problem_class, {}), **values}
    if entry.problem_class in ("strongly_convex", "quadratic"):
        p["d"], p["N"] = float(round(p["d"])), float(round(p["N"]))  # integers there
    return p


def trivial_bound(entry, p):
    \"\"\"The bound any output meets: ||grad F|| <= G, excess risk <= G diam, F(x_T)-F* <= R.\"\"\"
    return {"nonconvex": p["G"], "convex": p["G"] * p.get("diam", p["R"])}.get(
        entry.problem_class, p["R"])


def along(fn, p, var, grid, coarse=10):
    \"\"\"fn(problem) along var: one vectorised call where the theorem's inputs broadcast;
    otherwise at ``coarse`` points, interpolated in log-log (e.g. Yang et al.'s c2, fitted by
    the RDP accountant at each eps). NaN where the bound does not apply.\"\"\"
    try:
        return np.broadcast_to(np.asarray(fn(dict(p, **{var: grid})), dtype=float), grid.shape)
    except (TypeError, ValueError):
        pass
    idx = np.unique(np.linspace(0, grid.size - 1, min(coarse, grid.size)).round().astype(int))
    out = []
    for x in grid[idx]:
        try:
            out.append(float(fn(dict(p, **{var: x}))))
        except ValueError:
            out.append(math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        logv = np.interp(np.log(grid), np.log(grid[idx]), np.log(out))
    return np.exp(logv)


def grid_for(entry, var, delta):
    lo, hi = RANGES[var]
    if var == "eps":
        hi = min(hi, 0.99 * math.log(1 / delta))
    n = 8 if entry.name in SLOW else 25 if entry.numeric else 40 if var == "eps" else 120
    grid = np.geomspace(lo, hi, n)  # 40 eps points: one c2 fit each for the non-convex bounds
    if entry.problem_class in ("strongly_convex", "quadratic") and var != "eps":
        grid = np.unique(np.round(grid))
    return grid


@lru_cache(maxsize=None)
def term_bounds(name):
    \"\"\"(label, Bound) per additive term of a symbolic bound, built once per theorem (the
    sympy work: exponents, lambdify); empty for numeric or one-term bounds.\"\"\"
    entry = registry.get(name)
    if entry.numeric or len(entry.tuned.terms()) < 2:
        return ()
    out = []
    for i, t in enumerate(entry.tuned.terms(), 1):
        b = Bound(name=f"term{i}", quantity="term", expr=t, sources=entry.tuned.sources)
        coeff = t.as_coeff_Mul()[0]
        try:  # the leading-order scaling; several terms share it, so number and constant too
            powers = b.exponents(("d", "N", "eps")).powers
            scaling = "\\\\,".join(TEX[k] if q == 1 else f"{TEX[k]}^{{{q}}}"
                                    for k, q in powers.items() if q != 0) or "1"
        except Exception:  # a term sympy cannot take the limit of: the number identifies it
            scaling = "?"
        out.append((f"term {i} (constant {float(coeff):.3g}): $\\\\propto {scaling}$", b))
    return tuple(out)


@lru_cache(maxsize=None)
def c2_at(eps, delta):
    \"\"\"Yang et al.'s Lemma 3.1 constant, the registry's own RDP fit (read from the shipped
    fits on the eps axis at the default delta, else about 0.1-0.5 s per eps), kept for every
    eps seen (the registry keeps 64, fewer than one eps panel).\"\"\"
    return _fitted_c2(eps, delta)


def with_c2(entry, p, var, grid):
    \"\"\"``p`` with c2 given (as an array along an eps panel): the non-convex bounds read it
    from the problem when it is there, instead of refitting it on every call.\"\"\"
    if entry.problem_class != "nonconvex":
        return p
    eps = grid if var == "eps" else np.array([p["eps"]])
    c2 = np.array([c2_at(float(e), float(p["delta"])) for e in eps])
    return dict(p, c2=c2 if var == "eps" else float(c2[0]))


@lru_cache(maxsize=512)
def curves(name, var, items):
    \"\"\"The grid and the tuned bound along var at problem ``dict(items)`` (cached: moving
    one control leaves the panel over that variable unchanged).\"\"\"
    entry, p = registry.get(name), dict(items)
    grid = grid_for(entry, var, p["delta"])
    p = with_c2(entry, p, var, grid)
    if entry.numeric:
        bound = along(lambda q: entry.value(problem_for(entry, **q)), p, var, grid)
    else:
        bound = along(lambda q: entry.value(q, invalid="nan"), p, var, grid)
    return grid, bound


@lru_cache(maxsize=512)
def term_curves(name, var, items):
    \"\"\"(label, values) of each additive term along var: drawn for the chosen theorem only,
    so its peers' terms are never built (their sympy work was a third of a first draw).\"\"\"
    entry, p = registry.get(name), dict(items)
    grid = grid_for(entry, var, p["delta"])
    p = with_c2(entry, p, var, grid)
    return [(label, along(lambda q: b.evaluate(ignore_extra=True, invalid="nan",
                                               **entry.params(q)), p, var, grid))
            for label, b in term_bounds(name)]


def peers(entry):
    sc = {"strongly_convex", "quadratic"}
    return [e for e in registry.entries() if e.name != entry.name and e.name not in SLOW and
            (e.problem_class == entry.problem_class or {e.problem_class, entry.problem_class} <= sc)]


def crossings(grid, mine, theirs, below):
    \"\"\"Where log(mine/theirs) changes sign on the grid, interpolated in log-log; only
    where the chosen bound is below ``below`` (elsewhere both are vacuous).\"\"\"
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(mine) - np.log(theirs)
    ok = np.isfinite(r[:-1]) & np.isfinite(r[1:]) & (np.sign(r[:-1]) != np.sign(r[1:]))
    out = []
    for i in np.flatnonzero(ok):
        w = r[i] / (r[i] - r[i + 1])
        x = math.exp((1 - w) * math.log(grid[i]) + w * math.log(grid[i + 1]))
        y = math.exp((1 - w) * math.log(mine[i]) + w * math.log(mine[i + 1]))
        if y < below:
            out.append((x, y))
    return out


def shade(ax, grid, mask, **kw):
    ax.fill_between(grid, 0, 1, where=mask, transform=ax.get_xaxis_transform(), lw=0, **kw)


FIGURE = {}  # made once; every draw reuses its axes (their ticks) and canvas (its renderer)


def explorer_axes():
    \"\"\"The figure and its three axes, emptied of the previous draw's curves and set back
    to a new axes' scales and limits. A new figure per draw would build ~250 tick objects
    again and, on a new renderer, parse every tick and legend label's mathtext again: most of
    a redraw's cost.\"\"\"
    if not FIGURE:
        fig = Figure(figsize=(6.9, 2.6))
        FigureCanvasAgg(fig)  # the figure's own canvas keeps its renderer between draws
        FIGURE.update(fig=fig, axes=fig.subplots(1, 3, sharey=True))
    fig, axes = FIGURE["fig"], FIGURE["axes"]
    for legend in list(fig.legends):
        legend.remove()
    for ax in axes:
        for artist in [*ax.lines, *ax.collections, *ax.texts]:
            artist.remove()
        # as on new axes (the autoscaled limits then agree to the last bit): matplotlib maps
        # the shading's and the marker lines' coordinates through the view limits
        ax.set_xscale("linear")
        ax.set_yscale("linear")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.relim()  # no data left: the limits come from the new curves only
        ax.set_autoscale_on(True)
    return fig, axes


def show(fig, legend, title):
    \"\"\"Lay the figure out in inches, the title above and the legend below the axes (its
    height sets the figure's), and display it as one PNG drawn on its canvas. Everything lies
    inside the figure, so no "tight" crop is needed: that crop draws the figure twice, on
    renderers of two sizes, which empties matplotlib's text caches at every redraw.\"\"\"
    pad, below, height, above = 0.03, 0.468, 1.768, 0.416  # inches around and of the axes
    legend_h = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    h = 2 * pad + legend_h + below + height + above
    fig.set_size_inches(6.9, h)  # a new size (and renderer) only when the legend's rows change
    bottom = (pad + legend_h + below) / h
    fig.subplots_adjust(left=0.09, right=0.99, bottom=bottom, top=bottom + height / h,
                        wspace=0.06)
    legend.set_bbox_to_anchor((0.5, pad / h), transform=fig.transFigure)
    fig.suptitle(title, y=1 - pad / h)
    png = io.BytesIO()
    fig.canvas.print_png(png)
    display(Image(png.getvalue()))


def draw(theorem="nonconvex.tree_momentum_nsgd", d=100.0, N=1e8, eps=1.0):
    entry = registry.get(theorem)
    p = problem_for(entry, d=d, N=N, eps=eps)
    why = entry.applicability(p)
    if why is not None:
        print(f"{theorem} does not apply at this problem: {why}")
    fig, axes = explorer_axes()
    triv = trivial_bound(entry, p)
    mates = [e for e in peers(entry) if e.applicability(p) is None]
    ys = []
    for ax, var in zip(axes, ("d", "N", "eps")):
        key = tuple(sorted((k, v) for k, v in p.items() if k != var))
        grid, mine = curves(entry.name, var, key)
        parts = term_curves(entry.name, var, key)
        ys.append(mine)
        shade(ax, grid, np.isnan(mine), color="0.85", label="assumption fails")
        shade(ax, grid, mine >= triv, color="red", alpha=0.12,
              label="vacuous (bound $\\\\geq$ trivial)")
        for other in mates:
            _, theirs = curves(other.name, var, key)
            ax.loglog(grid, theirs, color="0.6", lw=0.8)
            finite = np.flatnonzero(np.isfinite(theirs))
            if finite.size:
                k = finite[-1]
                ax.annotate(other.name.split(".", 1)[1], (grid[k], theirs[k]), fontsize=6,
                            color="0.4", ha="right", va="bottom")
            for x, y in crossings(grid, mine, theirs, triv):
                ax.plot([x], [y], "o", color="red", ms=5, mfc="none", mew=1.2)
        for i, (label, v) in enumerate(parts):
            ax.loglog(grid, v, "--", color=f"C{i}", lw=0.9, label=label)
        ax.loglog(grid, mine, "k-", lw=1.8, label="bound (tuned)")
        ax.axhline(triv, color="red", lw=0.8, ls=":", label="trivial bound (do nothing)")
        ax.axvline(p[var], color="0.3", lw=0.7)
        ax.set_xlabel(LABEL[var])
        ax.set_title(", ".join(f"{k}={p[k]:g}" for k in ("d", "N", "eps") if k != var))
    axes[0].set_ylabel(entry.quantity_words)
    # no minor ticks on the shared y axis: up to 12 decades (8 unlabelled marks each) made
    # ~170 tick objects, a fifth of the first draw's CPU
    axes[0].yaxis.set_minor_locator(NullLocator())
    ys = np.concatenate(ys)
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:  # the bound in view, from 1e-8 to 1e4 times the trivial bound
        axes[0].set_ylim(max(ys.min() / 10, triv * 1e-8), min(max(ys.max(), triv) * 5, triv * 1e4))
    handles, labels = axes[1].get_legend_handles_labels()
    legend = fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    show(fig, legend, f"{entry.name}: {entry.title}")
    if not entry.numeric:
        print("scaling:", entry.scaling_text())


draw()
interact(draw, theorem=LIVE, d=log_slider(100, 1, 1e6), N=log_slider(1e8, 1e2, 1e12),
         eps=log_slider(1.0, 0.01, 10.0))"""),
    new_markdown_cell("""\
## A numeric bound: DP-NAG with the optimal noise (Kuru et al. Thm 4.1, Prop. 4.2)
No closed form: the value is a horizon search over $T\\le T_{\\max}$; the other strongly convex
bounds (DP-MASG, DP heavy ball) are its peers."""),
    new_code_cell("""\
draw("strongly_convex.nag", d=20, N=1e5, eps=1.0)"""),
    new_markdown_cell("## Algorithm 1 (tree-aggregated momentum): the tuned Theorem 6"),
    new_code_cell("""\
from dpbounds.bounds.nonconvex import tree_momentum as tc, sensitivity_reduced as sr
from dpbounds.bounds.nonconvex import normalized_sgd
thm = tc.theorem6_tuned
display(Math(thm.latex()))
print("provenance:", thm.provenance.value)
print("scaling:", thm.exponents(("d", "N", "eps")))"""),
    new_markdown_cell("""\
## All bounds of a class at one problem, and where they cross
`compare` evaluates every registered bound of the problem's class and finds the crossovers in N."""),
    new_code_cell("""\
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
