r"""Published experimental settings: the constants of the papers' figures, defined once.

The figure scripts (``paper_figs/``), the demo, the benchmarks and the tests read the settings
from here; each says where every constant comes from (the paper's text, its reference code, or
our choice) with the same provenance labels as the bounds.

* :func:`heavy_ball_quadratic` — DP heavy ball on a 2-d quadratic against Theorem 3.5 (Kuru et
  al., Fig. 1);
* :func:`accelerated_noise_allocation` — optimal vs uniform noise for DP-NAG / DP-MASG (Kuru et
  al., Fig. 2);
* :func:`logistic_regression` — the regularised logistic regression of Kuru et al.'s Section 5
  (Figs. 3-4), with its smoothness computed from the synthetic data;
  :data:`LOGISTIC_REGRESSION_SMOOTHNESS` is that value rounded (the demo's ``--L``).

Example
-------
>>> from dpbounds.settings import heavy_ball_quadratic, logistic_regression
>>> s = heavy_ball_quadratic()
>>> s["mu"], s["L"], s["c_w"]
(0.5, 1.0, (0.0001, 0.01))
>>> round(logistic_regression()["L"], 4)
5.1028
"""

from __future__ import annotations

from typing import Any

from dpbounds.provenance import KURU, Provenance, Source

__all__ = ["LOGISTIC_REGRESSION_SMOOTHNESS", "SOURCE_FIG1", "SOURCE_FIG2", "SOURCE_SECTION5",
           "accelerated_noise_allocation", "logistic_regression"]

SOURCE_FIG1 = Source(KURU, "Figure 1 setup (Section 3.2)", Provenance.VERBATIM,
                     "alpha, beta grids, E_0 = 10 and horizons 1..250 from the reference code "
                     "main_HB_quad.m / error_HB_quad.m (sheet §12.1)")
SOURCE_FIG2 = Source(KURU, "Figure 2 setup (Section 4.2)", Provenance.VERBATIM,
                     "epsilon, n, K and the floor rounding of n_1 from main_MSAG_distribute_noise.m"
                     " (sheet §12.1)")
SOURCE_SECTION5 = Source(KURU, "Section 5, Figures 3-4", Provenance.VERBATIM,
                         "E_0 = 10, theta_0 = 10 * 1 and the c grid from main_compare_methods.m")

#: L of the Section-5 problem: the largest eigenvalue of U'U/n + 2 lambda I for the synthetic data
#: of seed 1 (:func:`logistic_regression`), rounded to 4 decimals
LOGISTIC_REGRESSION_SMOOTHNESS = 5.1028


def heavy_ball_quadratic(source: str = "paper") -> dict[str, Any]:
    r"""Kuru et al.'s Figure 1 (Theorem 3.5 demonstration).

    ``source="paper"`` (the text, §5 of the sheet): :math:`\mu=0.5`, :math:`L=1`;
    ``source="reference_code"`` (``main_HB_quad.m``): :math:`\mu=0.1`. Both: :math:`d=2`,
    :math:`Q=\mathrm{diag}(\mu,L)`, :math:`C_t=t`, :math:`\sigma_T^2=(Tc_w)^2`,
    :math:`c_w\in\{10^{-4},10^{-2}\}`, :math:`\alpha\in\{0.1,0.5,1\}/L`, :math:`E_0=10`, and the
    script's "optimal" :math:`\beta=(1-\sqrt{\alpha\mu})/(1+\sqrt{\alpha\mu})` (Nesterov's formula,
    not :math:`\arg\min_\beta\rho`; ``"nesterov"`` in ``betas``). The text governs; the script's
    :math:`\mu` reproduces its EPS files.
    """
    # numpy here, not at the top: the CLI reads this module's constants before any input is
    # checked, and an error must answer in a fraction of a second (issue 36 item 4)
    import numpy as np

    if source not in ("paper", "reference_code"):
        raise ValueError(f"source must be 'paper' or 'reference_code', got {source!r}")
    mu = 0.5 if source == "paper" else 0.1
    return {"mu": mu, "L": 1.0, "d": 2, "alphas": (0.1, 0.5, 1.0), "c_w": (1e-4, 1e-2),
            "initial_state_error": 10.0, "C": 1.0, "horizons": np.arange(1, 251),
            "betas": (0.0, 0.3, 0.7, "nesterov"), "source": source}


