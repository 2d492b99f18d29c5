"""Every paper-figure script runs in --quick mode and writes its PNG (>= 200 dpi), PDF and CSV.

The scripts run in **one** subprocess (``python -m paper_figs --quick --out TMP``) so that the
single-thread BLAS setting of :mod:`paper_figs` takes effect before NumPy is imported; the CSV
checks then assert what the figures claim against independent facts (published numbers,
closed-form crossovers, the DP budget). Kuru et al.'s Figs. 3-4 default to the paper's grid:
checked on the configuration, without running it.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from paper_figs import SCRIPTS  # the script names only: paper_figs' modules import pyplot

# kuru_fig3 and paper_figs._common are imported by the tests that use them: importing them
# imports matplotlib.pyplot and dpbounds.algorithms, seconds of every collection (and of every
# xdist worker's) that the other tests do not need.

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paper_figs")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "paper_figs", "--quick", "--out", str(out),
                           "--gallery", str(out / "gallery")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "total" in proc.stdout
    return out


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_writes_png_pdf_and_csv(out_dir: Path, name: str) -> None:
    from PIL import Image  # Pillow comes with matplotlib

    pngs = sorted(out_dir.glob(f"{name}.png")) + sorted(out_dir.glob(f"{name}_*.png"))
    assert pngs
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(png) as im:
            # pHYs stores pixels per metre: 200 dpi reads back as 199.9996
            assert min(im.info["dpi"]) >= 199.5, (png.name, im.info.get("dpi"))
            assert min(im.size) >= 500  # a real figure, not an empty canvas
        pdf = png.with_suffix(".pdf")
        assert pdf.read_bytes()[:5] == b"%PDF-"
        # vector output: the PDF holds drawing operators, no embedded raster of the figure
        assert b"/Subtype /Image" not in pdf.read_bytes()
    csvs = sorted(out_dir.glob(f"{name}*.csv"))
    assert csvs and all(len(rows(p)) > 0 for p in csvs)


def test_gallery_copies_every_png_with_a_caption(out_dir: Path) -> None:
    gallery = out_dir / "gallery"
    captions = json.loads((gallery / "captions.json").read_text())
    pngs = sorted(p.name for p in out_dir.glob("*.png"))
    assert sorted(p.name for p in gallery.glob("*.png")) == pngs
    assert sorted(captions) == pngs
    for name, caption in captions.items():
        assert len(caption) > 100 and any(k in caption for k in ("VERBATIM", "DERIVED")), name
    # figures with error bars say what they are
    for name in ("kuru_fig1.png", "lee_kifer_dpagd.png", "lee_kifer_table1.png",
                 "kamath_erm.png", "yang_nsgd.png", "tran_cutkosky_sim.png"):
        assert "Student-t" in captions[name]
    assert all((gallery / n).stat().st_size <= 250_000 for n in pngs)


def test_gallery_shrinks_large_pngs(tmp_path: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    out = tmp_path / "out"
    out.mkdir()
    # noise does not compress: ~750 kB as RGB PNG
    Image.fromarray(rng.integers(0, 255, (500, 500, 3), dtype=np.uint8)).save(
        out / "big.png", dpi=(200, 200))
    (out / "bigger.png").write_bytes(b"not this script's file")
    from paper_figs._common import copy_gallery

    (copy,) = copy_gallery(out, tmp_path / "gallery", ["big"])
    assert copy.name == "big.png" and copy.stat().st_size < (out / "big.png").stat().st_size
    with Image.open(copy) as im:
        assert im.size == (500, 500) and min(im.info["dpi"]) >= 199.5


def test_mean_ci_is_a_student_t_interval() -> None:
    from paper_figs._common import mean_ci

    x = np.array([1.0, 2.0, 4.0])
    m, h = mean_ci(x)
    assert m == pytest.approx(7 / 3)
    # independent oracle: scipy's t.interval on the standard error
    lo, hi = stats.t.interval(0.95, 2, loc=x.mean(), scale=stats.sem(x))
    assert h == pytest.approx((hi - lo) / 2, rel=1e-12)
    assert h > 1.96 * stats.sem(x) * 2  # t_2 = 4.30: the normal quantile would be far too narrow
    assert mean_ci([5.0])[1] == 0.0
    with pytest.raises(ValueError, match="level"):
        mean_ci(x, level=1.5)


def test_kuru_fig3_default_is_the_paper_grid() -> None:
    """Section 5: T in {100, 200, 500, 1000}, m in {1e3, 1e5}, c in {0.1, 1}, 20 runs, n = 1e5
    (the numbers typed from the paper, not read from dpbounds.settings)."""
    from paper_figs import kuru_fig3

    cfg = kuru_fig3.config()
    assert cfg.horizons == (100, 200, 500, 1000)
    assert cfg.trials == 20
    assert sorted(cfg.batch_sizes) == [1000, 100_000]
    assert sorted(cfg.step_factors) == [0.1, 1.0]
    assert cfg.n == 100_000
    quick = kuru_fig3.config(quick=True)
    assert quick.n < cfg.n and quick.trials < cfg.trials and max(quick.horizons) < 100


def test_kuru_fig3_draws_figs_3_and_4(out_dir: Path) -> None:
    from paper_figs import kuru_fig3

    assert (out_dir / "kuru_fig3.png").exists() and (out_dir / "kuru_fig4.png").exists()
    r = rows(out_dir / "kuru_fig3.csv")
    quick = kuru_fig3.config(quick=True)
    # every (m, c, method, T) cell, the -opt methods never beyond T
    assert len(r) == (len(quick.batch_sizes) * len(quick.step_factors) * 6
                      * len(quick.horizons))
    assert all(int(x["horizon_run"]) <= int(x["T"]) for x in r)
    assert {int(x["trials"]) for x in r} == {quick.trials}


def test_dpagd_has_accuracy_and_enough_runs_by_default(out_dir: Path) -> None:
    from paper_figs import lee_kifer_dpagd

    n, epsilons, trials = lee_kifer_dpagd.SETTINGS["default"]
    assert trials >= 10 and len(epsilons) >= 3
    r = [x for x in rows(out_dir / "lee_kifer_dpagd.csv") if x.get("accuracy_ci95")]
    assert r
    for x in r:
        assert 0.0 <= float(x["accuracy_mean"]) <= 1.0
        assert float(x["gap_ci95"]) > 0.0  # >= 2 runs: a real interval


def test_fig1_simulation_under_bound_and_near_exact(out_dir: Path) -> None:
    for r in rows(out_dir / "kuru_fig1.csv"):
        mean, ci, exact = float(r["mc_mean"]), float(r["mc_ci95"]), float(r["exact"])
        assert r["bound_holds"] == "True"
        # Laplace with S1/(n eps) = c_w/sqrt(2) realises sigma_T^2 = (T c_w)^2 exactly
        assert math.isclose(float(r["laplace_scale"]) * math.sqrt(2),
                            int(r["T"]) * float(r["c_w"]), rel_tol=1e-9)
        assert abs(mean - exact) <= 5 * ci / 1.96 + 1e-15


def test_fig2_optimal_allocation_never_worse(out_dir: Path) -> None:
    b = rows(out_dir / "kuru_fig2_bounds.csv")
    for method in ("nag", "masg"):
        uni = {r["T"]: float(r["bound"]) for r in b
               if r["method"] == method and r["allocation"] == "uniform"}
        opt = {r["T"]: float(r["bound"]) for r in b
               if r["method"] == method and r["allocation"] == "optimal"}
        assert all(opt[T] <= uni[T] * (1 + 1e-12) for T in uni)
    # Prop. 4.2 with one stage of length T and equal weights would give b_t n eps/S1 = T;
    # the MASG K = 2 schedule (floor rounding) has the code's horizon T = 53
    assert {r["T"] for r in rows(out_dir / "kuru_fig2_scales.csv") if r["K"] == "2"} == {"53"}


def test_table1_matches_published_start(out_dir: Path) -> None:
    first = rows(out_dir / "lee_kifer_table1.csv")[0]
    assert math.isclose(float(first["ours_f"]), math.log(2), rel_tol=1e-9)  # CSV: 10 digits
    assert float(first["published_f"]) == pytest.approx(math.log(2), abs=1e-5)


def test_privacy_spent_within_target(out_dir: Path) -> None:
    for name in ("kuru_fig3", "lee_kifer_dpagd", "kamath_erm"):
        for r in rows(out_dir / f"{name}.csv"):
            if r.get("epsilon_spent"):
                target = float(r.get("epsilon") or 1.0)
                assert float(r["epsilon_spent"]) <= target * (1 + 1e-9), (name, r)


def test_tran_cutkosky_crossover_beyond_asymptotic(out_dir: Path) -> None:
    cross = rows(out_dir / "tran_cutkosky_bounds_crossover.csv")
    assert cross
    for r in cross:
        assert r["better"] == "tran_cutkosky.alg2"
        # constants and logs push the crossover above the sheet's sqrt(d)/eps
        assert float(r["N_crossover"]) > float(r["asymptotic_N"])


def test_yang_toy_sign_flip(out_dir: Path) -> None:
    toy = [r for r in rows(out_dir / "yang_nsgd.csv") if r["method"] == "toy"]
    small = min(toy, key=lambda r: float(r["value"]))
    assert float(small["nsgd_inner"]) < 0  # the NSGD inner product flips sign at small r
    assert all(float(r["sgd_inner"]) > 0 for r in toy if float(r["value"]) >= 0.95)


def test_tran_cutkosky_sim_moves_and_marks_the_vacuous_range(out_dir: Path) -> None:
    r = rows(out_dir / "tran_cutkosky_sim.csv")
    outputs = [x for x in r if x.get("output_grad_norm")]
    assert outputs
    for x in outputs:
        # progress from ||grad F(x0)|| = 0.6, and the bound is vacuous at the simulated N
        assert float(x["output_grad_norm"]) < 0.6
        assert float(x["bound_first_nonvacuous_N"]) > float(x["N"])
    for alg in {x["algorithm"] for x in r}:
        trace = [float(x["grad_norm_mean"]) for x in r
                 if x["algorithm"] == alg and x["start"] == "start ||x0||=0.6"
                 and x.get("grad_norm_mean")]
        assert trace[-1] < 0.9 * trace[0]


def test_notebook_style_is_the_paper_style_at_150_dpi() -> None:
    import matplotlib as mpl

    from paper_figs import _style

    with mpl.rc_context():
        _style.notebook()
        assert mpl.rcParams["figure.dpi"] == 150
        assert mpl.rcParams["font.size"] == _style.RC["font.size"]
    with pytest.raises(ValueError, match="dpi"):  # below the shared style: refused
        _style.notebook(dpi=72)


def test_fig1_marks_the_rho_optimal_beta() -> None:
    """The marked beta* (numeric argmin of rho on a 4000-point grid, as the script does) is
    the critical damping (1 - sqrt(alpha mu))^2 of the slow mode (closed form, independent);
    a beta off the minimum has a larger rate (negative control)."""
    from dpbounds.bounds.strongly_convex.heavy_ball import heavy_ball_rate
    from paper_figs import kuru_fig1

    fine = np.linspace(0.0, 0.999, 4000)
    for alpha in kuru_fig1.ALPHAS:
        rho = heavy_ball_rate(alpha, fine, kuru_fig1.MU, kuru_fig1.L)
        best = fine[int(np.argmin(rho))]
        closed = (1 - math.sqrt(alpha * kuru_fig1.MU)) ** 2
        assert abs(best - closed) <= fine[1] - fine[0], (alpha, best, closed)
        off = heavy_ball_rate(alpha, np.array([min(closed + 0.1, 0.99)]), kuru_fig1.MU,
                              kuru_fig1.L)[0]
        assert off > rho.min()


def test_tran_cutkosky_marks_only_informative_crossovers(out_dir: Path) -> None:
    cross = rows(out_dir / "tran_cutkosky_bounds_crossover.csv")
    caption = json.loads((out_dir / "captions.json").read_text())["tran_cutkosky_bounds.png"]
    for r in cross:  # informative <=> the bound at the crossover is below G = 1
        assert (r["informative"] == "True") == (float(r["bound_at_crossover"]) < 1.0)
    if not any(r["informative"] == "True" for r in cross):
        assert "no crossover is drawn" in caption
    assert "trivial bound" in caption


def test_bare_figures_leave_out_the_caption_and_the_title(out_dir: Path, tmp_path: Path) -> None:
    """Walkthrough of stop 80: the provenance caption and the suptitle were baked into every
    PNG and PDF, with no way to leave them to a paper's own caption. ``--bare`` draws neither
    (the image is shorter by the caption's lines: the oracle is the default run's own PNG),
    and still records the caption in captions.json."""
    from PIL import Image

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "paper_figs", "--quick", "--bare", "--only",
                           "kuru_fig1", "--out", str(tmp_path), "--inline"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    with Image.open(out_dir / "kuru_fig1.png") as full, Image.open(tmp_path / "kuru_fig1.png") \
            as bare:
        assert bare.size[0] <= full.size[0] and bare.size[1] < 0.95 * full.size[1]
    captions = json.loads((tmp_path / "captions.json").read_text())
    assert captions["kuru_fig1.png"] == json.loads(
        (out_dir / "captions.json").read_text())["kuru_fig1.png"]
