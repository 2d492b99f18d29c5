r"""Lee & Kifer: DP-AGD against gradient-perturbation and ERM baselines on Adult.

Setting (VERBATIM where Lee & Kifer state it, ``lee_kifer.md`` §5-6, §9): L2-regularised
logistic regression :math:`\frac1n\sum\log(1+e^{-y\,w^\top x})+\frac\lambda2\lVert w\rVert^2`
with the code's :math:`\lambda=10^{-3}`; :math:`\delta=10^{-8}`; DP-AGD with splits = 60,
:math:`C_{grad}=C_{obj}=3`, :math:`\gamma=0.1`, :math:`\Phi` of 20 steps in
:math:`[0,\alpha_{max}]`, :math:`\alpha_{max}=2` (:func:`dpbounds.algorithms.dp_agd.dp_agd`);
:math:`\epsilon\in\{0.05,0.1,0.2,0.4,0.8,1.6\}` (their code's grid).

What is drawn, as the paper's Fig. 2 (logistic regression, accuracy on top, objective below):
(a) classification accuracy on Adult's **held-out test file** (16,281 rows; the paper uses
20 x repeated 5-fold cross-validation) with the non-private optimum's accuracy and the
majority-class rate, (b) the training objective gap :math:`F(w)-F^\ast` (the paper plots
:math:`F(w)`; the gap differs by the constant :math:`F^\ast` and shows the small values on a log
scale). Means over 10 independent runs per (method, :math:`\epsilon`) by default, error bars
95 % Student-t intervals of the mean (9 dof); ``--quick`` is a 3-run smoke test.

DERIVED choices (ours): a uniformly random **subsample of Adult's training file**
(``n = 5000`` by default; DP-AGD's ~350 rounds of 21 NoisyMax candidates make the full
32,561 rows take minutes per run), the baselines' horizons and step sizes: DP-GD (Gaussian,
zCDP, clip 3, :math:`T=30`, step :math:`1/L`), DP-SGD (Poisson batches of
:math:`\sqrt n`, clip 3, 10 epochs, step :math:`1/L`, RDP accountant), output perturbation
(sensitivity :math:`2G/(n\mu)`) and objective perturbation (Kifer-Smith-Thakurta constants of
Lee & Kifer's ObjPert baseline) from :mod:`dpbounds.algorithms.dp_erm`. Metric: training
objective gap and test accuracy.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpbounds.algorithms import dp_gd
from dpbounds.algorithms.dp_agd import dp_agd
from dpbounds.algorithms.dp_erm import (
    objective_perturbation,
    output_perturbation,
    output_perturbation_sensitivity,
)
from dpbounds.algorithms.dp_sgd import dp_sgd
from dpbounds.data import adult
from dpbounds.objectives import LogisticRegression
from paper_figs._common import Cell, FigureRun, mean_ci, parse_args, plt, style

DELTA = 1e-8


def methods(f: LogisticRegression, n: int) -> dict:
    # add/remove: the dataset size is private, so the baselines divide by a declared public
    # size; here it is the subsample size this script chooses (public by construction)
    L = f.smoothness
    batch = int(math.sqrt(n))
    return {
        "DP-AGD (Lee & Kifer Alg. 2)": lambda eps, trials, seed: dp_agd(
            f, epsilon=eps, delta=DELTA, trials=trials, seed=seed),
        "DP-GD (Gaussian, T=30)": lambda eps, trials, seed: dp_gd(
            f, epsilon=eps, delta=DELTA, mechanism="gaussian", clip_threshold=3.0, steps=30,
            step_size=1.0 / L, neighbouring="add_remove", public_n=n, trials=trials, seed=seed),
        "DP-SGD (Poisson √n, 10 epochs)": lambda eps, trials, seed: dp_sgd(
            f, epsilon=eps, delta=DELTA, steps=10 * (n // batch), batch_size=batch,
            step_size=1.0 / L, clip_threshold=3.0, sampling="poisson", public_n=n, trials=trials,
            seed=seed, trace="suboptimality", trace_every=n // batch),
        "output perturbation": lambda eps, trials, seed: output_perturbation(
            f, epsilon=eps, delta=DELTA, trials=trials, seed=seed),
        "objective perturbation": lambda eps, trials, seed: objective_perturbation(
            f, epsilon=eps, delta=DELTA, trials=trials, seed=seed),
    }


@functools.lru_cache(maxsize=1)
def test_set() -> tuple[np.ndarray, np.ndarray]:
    """Adult's test file (same encoding as the training file)."""
    data = adult(split="test")
    return data.features, data.labels


def accuracy(w: np.ndarray) -> np.ndarray:
    """Test accuracy of the linear classifiers ``sign(x . w)``, one per row of ``w``."""
    features, labels = test_set()
    return np.mean(np.where(features @ np.atleast_2d(w).T > 0, 1.0, -1.0)
                   == labels[:, None], axis=0)


@functools.lru_cache(maxsize=2)
def objective(n: int, data_seed: int) -> LogisticRegression:
    """Logistic regression on a uniformly random ``n``-row subsample of Adult's training file."""
    data = adult(split="train")
    idx = np.random.default_rng(data_seed).choice(data.n, n, replace=False)
    return LogisticRegression(data.features[idx], data.labels[idx], l2=1e-3, **data.domain())


def objective_gap(method: str, n: int, data_seed: int, epsilon: float, trials: int,
                  seed: tuple[int, ...]) -> dict[str, Any]:
    """One cell: ``trials`` runs of ``method`` at ``epsilon``; their objective gaps and test
    accuracies."""
    r = methods(objective(n, data_seed), n)[method](epsilon, trials, seed)
    return {"final": np.asarray(r.final), "accuracy": accuracy(r.x_numpy()),
            "epsilon_spent": float(r.ledger.epsilon),
            "neighbouring": str(r.ledger.neighbouring)}