def accelerated_noise_allocation() -> dict[str, Any]:
    r"""Kuru et al.'s Figure 2: optimal vs uniform noise for DP-NAG / DP-MASG.

    VERBATIM (Section 4.2): :math:`\mu=1`, :math:`L=20` (:math:`\kappa=20`), :math:`p=1`, step
    factor :math:`c=1`. From the reference code: :math:`\epsilon=1`, :math:`n=10^5`,
    :math:`K\in\{2,3,4,5\}` stages with :math:`n_1=\lfloor2\sqrt\kappa\ln\sqrt\kappa\rfloor=13`
    (``first_stage_rounding="floor"``). ``illustration`` holds the constants of our right-hand
    panel (the bound against the horizon), which are **DERIVED** (ours): :math:`d=20`,
    :math:`S_1=40`, :math:`n=10^4`, :math:`E_0=10`.
    """
    return {"mu": 1.0, "L": 20.0, "p": 1.0, "c": 1.0, "epsilon": 1.0, "n": 100_000,
            "stages": (2, 3, 4, 5), "first_stage_rounding": "floor",
            "illustration": {"d": 20, "sensitivity": 40.0, "n": 10_000, "initial_gap": 10.0}}


def logistic_regression(m: int | None = None, *, seed: int = 1) -> dict[str, Any]:
    r"""Kuru et al.'s Section 5 / Figure 3 problem constants (``m = n``; Figure 4: ``m = 1000``).

    :math:`d=20`, :math:`n=10^5`, :math:`\epsilon=1`, :math:`\lambda=0.01`,
    :math:`\mu=2\lambda`, :math:`S_1=40`, :math:`E_0=10`, and :math:`L` the largest eigenvalue of
    :math:`U^\top U/n+2\lambda I` for the synthetic data (:func:`dpbounds.data.kuru_synthetic`,
    ``seed``; about 5.103, the population value being :math:`1/12+d/4+0.02`). The keys are the
    keyword names of :func:`dpbounds.tuning.tune_heavy_ball` / ``tune_nesterov``.
    """
    import numpy as np

    from dpbounds._validation import check_int
    from dpbounds.data import kuru_synthetic

    A, _ = kuru_synthetic(n=100_000, d=20, seed=seed)
    L = float(np.linalg.eigvalsh(A.T @ A / A.shape[0] + 0.02 * np.eye(20))[-1])
    out = {"mu": 0.02, "L": L, "d": 20, "n": 100_000, "epsilon": 1.0, "sensitivity": 40.0,
           "initial_gap": 10.0}
    if m is not None:
        out["m"] = check_int("m", m, minimum=1, maximum=100_000)
    return out


def logistic_regression_grid() -> dict[str, Any]:
    r"""The experimental grid of Kuru et al.'s Section 5 (VERBATIM, with the reference code's
    :math:`\theta_0=10\cdot\mathbf 1`): horizons :math:`T\in\{100,200,500,1000\}`, batch sizes
    :math:`m\in\{10^3,10^5\}`, step factors :math:`c\in\{0.1,1\}` (:math:`\alpha=c/L`), 20 runs,
    regularisation :math:`\lambda=0.01`, start :math:`x_0=10` in every coordinate."""
    return {"horizons": (100, 200, 500, 1000), "batch_sizes": (1000, 100_000),
            "step_factors": (0.1, 1.0), "trials": 20, "lam": 0.01, "x0": 10.0}
