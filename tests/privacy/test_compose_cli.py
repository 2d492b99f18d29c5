"""``dpbounds privacy compose`` and :mod:`dpbounds.privacy.composition` (issue 35, item 4).

Oracle: dp_accounting's PLD accountant on the same composition written by hand as
dp_accounting events (independent of the parser and of dpbounds' accountants), within the
tolerance of two pessimistic PLDs on 1e-4 grids (rel 1e-3 plus two intervals); the RDP
accountant is within 2% of dp_accounting's RDP (different order grids). Negative controls: a tree
of half the length (one node fewer per record) is outside that tolerance; a relation mixed in
is refused; the CLI's errors are one line.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging

import pytest

from dpbounds.cli import main
from dpbounds.privacy.composition import compose_events, parse_event
from dpbounds.privacy.events import dp_event_to_json
from dpbounds.privacy.mechanisms import Sampling, SubsampledLaplaceMechanism

dpa = pytest.importorskip("dp_accounting")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)
SPECS = ["gaussian:z=1.1,q=0.01,steps=1000", "laplace:b=5,steps=10", "tree:z=2,T=1024"]


def _hand_events(tree_nodes: int = 11):
    """The same composition as dp_accounting events, written by hand: a record lies in
    ceil(log2(1024 + 1)) = 11 nodes of a 1024-step tree."""
    return dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 1000),
        dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(5.0), 10),
        dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), tree_nodes),
    ])


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_composition_matches_dp_accounting_on_the_hand_written_events():
    got = {r["accountant"]: r for r in compose_events(SPECS, delta=1e-5)["results"]}
    ref = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    ref.compose(_hand_events())
    eps = ref.get_epsilon(1e-5)
    assert abs(got["pld"]["epsilon"] - eps) <= 1e-3 * eps + 2e-4, (got["pld"], eps)
    assert got["pld"]["optimistic"] <= eps * (1 + 1e-9)
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(_hand_events())
    # different order grids (dpbounds' default vs dp_accounting's): within 2% (measured 1.3%)
    assert got["rdp"]["epsilon"] == pytest.approx(rdp.get_epsilon(1e-5), rel=0.02)
    # negative control: one node fewer per record is seen
    short = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    short.compose(_hand_events(10))
    assert abs(got["pld"]["epsilon"] - short.get_epsilon(1e-5)) > 1e-3 * eps + 2e-4


def test_cli_json_equals_the_library_and_dp_events_read_from_a_file(tmp_path):
    code, out, err = _run(["privacy", "compose", *sum((["--event", s] for s in SPECS), []),
                           "--delta", "1e-5", "--json", "--quiet", "--curve", "1,20"])
    assert code == 0, err
    data = json.loads(out)
    lib = compose_events(SPECS, delta=1e-5, curve=[1.0, 20.0])
    for a, b in zip(data["results"], lib["results"], strict=True):
        assert a["epsilon"] == pytest.approx(b["epsilon"], rel=1e-12)
        assert a["curve"] == pytest.approx(b["curve"], rel=1e-12)
    pld = data["results"][1]
    assert all(lo <= hi for lo, hi in zip(pld["curve_optimistic"], pld["curve"], strict=True))
    # the same composition read from a dp_accounting JSON file, and from YAML
    path = tmp_path / "events.json"
    path.write_text(json.dumps([dp_event_to_json(e) for e in _hand_events().events]))
    code, out, err = _run(["privacy", "compose", "--from-dp-event", str(path), "--json",
                           "--quiet"])
    assert code == 0, err
    assert json.loads(out)["results"][0]["epsilon"] == pytest.approx(
        data["results"][0]["epsilon"], rel=1e-9)
    yaml = pytest.importorskip("yaml")
    ypath = tmp_path / "events.yaml"
    ypath.write_text(yaml.safe_dump([dp_event_to_json(e) for e in _hand_events().events]))
    code, out, _ = _run(["privacy", "compose", "--from-dp-event", str(ypath), "--json",
                         "--quiet", "--accountant", "rdp"])
    assert json.loads(out)["results"][0]["epsilon"] == pytest.approx(
        data["results"][0]["epsilon"], rel=1e-9)


def test_cli_text_table_and_the_plain_table_still_runs():
    code, out, _ = _run(["privacy", "compose", "--event", SPECS[0], "--quiet",
                         "--accountant", "rdp,pld,zcdp"])
    assert code == 0
    assert "rdp" in out and "[" in out  # the PLD bracket
    assert "zcdp" in out and "n/a" in out and "no subsampling amplification" in out
    assert "sampling_rate=" not in out  # the reason names the mechanism, not its repr
    code, out, _ = _run(["privacy", "--steps", "10", "--quiet", "--json"])
    assert code == 0 and json.loads(out)


@pytest.mark.parametrize(("argv", "match"), [
    (["--event", "gaussian:z=1,q=0.1,sampling=wor"], "mixing neighbouring relations"),
    (["--event", "laplace:b=1,m=10,n=100"], "mixing neighbouring relations"),
    (["--event", "gaussian:z=1,q=0.1", "--neighbouring", "replace_one"],
     "mixing neighbouring relations"),
    (["--event", "foo:z=1"], "kind must be one of"),
    (["--event", "gaussian:z=1,sigma=2"], "exactly one of z"),
    (["--event", "gaussian:z=x"], "z must be a number"),
    (["--event", "gaussian:z=1,steps=1.5"], "steps must be an integer"),
    (["--event", "gaussian:z=-1"], "z must be > 0"),  # the key given (was "sigma")
    (["--event", "gaussian:z=1,sens=0"], "sens must be > 0"),
    (["--event", "tree:z=1"], "exactly one of T"),
    (["--event", "gaussian:z=1", "--accountant", "rdp,xyz"], "accountant must be one of"),
    (["--event", "gaussian:z=1", "--curve", "1,x"], "--curve"),
    (["--event", "gaussian:z=1", "--delta", "0"], "delta"),
    ([], "no event to compose"),
    (["--from-dp-event", "/nonexistent/events.json"], "cannot read"),
])
def test_cli_errors_are_one_line(argv, match):
    code, out, err = _run(["privacy", "compose", "--quiet", *argv])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("dpbounds: error:"), err
    assert match in lines[0], lines[0]


def test_bad_dp_event_files_are_one_line(tmp_path):
    for text, match in [("{", "not JSON"), ('{"class_name": "os.system"}', "not a dp_acc"),
                        ('{"class_name": "GaussianDpEvent", "sigma": 1}', "no field"),
                        ('{"class_name": "RandomizedResponseDpEvent", "noise_parameter": 0.5,'
                         ' "num_buckets": 2}', "no mechanism")]:
        path = tmp_path / "e.json"
        path.write_text(text)
        code, _, err = _run(["privacy", "compose", "--quiet", "--from-dp-event", str(path)])
        assert code == 2 and len(err.strip().splitlines()) == 1 and match in err, err


def test_parse_event_kinds():
    m, n = parse_event("gaussian:sigma=4,sens=2,q=0.1,sampling=wor,steps=7", "replace_one")
    assert n == 7 and m.sampling is Sampling.WITHOUT_REPLACEMENT and m.noise_multiplier_under(
        "replace_one") == 2.0
    m, _ = parse_event("laplace:b=2,m=10,n=100", "replace_one")
    assert isinstance(m, SubsampledLaplaceMechanism) and m.sample_size == 10
    assert parse_event("tree:z=2,T=1024")[0].node_count == 11
    assert parse_event("tree:z=2,T=1023")[0].node_count == 10
    assert parse_event("tree:z=2,K=5,sens=3")[0].sigma == 6.0
    assert parse_event("zcdp:rho=0.1,steps=3")[1] == 3
    assert parse_event("pure:eps=0.5")[0].epsilon == 0.5


def test_opacus_history_file_composes_as_its_events(tmp_path):
    path = tmp_path / "opacus.json"
    path.write_text(json.dumps({"history": [[1.1, 0.01, 1000], [2.0, 0.05, 10]],
                                "mechanism": "rdp"}))
    code, out, err = _run(["privacy", "compose", "--quiet", "--json", "--from-opacus",
                           str(path)])
    assert code == 0, err
    got = json.loads(out)["results"]
    same = compose_events(["gaussian:z=1.1,q=0.01,steps=1000", "gaussian:z=2,q=0.05,steps=10"],
                          delta=1e-5)["results"]
    for a, b in zip(got, same, strict=True):
        assert a["epsilon"] == pytest.approx(b["epsilon"], rel=1e-12)
    code, _, err = _run(["privacy", "compose", "--quiet", "--from-opacus", str(path),
                         "--neighbouring", "replace_one"])
    assert code == 2 and "mixing neighbouring relations" in err and len(err.splitlines()) == 1


def test_curve_tradeoff_is_the_gaussian_closed_form():
    """``--curve tradeoff``: one Gaussian of sigma 2 (sensitivity 1) has TPR
    Phi(Phi^-1(fpr) + 1/2) exactly (Dong, Roth & Su 2022): pessimistic above it by < 1e-6,
    optimistic below it; GDP mu 1/2."""
    from scipy import stats

    code, out, _ = _run(["privacy", "compose", "--event", "gaussian:sigma=2", "--curve",
                         "tradeoff:0.001,0.01,0.1,0.5", "--json", "--quiet"])
    assert code == 0
    t = json.loads(out)["tradeoff"]
    exact = stats.norm.cdf(stats.norm.ppf(t["fpr"]) + 0.5)
    for pess, opt, e in zip(t["pessimistic"], t["optimistic"], exact):
        assert e - 1e-12 <= pess <= e + 1e-6 and opt <= e + 1e-12
    assert 0.5 <= t["gdp"]["mu"] <= 0.5 * (1 + 1e-3)
    code, text, _ = _run(["privacy", "compose", "--event", "gaussian:sigma=2", "--curve",
                          "tradeoff", "--quiet"])
    assert code == 0 and "GDP: mu = 0.50" in text and "tpr pess." in text


def test_time_budget_skips_an_accountant_with_the_reason():
    argv = ["privacy", "compose", "--event", SPECS[0], "--event", SPECS[1], "--json",
            "--quiet", "--accountant", "rdp,pld"]
    code, out, _ = _run([*argv, "--time-budget", "0.001"])
    rows = {r["accountant"]: r for r in json.loads(out)["results"]}
    assert code == 0 and set(rows) == {"rdp", "pld"}  # every accountant has its row
    assert rows["pld"]["epsilon"] is None and rows["pld"]["skipped"]  # ~1 CPU s of work
    assert "time budget of 0.001 s" in rows["pld"]["reason"]
    # negative control: a generous budget runs it
    code, out, _ = _run([*argv, "--time-budget", "600"])
    rows = {r["accountant"]: r for r in json.loads(out)["results"]}
    assert rows["pld"]["epsilon"] is not None and "skipped" not in rows["pld"]


@pytest.mark.parametrize("argv,match", [
    (["--time-budget", "0"], "time_budget"),
    (["--curve", "tradeoff:2"], "tradeoff"),
])
def test_compose_refuses_bad_budget_and_fpr(argv, match):
    code, _, err = _run(["privacy", "compose", "--event", "gaussian:sigma=2", *argv])
    assert code != 0 and match in err and err.count("\n") == 1
