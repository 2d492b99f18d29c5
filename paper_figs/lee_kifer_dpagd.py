r"""Lee & Kifer: DP-AGD against gradient-perturbation and ERM baselines on Adult.

Setting (VERBATIM where Lee & Kifer state it, ``lee_kifer.md`` §5-6, §9): L2-regularised
logistic regression :math:`\frac1n\sum\log(1+e^{-y\,w^\top x})+\frac\lambda2\lVert w\rVert^2`
with the code's :math:`\lambda=10^{-3}`; :math:`\delta=10^{-8}`; DP-AGD with splits = 60,
:math:`C_{grad}=C_{obj}=3`, :math:`\gamma=0.1`, :math:`\Phi` of 20 steps in
:math:`[0,\alpha_{max}]`, :math:`\alpha_{max}=2` (:func:`dpbounds.algorithms.dp_agd.dp_agd`);
:math:`\epsilon\in\{0.1,0.4,1.6\}` from their grid.

DERIVED choices (ours): a uniformly random **subsample of Adult's training file**
(``n = 5000`` by default; DP-AGD's ~350 rounds of 21 NoisyMax candidates make the full
32,561 rows take minutes per run), the baselines' horizons and step sizes: DP-GD (Gaussian,
zCDP, clip 3, :math:`T=30`, step :math:`1/L`), DP-SGD (Poisson batches of
:math:`\sqrt n`, clip 3, 10 epochs, step :math:`1/L`, RDP accountant), output perturbation
(sensitivity :math:`2G/(n\mu)`) and objective perturbation (Kifer-Smith-Thakurta constants of
Lee & Kifer's ObjPert baseline) from :mod:`dpbounds.algorithms.dp_erm`. Metric: training
objective gap :math:`F(w)-F^\ast` (Lee & Kifer also report test accuracy under 5-fold CV).
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
from dpbounds.algorithms.dp_erm import objective_perturbation, output_perturbation
from dpbounds.algorithms.dp_sgd import dp_sgd
from dpbounds.data import adult
from dpbounds.objectives import LogisticRegression
from paper_figs._common import Cell, FigureRun, mean_ci, parse_args, plt

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
            f, epsilon=eps, delta=DELTA, mechanism="gaussian", clip_norm=3.0, steps=30,
            step_size=1.0 / L, neighbouring="add/remove", public_n=n, trials=trials, seed=seed),
        "DP-SGD (Poisson √n, 10 epochs)": lambda eps, trials, seed: dp_sgd(
            f, epsilon=eps, delta=DELTA, steps=10 * (n // batch), batch_size=batch,
            step_size=1.0 / L, clip_norm=3.0, sampling="poisson", public_n=n, trials=trials,
            seed=seed, trace="suboptimality", trace_every=n // batch),
        "output perturbation": lambda eps, trials, seed: output_perturbation(
            f, epsilon=eps, delta=DELTA, trials=trials, seed=seed),
        "objective perturbation": lambda eps, trials, seed: objective_perturbation(
            f, epsilon=eps, delta=DELTA, trials=trials, seed=seed),
    }


@functools.lru_cache(maxsize=2)
def objective(n: int, data_seed: int) -> LogisticRegression:
    """Logistic regression on a uniformly random ``n``-row subsample of Adult's training file."""
    data = adult(split="train")
    idx = np.random.default_rng(data_seed).choice(data.n, n, replace=False)
    return LogisticRegression(data.features[idx], data.labels[idx], l2=1e-3, **data.domain())


def objective_gap(method: str, n: int, data_seed: int, epsilon: float, trials: int,
                  seed: tuple[int, ...]) -> dict[str, Any]:
    """One cell: ``trials`` runs of ``method`` at ``epsilon``; their objective gaps."""
    r = methods(objective(n, data_seed), n)[method](epsilon, trials, seed)
    return {"final": np.asarray(r.final), "epsilon_spent": float(r.ledger.epsilon),
            "neighbouring": str(r.ledger.neighbouring)}


def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = parse_args(argv, __doc__.splitlines()[0])
    run = FigureRun.from_args("lee_kifer_dpagd", args)
    n, epsilons, trials = (400, (1.6,), 1) if args.quick else (5000, (0.1, 0.4, 1.6), 2)
    names = list(methods(objective(n, args.seed), n))
    grid = [(k, name, eps) for k, name in enumerate(names) for eps in epsilons]
    results = run.sweep([Cell(objective_gap, dict(method=name, n=n, data_seed=args.seed,
                                                  epsilon=eps),
                              trials=trials, seed=(args.seed, k, int(eps * 1000)))
                         for k, name, eps in grid])
    by_cell = {(name, eps): (rec, info) for (_, name, eps), rec, info
               in zip(grid, results, results.info)}
    rows = []
    fig, ax = plt.subplots(figsize=(7, 5))
    for name in names:
        means, cis = [], []
        for eps in epsilons:
            rec, info = by_cell[(name, eps)]
            m, h = mean_ci(rec["final"])
            means.append(m)
            cis.append(h)
            rows.append(dict(method=name, epsilon=eps, delta=DELTA, n=n, gap_mean=m,
                             gap_ci95=h, trials=trials, epsilon_spent=rec["epsilon_spent"],
                             neighbouring=rec["neighbouring"], seconds=info.seconds))
        ax.errorbar(epsilons, means, cis, fmt="o-", capsize=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε (δ = 1e-8)")
    ax.set_ylabel("training objective gap F(w) − F*")
    ax.set_title(f"Adult (train subsample n={n}, 109 features), logistic, λ=1e-3", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    run.save_figure(fig, "Provenance: DP-AGD settings (splits=60, C=3, γ=0.1, Φ), λ=1e-3, "
                    "δ=1e-8, ε grid VERBATIM (paper + code); subsample size, baseline horizons "
                    "and step sizes DERIVED (ours). At this n the NoisyMax noise swamps the "
                    "step scores, so DP-AGD does not beat DP-GD at small ε; the public code's "
                    "sharper NoisyMin is not ε-DP (see dpbounds.algorithms.dp_agd).")
    run.write_csv(rows)
    return run.done()


if __name__ == "__main__":
    main()
