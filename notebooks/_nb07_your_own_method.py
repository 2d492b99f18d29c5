"""Cells of ``notebooks/07_your_own_method.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import STYLED_SETUP as COMMON_SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

SETUP = COMMON_SETUP + """
from pathlib import Path

from dpbounds import extend as ex
from dpbounds.bounds import registry
from dpbounds.cli import main
from dpbounds.cli.verify_cmd import draw_result
from dpbounds.objectives import HuberWell
from dpbounds.verify import scaling_study
from dpbounds.verify.verdicts import format_table

PLUGIN = Path("..") / "examples" / "dp_gd_smooth.py"  # the notebook runs in notebooks/
ex.load_plugins([PLUGIN], entry_points=False)  # what --plugin FILE does on the command line


def show(res):
    fig, ax = plt.subplots(figsize=(6.0, 2.9))
    draw_result(res, ax)
    ax.set_xticks(list(res.values))
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    plt.show()
    print(format_table(list(res.verdicts)))
    print(f"{res.regime['label']}; {res.status}")"""

CELLS = [
    new_markdown_cell("""\
# Verify your own method

A researcher's method and theorem, in one file outside the package, checked by dpbounds with no
edit of the package: `examples/dp_gd_smooth.py` declares noisy gradient descent with step $1/L$
on a smooth non-convex loss (Gaussian noise, replace-one) and a rate **DERIVED** by its author,
$\\frac1T\\sum_{t<T}\\mathbb E\\lVert\\nabla F(x_t)\\rVert\\le\\sqrt{2LR/T+2dG^2T/(N^2\\rho)}$ with
$\\rho=\\varepsilon^2/(8\\log(1/\\delta))$. Everything below uses `dpbounds.extend` only; the
command-line equivalents are given with each step (`dpbounds --plugin examples/dp_gd_smooth.py
...`), and `docs/extending.md` walks through the same file."""),
    new_code_cell(SETUP),
    new_code_cell("print(PLUGIN.read_text())"),
    new_markdown_cell("""\
## 1. The bound: value, closed-form hyper-parameters, scaling, provenance
`dpbounds bound nonconvex.dp_gd_smooth --d 8 --N 1e4 --R 0.18`. The label printed is the
theorem's own (`DERIVED`): only a VERBATIM source is ever called the paper's."""),
    new_code_cell("""\
e = registry.get("nonconvex.dp_gd_smooth")
problem = dict(d=8, N=1e4, eps=1.0, delta=1e-5, G=1.0, L=1.0, R=0.18)
print(f"bound {e.value(problem):.6g} at {e.hyperparameters(problem)}")
where = ex.origin(e.name)  # "plugin /path/to/examples/dp_gd_smooth.py"
print("scaling:", e.scaling(), "| label:", e.tuned.provenance, "| from plugin",
      Path(where.split(" ", 1)[1]).name)"""),
    new_markdown_cell("""\
## 2. The method: dpbounds draws the noise and keeps the ledger
The step function receives the gradient oracle and this step's noise; the run's ledger, seeds
and backend are the package's. `calibrate` is the same calibration the run uses
(`dpbounds calibrate dp_gd_smooth --steps 156 --G 1 --N 1e4`)."""),
    new_code_cell("""\
f = HuberWell.random(10_000, 8, seed=0)
method = ex.method_named("dp_gd_smooth")
run = method.run(f, epsilon=1.0, delta=1e-5, steps=156, trials=4, seed=0, eta=1.0)
cal = ex.calibrate(method, epsilon=1.0, delta=1e-5, steps=156, objective=f)
print(cal.describe())
assert run.params["noise_scale"] == cal.noise_scale  # one calibration
print("the run's epsilon at delta = 1e-5, per accountant:", run.privacy.report(1e-5))"""),
    new_markdown_cell("""\
## 3. Tune: a search over the declared hyper-parameters
The file declares `tunable={"T": (1, 1e6)}`; the search is a log grid over integers, then a
bounded refine (`dpbounds tune bound nonconvex.dp_gd_smooth --d 8 --N 1e4 --R 0.18`). Each row
carries the noise the method calibrates at its horizon."""),
    new_code_cell("print(ex.tune('nonconvex.dp_gd_smooth', problem).table())"),
    new_markdown_cell("""\
## 4. Verify: the run against the bound, and a negative control
`dpbounds verify nonconvex.dp_gd_smooth --vary N --quick`: ratio verdicts at each run's own
parameters, the ledger (the noise the claimed $(\\varepsilon,\\delta)$ requires, recomputed in
closed form) and the drawn noise. The mutant `noise_sqrt2` draws noise $\\sqrt2$ too small with
the ledger unchanged: the drawn-noise verdict must fail."""),
    new_code_cell("""\
res = scaling_study("nonconvex.dp_gd_smooth", vary={"N": None}, quick=True)
show(res)
assert res.holds"""),
    new_code_cell("""\
mut = scaling_study("nonconvex.dp_gd_smooth", vary={"N": None}, quick=True,
                    mutation="noise_sqrt2")
print(format_table([v for v in mut.verdicts if v.case.startswith("drawn")]))
assert not mut.holds"""),
    new_markdown_cell("""\