#: (subsample size, epsilon grid, runs): default and ``--quick``.
SETTINGS = {"default": (5000, (0.05, 0.1, 0.2, 0.4, 0.8, 1.6), 10),
            "quick": (400, (0.4, 1.6), 3)}


def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    run = FigureRun.from_args("lee_kifer_dpagd", args)
    n, epsilons, trials = SETTINGS["quick" if args.quick else "default"]
    f = objective(n, args.seed)
    names = list(methods(f, n))
    grid = [(k, name, eps) for k, name in enumerate(names) for eps in epsilons]
    results = run.sweep([Cell(objective_gap, dict(method=name, n=n, data_seed=args.seed,
                                                  epsilon=eps),
                              trials=trials, seed=(args.seed, k, int(eps * 1000)))
                         for k, name, eps in grid])
    by_cell = {(name, eps): (rec, info) for (_, name, eps), rec, info
               in zip(grid, results, results.info)}
    rows = []
    fig, (ax_acc, ax_gap) = plt.subplots(1, 2, figsize=style.size(style.DOUBLE, 0.42))
    markers = "osD^v"
    for k, name in enumerate(names):
        acc, gap = [], []
        for eps in epsilons:
            rec, info = by_cell[(name, eps)]
            gap.append(mean_ci(rec["final"]))
            acc.append(mean_ci(rec["accuracy"]))
            rows.append(dict(method=name, epsilon=eps, delta=DELTA, n=n, gap_mean=gap[-1][0],
                             gap_ci95=gap[-1][1], accuracy_mean=acc[-1][0],
                             accuracy_ci95=acc[-1][1], trials=trials,
                             epsilon_spent=rec["epsilon_spent"],
                             neighbouring=rec["neighbouring"], seconds=info.seconds))
        for ax, vals in ((ax_acc, acc), (ax_gap, gap)):
            m, h = np.array(vals).T
            # on the log axis a bar reaching below 0 is cut just above it
            low = np.minimum(h, 0.999 * m) if ax is ax_gap else h
            ax.errorbar(epsilons, m, [low, h], fmt=f"{markers[k]}-", ms=3.5, lw=1.0,
                        color=f"C{k}", label=name.replace("√n", r"$\sqrt{n}$"))
    opt_acc = float(accuracy(f.optimum.x)[0])
    majority = float(max(np.mean(test_set()[1] == 1), np.mean(test_set()[1] == -1)))
    ax_acc.axhline(opt_acc, color="k", lw=0.8, ls="--", label="non-private optimum")
    ax_acc.axhline(majority, color="0.5", lw=0.8, ls=":", label="majority class")
    ax_acc.set_ylim(top=max(ax_acc.get_ylim()[1], opt_acc + 0.03))  # the line off the frame
    rows += [dict(method="non-private optimum", n=n, accuracy_mean=opt_acc),
             dict(method="majority class", n=n, accuracy_mean=majority)]
    for ax in (ax_acc, ax_gap):
        ax.set_xscale("log")
        ax.set_xlabel(r"$\varepsilon$ ($\delta=10^{-8}$)")
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.minorticks_off()
    ax_gap.set_yscale("log")
    ax_acc.set_ylabel("test accuracy")
    ax_gap.set_ylabel(r"training objective gap $F(w)-F^\ast$")
    ax_acc.set_title("(a) classification accuracy (Adult test file)")
    ax_gap.set_title(f"(b) objective gap (train subsample, $n={n}$)")
    handles, labels = ax_acc.get_legend_handles_labels()
    order = list(range(2, len(labels))) + [0, 1]  # methods first, reference lines last
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper center",
               ncol=4, frameon=False, bbox_to_anchor=(0.5, 1.0), columnspacing=1.2)
    fig.tight_layout(rect=(0, 0, 1, 0.85), w_pad=1.5)
    sens = output_perturbation_sensitivity(objective(n, args.seed))
    run.save_figure(fig, (
        f"Lee & Kifer (2018), Fig. 2(a) (logistic regression on Adult; the paper stacks "
        f"accuracy over objective, here (a) beside (b), vs epsilon), reproduced on a random "
        f"n = {n} subsample of Adult's "
        f"training file with 109 one-hot features, lambda = 1e-3. Points: mean of {trials} "
        f"independent runs per (method, epsilon); error bars: 95% Student-t intervals of the "
        f"mean ({trials - 1} dof). VERBATIM (paper + code): DP-AGD's splits = 60, C_grad = C_obj"
        f" = 3, gamma = 0.1, Phi, lambda, delta = 1e-8, the epsilon grid. DERIVED (ours): "
        f"subsample size, held-out test file instead of 5-fold CV, baseline horizons and step "
        f"sizes. DP-AGD does not beat DP-GD at small epsilon, here nor on the full "
        f"32,561-row training file (a separate spot check, 3 runs each, test accuracy "
        f"DP-AGD 0.715 vs DP-GD 0.798 at epsilon = 0.05, 0.750 vs 0.817 at 0.1), so the "
        f"subsample is not the cause; the public code's sharper NoisyMin is not epsilon-DP (see "
        f"dpbounds.algorithms.dp_agd). Output perturbation sits below the majority-class rate "
        f"(dotted): its L2 sensitivity 2G/(n lambda) = {sens:.3g} at lambda = 1e-3 makes the "
        f"released weights mostly Gaussian noise, so its predictions are close to random "
        f"signs; the majority class needs the learnt bias the noise swamps."))
    run.write_csv(rows)
    return run.done()


if __name__ == "__main__":
    main()
