"""Cells of ``notebooks/02_bounds_explorer.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# Bounds explorer

Every utility bound in dpbounds is a registered theorem (`dpbounds.bounds.registry`; on the
command line `dpbounds bound --list`): a sympy expression with its assumptions, closed-form
hyper-parameter choices and citations (with provenance labels), or a numeric bound (a recursion,
a horizon search, an LMI) where no closed form exists. For Tran & Cutkosky and Yang et al.
**only the exponents are the papers'**; every constant is DERIVED by dpbounds."""),
    new_code_cell(SETUP + """
from IPython.display import Math, display
from dpbounds.bounds import registry
from dpbounds.bounds.compare import compare, crossover
from dpbounds.bounds.problem import DEFAULT_PROBLEM
from dpbounds.bounds.theorem import Bound
for e in registry.entries():
    print(f"{e.name:<36} {e.problem_class:<16} {e.kind.split(':')[0]:<9} {e.title}")"""),
    new_markdown_cell("""\
## One theorem over $d$, $N$ and $\\varepsilon$

For the chosen theorem (tuned: the closed-form hyper-parameter choices substituted) each panel
varies one of $d$, $N$, $\\varepsilon$ with the other two held at the slider values (marked by
the vertical line), on log-log axes:

* **black**: the bound; **coloured dashed**: its additive terms (symbolic bounds only);
* **grey**: the other registered bounds of the same problem class (not the heavy-ball LMI
  bound, which solves SDPs at every point: choose it in the dropdown to see it); a **red dot** marks where one
  of them crosses the chosen bound (`dpbounds.bounds.compare.crossover`, Brent-refined; for
  numeric bounds the sign change on the grid);
* **red shading**: the vacuous region, bound $\\geq$ the trivial bound ($G$ for
  $\\lVert\\nabla F\\rVert$, $G\\cdot\\mathrm{diam}$ for the excess risk, $R=F(x_0)-F^*$ in the
  strongly convex case); **grey shading**: a stated assumption fails (e.g. fewer than one
  epoch).

Strongly convex bounds also need $\\mu$ and the sensitivity $S_1$ (below: $\\mu=0.05$, $S_1=1$,
$T\\le 300$); numeric bounds are evaluated point by point on a coarser grid."""),
    new_code_cell("""\
EXTRA = {"strongly_convex": dict(mu=0.05, S1=1.0, max_horizon=300),
         "quadratic": dict(mu=0.05, S1=1.0, max_horizon=300),
         "convex": dict(mu=0.05)}  # mu: output perturbation's regularisation
SLOW = {"strongly_convex.heavy_ball_lmi"}
RANGES = {"d": (1.0, 1e6), "N": (1e2, 1e12), "eps": (1e-2, 10.0)}


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
    \"\"\"fn(problem) along var: vectorised where the theorem's inputs broadcast; otherwise at
    ``coarse`` points, interpolated in log-log (e.g. Yang et al.'s c2, fitted by the RDP
    accountant at each eps). NaN where the bound does not apply.\"\"\"
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
    with np.errstate(divide="ignore"):
        logv = np.interp(np.log(grid), np.log(grid[idx]), np.log(out))
    return np.exp(logv)


def values(entry, p, var, grid):
    \"\"\"The tuned bound along var (NaN where an assumption fails).\"\"\"
    if entry.numeric:
        return along(lambda q: entry.value(problem_for(entry, **q)), p, var, grid)
    return along(lambda q: entry.value(q, invalid="nan"), p, var, grid)


def terms(entry, p, var, grid):
    \"\"\"The additive terms of a symbolic bound along var (empty for numeric / one term).\"\"\"
    if entry.numeric or len(entry.tuned.terms()) < 2:
        return []
    out = []
    for t in entry.tuned.terms():
        b = Bound(name="term", quantity="term", expr=t, sources=entry.tuned.sources)
        try:  # name a term by its leading-order scaling (the sympy text is unreadable)
            label = f"term ~ {b.exponents(('d', 'N', 'eps'))}"
        except Exception:
            label = str(t)[:40]
        out.append((label, along(lambda q: b.evaluate(ignore_extra=True, invalid="nan",
                                                      **entry.params(q)), p, var, grid)))
    return out


def peers(entry):
    sc = {"strongly_convex", "quadratic"}
    return [e for e in registry.entries() if e.name != entry.name and e.name not in SLOW and
            (e.problem_class == entry.problem_class or {e.problem_class, entry.problem_class} <= sc)]


def crossings(entry, other, p, var, grid, mine, theirs):
    if not (entry.numeric or other.numeric):
        try:  # Brent-refined; needs both theorems to broadcast along var
            return [c.value for c in crossover(entry.name, other.name, var, p,
                                               low=grid[0], high=grid[-1], points=200)]
        except TypeError:
            pass
    r = np.log(mine) - np.log(theirs)
    ok = np.isfinite(r[:-1]) & np.isfinite(r[1:]) & (np.sign(r[:-1]) != np.sign(r[1:]))
    return [float(np.sqrt(grid[i] * grid[i + 1])) for i in np.flatnonzero(ok)]


def shade(ax, grid, mask, **kw):
    ax.fill_between(grid, 0, 1, where=mask, transform=ax.get_xaxis_transform(), lw=0, **kw)


def draw(theorem="nonconvex.tree_momentum_nsgd", d=100.0, N=1e5, eps=1.0):
    entry = registry.get(theorem)
    p = problem_for(entry, d=d, N=N, eps=eps)
    why = entry.applicability(p)
    if why is not None:
        print(f"{theorem} does not apply at this problem: {why}")
    fig, axes = plt.subplots(1, 3, figsize=(14, 5), sharey=True)
    triv = trivial_bound(entry, p)
    for ax, var in zip(axes, ("d", "N", "eps")):
        lo, hi = RANGES[var]
        if var == "eps":
            hi = min(hi, 0.99 * math.log(1 / p["delta"]))
        grid = np.geomspace(lo, hi, 8 if theorem in SLOW else 25 if entry.numeric else 120)
        if entry.problem_class in ("strongly_convex", "quadratic") and var != "eps":
            grid = np.unique(np.round(grid))
        mine = values(entry, p, var, grid)
        shade(ax, grid, np.isnan(mine), color="0.85", label="assumption fails")
        shade(ax, grid, mine >= triv, color="red", alpha=0.12, label="vacuous (≥ trivial)")
        for other in peers(entry):
            if other.applicability(p) is not None:
                continue
            theirs = values(other, p, var, grid)
            ax.loglog(grid, theirs, color="0.6", lw=1)
            finite = np.flatnonzero(np.isfinite(theirs))
            if finite.size:
                k = finite[-1]
                ax.annotate(other.name.split(".", 1)[1], (grid[k], theirs[k]), fontsize=7,
                            color="0.45", ha="right", va="bottom")
            for x in crossings(entry, other, p, var, grid, mine, theirs):
                y = values(entry, p, var, np.array([x]))[0]
                ax.plot([x], [y], "o", color="red", ms=6, mfc="none", mew=1.5)
        for i, (label, v) in enumerate(terms(entry, p, var, grid)):
            ax.loglog(grid, v, "--", color=f"C{i}", lw=1, label=label)
        ax.loglog(grid, mine, "k-", lw=2.2, label="bound (tuned)")
        ax.axhline(triv, color="red", lw=0.8, ls=":")
        ax.axvline(p[var], color="0.3", lw=0.8)
        ax.set_xlabel({"d": "dimension d", "N": "dataset size N", "eps": "ε"}[var])
        ax.set_title(f"over {var}: " + ", ".join(f"{k}={p[k]:g}" for k in ("d", "N", "eps")
                                                  if k != var), fontsize=9)
    axes[0].set_ylabel(entry.quantity_words)
    ys = np.concatenate([l.get_ydata() for ax in axes for l in ax.get_lines()
                         if l.get_color() == "k" and np.size(l.get_ydata()) > 2])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    if ys.size:  # the bound in view, from 1e-8 to 1e4 times the trivial bound
        axes[0].set_ylim(max(ys.min() / 10, triv * 1e-8), min(max(ys.max(), triv) * 5, triv * 1e4))
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle(f"{entry.name}: {entry.title}", fontsize=10)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.27, top=0.88, wspace=0.05)
    plt.show()
    if not entry.numeric:
        print("scaling:", entry.scaling_text())


draw()
interact(draw, theorem=registry.names(), d=log_slider(100, 1, 1e6),
         N=log_slider(1e5, 1e2, 1e12), eps=log_slider(1.0, 0.01, 10.0))"""),
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