## 5. Audit: the white-box transcript of the method
`dpbounds audit dp_gd_smooth --quick`: the method runs on the worst-case one-record pair of its
relation; an epsilon lower bound above the claim refutes the declared privacy. The built-in
mutant `sigma/2` must be refuted (exit status 1)."""),
    new_code_cell("""\
print("exit status", main(["audit", "dp_gd_smooth", "--quick", "--quiet"]))
print("exit status", main(["audit", "dp_gd_smooth", "--quick", "--quiet", "--mutant", "sigma/2"]))"""),
    new_markdown_cell("""\
## 6. A strongly convex momentum method, tuned by its worst case
A second user's method, declared in the notebook itself: DP Nesterov
$y_t=x_t+\\beta(x_t-x_{t-1})$, $x_{t+1}=y_t-\\alpha(\\nabla F(y_t)+w_t)$ with Laplace noise
($\\varepsilon/T$ a step, sensitivity $S_1/N$), and a theorem of its author: Kuru et al.'s
Theorem 4.1, eq. (29), at a constant scale $b=S_1T/(N\\varepsilon)$, $\\alpha=1/L$,
$\\beta=(1-\\sqrt{\\mu/L})/(1+\\sqrt{\\mu/L})$ (**DERIVED**). `linear=LinearMomentum(alpha=
"alpha", beta="beta", gamma="beta")` declares the Nesterov form; `tune(..., by="error")` checks
it against the step, then searches $(\\alpha,\\beta,T)$ for the least **exact worst-case**
$\\mathbb E F(x_T)-F^*$ of the run over quadratics with spectrum in $[\\mu,L]$ and
$F(x_0)-F^*\\le R$, with the noise the method calibrates per horizon. Beside it: the theorem's
own choice, and the proven bracket of Nesterov's branch and bound (no Nesterov with
$T\\le30$ does better than `lower_bound`; `docs/extending.md` explains it)."""),
    new_code_cell("""\
import sympy as sp


def nag_step(x, grad, noise, p, memory):  # memory: a dict kept over one run
    prev = memory.get("prev", x)  # x_{-1} = x_0
    memory["prev"] = x
    y = x + p["beta"] * (x - prev)
    return y - p["alpha"] * (grad(y) + noise)


d, N, eps, L, mu, R, S1, T = ex.symbols("d N eps L mu R S1 T")
q = 1 - sp.sqrt(mu / L)  # contraction a step at alpha = 1/L
b = S1 * T / (N * eps)  # the Laplace scale
c = 2 * d * sp.sqrt(L / mu) * (S1 / (N * eps)) ** 2 / L  # noise term <= c T^2
nag = ex.theorem(
    "strongly_convex.my_nag", 2 * R * q**T + 2 * d * b**2 / L * (1 - q**T) / (1 - q),
    quantity="E F(x_T) - F*", problem_class="smooth_strongly_convex",
    hyperparameters={"alpha": 1 / L, "beta": (1 - sp.sqrt(mu / L)) / (1 + sp.sqrt(mu / L)),
                     "T": sp.log(1 + sp.log(q) ** 2 * R / c) / -sp.log(q)},
    source=ex.Source("Kuru, Birbil, Gurbuzbalaban, Yildirim, SIAM J. Optim. 32(2), 2022 "
                     "(arXiv 2008.01989)", "Theorem 4.1, eq. (29)", ex.DERIVED,
                     "(29) at a constant Laplace scale b = S1 T/(N eps), E_0 <= 2R; T = "
                     "ln(1 + k^2 R/c)/k, k = -ln q: at least the minimiser of 2R q^T + c T^2"),
    assumptions=[ex.Assumption("mu <= L", mu <= L), "R = F(x0) - F*"],
    title="DP Nesterov, step 1/L, constant Laplace noise")
my_nag = ex.Method("my_nag", step=nag_step, mechanism="laplace", neighbouring="replace-one",
                   sensitivity=lambda f, p: f.l1_sensitivity / f.n,
                   linear=ex.LinearMomentum(alpha="alpha", beta="beta", gamma="beta"))
study = ex.study(my_nag, nag, measure="subopt")  # ties the method to its theorem's choice"""),
    new_code_cell("""\
sc = dict(mu=0.1, L=1.0, d=4, N=1000, eps=1.0, S1=1.0, R=1.0)
res = ex.tune(my_nag, sc, by="error", max_horizon=30)
print(res.table())
own = next(c for c in res.others if c.label == "the theorem's closed form")
print(f"tuned worst case {res.tuned.worst_case:.4e} = {own.worst_case / res.tuned.worst_case:.2f}x "
      f"below the theorem's choice; proven: no Nesterov with T <= 30 below "
      f"{res.lower_bound:.4e} (tuned within {100 * res.certified_gap:.2f}% of the best)")
bound = nag.theorem.evaluate(ignore_extra=True, **sc, T=own.horizon)  # the theorem at its choice
print(f"the theorem's bound at its choice {bound:.4e} >= its run's worst case {own.worst_case:.4e}")
assert res.lower_bound <= res.tuned.worst_case <= res.tuned.worst_case_upper <= own.worst_case
assert own.worst_case <= bound  # the theorem holds on quadratics (an independent computation)"""),
]
