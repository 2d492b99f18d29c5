"""``dpbounds privacy compose --curve ... --plot FILE`` (issue 35, item 4's plot).

Smoke: the file is written (PNG signature, non-trivial size). Data: what is drawn is the
ledger's curve: the trade-off drawn for ``gaussian:z=2,steps=4`` (add/remove, no subsampling)
equals a ledger built here from the mechanism (not the parser) at every plotted FPR, and the
Gaussian's exact curve :math:`\\Phi(\\Phi^{-1}(\\alpha)+\\mu)`, :math:`\\mu=\\sqrt4/2=1` (Dong,
Roth & Su, closed form), lies inside the drawn bracket; negative control: the curve of
:math:`\\mu = 1.1` leaves the bracket. The delta(eps) plot draws each accountant's row.
Errors are one line naming ``--plot``.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from scipy import stats

from dpbounds.cli import main


@pytest.fixture(autouse=True)
def _agg_backend() -> None:
    """matplotlib on the Agg backend, imported when a test here runs, not when it is collected
    (its import is ~0.5 CPU-s of every collection otherwise); skipped where not installed."""
    pytest.importorskip("matplotlib").use("Agg")


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_tradeoff_plot_is_written_and_draws_the_ledgers_curve(tmp_path) -> None:
    import matplotlib.pyplot as plt

    from dpbounds.cli.privacy_compose import DEFAULT_FPR, draw_curves, plot_fpr
    from dpbounds.privacy import GaussianMechanism, PrivacyLedger
    from dpbounds.privacy.composition import compose_events

    path = tmp_path / "curve.png"
    code, out, err = _run(["privacy", "compose", "--event", "gaussian:z=2,steps=4",
                           "--curve", "tradeoff", "--accountant", "pld", "--plot", str(path),
                           "--quiet"])
    assert code == 0, err
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert out.count("\n") < 30  # the table keeps its own rows, not the plot's grid

    fpr = plot_fpr(list(DEFAULT_FPR))
    res = compose_events(["gaussian:z=2,steps=4"], delta=1e-5, accountants=["pld"],
                         tradeoff=fpr)
    fig, ax = plt.subplots()
    try:
        draw_curves(res, ax)
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
    finally:
        plt.close(fig)
    pess = next(ln for k, ln in lines.items() if k.startswith("TPR, pessimistic"))
    opt = next(ln for k, ln in lines.items() if k.startswith("TPR, optimistic"))
    ledger = PrivacyLedger("add_remove")
    ledger.record(GaussianMechanism(2.0, 1.0), 4)
    want = ledger.tradeoff(fpr)
    np.testing.assert_array_equal(pess.get_xdata(), fpr)
    np.testing.assert_allclose(pess.get_ydata(), want["pessimistic"], rtol=1e-12)
    np.testing.assert_allclose(opt.get_ydata(), want["optimistic"], rtol=1e-12)
    a = np.asarray(fpr)
    exact = stats.norm.cdf(stats.norm.ppf(a) + 1.0)
    assert np.all(exact <= pess.get_ydata() + 1e-9)
    assert np.all(exact >= opt.get_ydata() - 1e-9)
    wrong = stats.norm.cdf(stats.norm.ppf(a) + 1.1)  # negative control: mu 10% off
    assert np.any(wrong > pess.get_ydata() + 1e-3)


def test_delta_curve_plot_draws_each_accountants_row(tmp_path) -> None:
    import matplotlib.pyplot as plt

    from dpbounds.cli.privacy_compose import draw_curves
    from dpbounds.privacy.composition import compose_events

    path = tmp_path / "delta.svg"
    code, _, err = _run(["privacy", "compose", "--event", "laplace:b=2,steps=3",
                         "--curve", "0.5,1,1.5,2", "--accountant", "rdp,pld",
                         "--plot", str(path), "--quiet"])
    assert code == 0, err
    assert path.read_text().lstrip().startswith(("<?xml", "<svg"))
    res = compose_events(["laplace:b=2,steps=3"], delta=1e-5, accountants=["rdp", "pld"],
                         curve=[0.5, 1.0, 1.5, 2.0])
    fig, ax = plt.subplots()
    try:
        draw_curves(res, ax)
        drawn = {ln.get_label(): list(ln.get_ydata()) for ln in ax.get_lines()}
    finally:
        plt.close(fig)
    rows = {r["accountant"]: r for r in res["results"]}
    assert drawn["rdp"] == rows["rdp"]["curve"]
    assert drawn["pld (pessimistic)"] == rows["pld"]["curve"]
    assert drawn["pld (optimistic)"] == rows["pld"]["curve_optimistic"]


@pytest.mark.parametrize("extra,match", [
    ([], "--plot needs --curve"),
    (["--curve", "tradeoff"], "unknown figure format"),
])
def test_plot_errors_are_one_line(tmp_path, extra, match) -> None:
    target = str(tmp_path / ("c.png" if not extra else "c.xyz"))
    code, _, err = _run(["privacy", "compose", "--event", "gaussian:z=2", *extra,
                         "--plot", target])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and match in lines[0], err
    assert not (tmp_path / "c.xyz").exists()
