"""Cells of ``notebooks/01_privacy_accounting.ipynb`` (built and executed by ``_build.py``)."""

from __future__ import annotations

from _nbcommon import STYLED_SETUP
from nbformat.v4 import new_code_cell, new_markdown_cell

CELLS = [
    new_markdown_cell("""\
# Privacy accounting with dpbounds

How much Gaussian noise σ a DP-SGD run needs for a target $(\\varepsilon,\\delta)$, and how much
each accountant certifies for a given σ. Every calibration returns the **conservative** side:
the returned noise was verified by the accountant to give at most the target $\\varepsilon$.
The neighbouring relation is explicit (Poisson sampling ↔ add/remove; sampling without
replacement ↔ replace-one). Google's `dp_accounting` (a core dependency) is the independent
check."""),
    new_code_cell(STYLED_SETUP + """
from dpbounds.privacy.calibrate import calibrate, epsilon_of
from dpbounds.privacy.mechanisms import GaussianMechanism, SubsampledGaussianMechanism
try:
    import dp_accounting
except ImportError:
    dp_accounting = None
    print("dp_accounting not installed: the independent check is skipped")"""),
    new_markdown_cell("""\
## ε as a function of σ, per accountant

Left: DP-SGD, $T$ steps of the Poisson-subsampled Gaussian with rate $q$ (sensitivity 1):
dpbounds' own RDP accountant and its PLD accountant (privacy-loss distributions, pessimistic),
with `dp_accounting`'s RDP and PLD accountants as markers. zCDP has no subsampling
amplification, so it does not apply here. Right: the full-batch Gaussian ($q=1$) composed $T$
times, where every accountant of the library applies — zCDP (Lee & Kifer), RDP and PLD (exact
for the Gaussian). Read the curves both ways: the σ needed for a target ε is where the curve
crosses the dotted line."""),
    new_code_cell("""\
def dpa_epsilon(sigma, q, T, delta, kind):
    \"\"\"epsilon of Google's dp_accounting (the independent check).\"\"\"
    event = dp_accounting.GaussianDpEvent(sigma)
    if q < 1:
        event = dp_accounting.PoissonSampledDpEvent(q, event)
    acct = (dp_accounting.rdp.RdpAccountant() if kind == "rdp"
            else dp_accounting.pld.PLDAccountant())
    acct.compose(dp_accounting.SelfComposedDpEvent(event, T))
    return acct.get_epsilon(delta)


def draw(q=0.01, T=1000, delta=1e-5, target=1.0):
    T = int(round(T))
    sig_sub = np.geomspace(0.5, 5.0, 10)
    sig_full = np.geomspace(2.0, 200.0, 10)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6.9, 2.9), layout="constrained")
    curves = {}
    for acc, style in (("rdp", "C0-"), ("pld", "C1-")):
        curves[acc] = [epsilon_of(SubsampledGaussianMechanism(s, q), delta, accountant=acc,
                                  count=T) for s in sig_sub]
        ax1.loglog(sig_sub, curves[acc], style, label=f"dpbounds {acc}")
    for acc, style in (("zcdp", "C2-"), ("rdp", "C0--"), ("pld", "C1:")):
        ax2.loglog(sig_full, [epsilon_of(GaussianMechanism(s), delta, accountant=acc, count=T)
                              for s in sig_full], style, label=f"dpbounds {acc}")
    if dp_accounting is not None:
        ax1.loglog(sig_sub, [dpa_epsilon(s, q, T, delta, "rdp") for s in sig_sub], "C0o",
                   mfc="none", label="dp_accounting RDP")
        # its PLD is the slow one, and its grid needs tens of GB where epsilon is in the
        # hundreds (q = 1, T = 1e5): checked at a few sigmas with a moderate epsilon only
        few = [s for s, e in zip(sig_sub[::3], curves["pld"][::3]) if e < 50]
        ax1.loglog(few, [dpa_epsilon(s, q, T, delta, "pld") for s in few], "C1s", mfc="none",
                   label="dp_accounting PLD")
    for ax, title in ((ax1, f"DP-SGD: q = {q:.3g}, T = {T}"), (ax2, f"full batch: q = 1, T = {T}")):
        ax.axhline(target, color="0.4", ls=":", lw=1, label=f"target ε = {target:g}")
        ax.set(xlabel="noise multiplier σ (std / sensitivity)", ylabel=f"privacy loss ε at δ = {delta:.0e}",
               title=title)
        ax.set_xticks([t for t in (0.5, 1, 2, 5, 10, 20, 50, 100, 200)
                       if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]])
        ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(plt.NullFormatter())  # the log minor labels overlap
        ax.legend(fontsize=7)
    plt.show()
    return curves


curves = draw()
interact(draw, q=log_slider(0.01, 1e-4, 1.0), T=log_slider(1000, 1, 1e5),
         delta=log_slider(1e-5, 1e-10, 1e-2), target=log_slider(1.0, 0.01, 100.0))"""),
    new_markdown_cell("""\
## Calibrate σ for DP-SGD: q = 0.01, T = 1000 steps, ε = 1, δ = 1e-5
Gaussian noise of std σ on the sum of per-example gradients clipped to norm 1. The PLD
accountant is tighter than RDP, so it needs less noise."""),
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
The noise calibrated by RDP, re-accounted by RDP, PLD and `dp_accounting` (independent)."""),
    new_code_cell("""\
mech = SubsampledGaussianMechanism(sigma["rdp"], q)
rows = {acc: epsilon_of(mech, delta, accountant=acc, count=T) for acc in ("rdp", "pld")}
if dp_accounting is not None:
    rows["dp_accounting RDP (independent)"] = dpa_epsilon(sigma["rdp"], q, T, delta, "rdp")
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
