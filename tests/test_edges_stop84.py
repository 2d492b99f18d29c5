"""Edges closed in stop 84 (fuzz round 17's leftovers), each with the behaviour before."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpbounds._validation import check_finite, check_nonnegative, check_positive
from dpbounds.privacy.composition import compose_events
from dpbounds.privacy.ledger import PrivacyLedger
from dpbounds.privacy.mechanisms import GaussianMechanism, ZcdpMechanism, mechanism_from_dict


@pytest.mark.parametrize("value", ["1", b"1", ["1", 2], (1, "2"), [["1"]], [[1], [2, "3"]],
                                   np.array(["1"]), np.array([1, "x"], dtype=object)])
def test_text_is_not_read_as_a_number(value: object) -> None:
    # before: np.asarray("1", dtype=float) made every one of these a number
    for check in (check_finite, check_positive, check_nonnegative):
        with pytest.raises(ValueError, match=r"sigma must be a real number \(not text\)"):
            check("sigma", value)


def test_numbers_in_every_container_still_pass() -> None:
    assert check_positive("x", 2) == 2.0
    np.testing.assert_array_equal(check_finite("x", [[1, 2]]), [[1.0, 2.0]])
    np.testing.assert_array_equal(check_positive("x", np.array([1, 2], dtype=object)), [1, 2])
    np.testing.assert_array_equal(check_nonnegative("x", (0, 1.5)), [0.0, 1.5])


def test_text_is_refused_where_fuzz_17_found_it_read() -> None:
    led = PrivacyLedger("add_remove", [(GaussianMechanism(1.0), 1)])
    cases = [
        # "sigma": "1" gave sigma = 1.0; the ledger read eps 19.05 from two strings
        lambda: mechanism_from_dict({"type": "GaussianMechanism", "sigma": "1"}),
        lambda: PrivacyLedger.from_dict({"neighbouring": "add_remove", "entries": [
            [{"type": "GaussianMechanism", "sigma": "1", "sensitivity": "1"}, 10]]}),
        lambda: compose_events(["gaussian:z=1"], delta=1e-5, accountants=["rdp"],
                               time_budget="1"),
        lambda: compose_events(["gaussian:z=1"], delta="1e-5", accountants=["rdp"]),
        lambda: led.delta_curve("1"),
        lambda: led.delta_curve([0.5, "1"]),
        lambda: led.epsilon_curve(["1e-5"]),  # before: read as 1e-5
        lambda: led.tradeoff(None),  # before: TypeError from NumPy
    ]
    words = ["sigma", "sigma", "time_budget", "delta", "eps_grid", "eps_grid", "delta_grid",
             "fpr_grid"]
    for case, name in zip(cases, words, strict=True):
        with pytest.raises(ValueError, match=f"{name} must be a (real )?number"):
            case()
    # the grids' own checks are unchanged: a number or numbers still give the curve
    curve = led.delta_curve([1.0, 2])
    assert curve["pessimistic"].shape == (2,) and np.all(np.diff(curve["pessimistic"]) < 0)


def test_a_plug_in_run_refuses_a_text_epsilon() -> None:
    from dpbounds import extend
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 2))
    y = np.where(rng.normal(size=30) > 0, 1.0, -1.0)
    f = LogisticRegression(A, y, l2=0.1, l1_radius=10.0, l2_radius=10.0)
    m = extend.Method("own", step=lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise),
                      sensitivity=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="epsilon must be a real number"):
            m.run(f, epsilon="1", delta=1e-5, steps=2)  # before: ran at epsilon 1


def test_minus_zero_is_zero() -> None:
    # before: ZcdpMechanism(rho=-0, ...) in the pld row's reason
    rho = ZcdpMechanism(-0.0).rho
    assert rho == 0.0 and math.copysign(1.0, rho) == 1.0
    assert math.copysign(1.0, float(check_nonnegative("x", np.array([-0.0]))[0])) == 1.0


def _levels(T: int) -> int:
    """The oracle: the least K with 2^K > T (the binary tree over T steps has K levels), by
    integer doubling."""
    k = 0
    while 2**k <= T:
        k += 1
    return k


@pytest.mark.parametrize("T", [1, 2, 3, 4, 7, 8, 2**20, 2**48, 2**49 - 1, 2**49, 2**49 + 1,
                               10**15])
def test_tree_nodes_are_counted_in_integers(T: int) -> None:
    # before: ceil(log2(T + 1)) in float64 read 2^49 + 1 as 2^49: 49 nodes for 50, eps 1.5%
    # low (RDP 56.42 for 57.25) (fuzz round 18)
    from dpbounds.privacy.composition import parse_event
    from dpbounds.privacy.events import from_dp_event

    dpa = pytest.importorskip("dp_accounting")
    mech, count = parse_event(f"tree:z=1,T={T}")
    assert (mech.node_count, count) == (_levels(T), 1)
    assert from_dp_event(dpa.SingleEpochTreeAggregationDpEvent(1.0, [T])).node_count == _levels(T)


def test_a_key_given_twice_in_an_event_file_is_refused(tmp_path, capsys) -> None:
    # before: json/yaml kept the last value: z = 0.001 after z = 1 read as eps 5e5, silently
    # (fuzz round 18); the same file with one key reads as usual
    from dpbounds.cli import main

    files = {
        "dup.json": '{"class_name": "GaussianDpEvent", "noise_multiplier": 1, '
                    '"noise_multiplier": 0.001}',
        "nested.json": '[{"class_name": "SelfComposedDpEvent", "count": 2, "event": '
                       '{"class_name": "GaussianDpEvent", "noise_multiplier": 0.001, '
                       '"noise_multiplier": 1}}]',
        "dup.yaml": "class_name: GaussianDpEvent\nnoise_multiplier: 1\nnoise_multiplier: 0.001\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text)
        if name.endswith(".yaml"):
            pytest.importorskip("yaml")
        assert main(["privacy", "compose", "--from-dp-event", str(path), "--accountant",
                     "rdp"]) == 2, name
        assert "'noise_multiplier' appears twice" in capsys.readouterr().err
    one = tmp_path / "one.json"
    one.write_text('{"class_name": "GaussianDpEvent", "noise_multiplier": 1}')
    assert main(["privacy", "compose", "--from-dp-event", str(one), "--accountant", "rdp"]) == 0
    capsys.readouterr()


def test_no_flag_parses_reals_with_python_float() -> None:
    # float('1_0') is 10: `bound --target 1_0`, `audit --confidence 1_0`, `--time-budget`,
    # `--search-range`, `--noise-factor`, `verify --values` and ten more read digit separators
    # the other real flags refuse (fuzz round 18); int('1_0') too (`--workers`, `--pep-window`)
    from dpbounds.cli import _parsers, build_parser, real

    loose = [f"{p.prog} {'/'.join(a.option_strings) or a.dest}"
             for p in _parsers(build_parser()) for a in p._actions if a.type in (float, int)]
    assert loose == []
    with pytest.raises(Exception, match="no '_'"):
        real("1_0")
    assert real("1e-3") == 1e-3


def test_integers_past_the_float_range_are_value_errors() -> None:
    # before: OverflowError ("int too large to convert to float") naming neither field nor
    # file, from math.isfinite / float() of 10**400 (fuzz round 18)
    from dpbounds import extend
    from dpbounds.privacy.events import dp_event_from_json

    gauss = {"class_name": "GaussianDpEvent", "noise_multiplier": 1}
    for data, field in [
        ({"class_name": "GaussianDpEvent", "noise_multiplier": 10**400}, "noise_multiplier"),
        ({"class_name": "GaussianDpEvent", "noise_multiplier": 10**5000}, "noise_multiplier"),
        ({"class_name": "PoissonSampledDpEvent", "sampling_probability": 10**400,
          "event": gauss}, "sampling_probability"),
        ({"class_name": "SelfComposedDpEvent", "count": 10**400, "event": gauss}, "count"),
    ]:
        with pytest.raises(ValueError, match=f"{field}.*float range"):
            dp_event_from_json(data)
    step = lambda x, grad, noise, p: x  # noqa: E731
    for b in (10**400, 10**5000, 10**16):
        with pytest.raises(ValueError, match=r"batch_size must be an integer in \[1, 1e\+15\]"):
            extend.Method("m", step=step, sampling="without_replacement", clip=1.0, batch_size=b)
    assert extend.Method("m", step=step, sampling="without_replacement", clip=1.0,
                         batch_size=10**15).batch_size == 10**15
    led = PrivacyLedger("add_remove", [(GaussianMechanism(1.0), 1)])
    for orders in ([10**400], [10**5000], ["2", 3]):  # ["2", 3] was read as [2, 3]
        with pytest.raises(ValueError, match="orders must be"):
            led.accountant("rdp", orders=orders)


def test_compose_events_takes_one_item_and_refuses_what_is_not_a_list() -> None:
    dpa = pytest.importorskip("dp_accounting")
    listed = compose_events(["gaussian:z=1"], delta=1e-5, accountants=["rdp"])
    eps = listed["results"][0]["epsilon"]
    # one spec, one DpEvent, one named tuple: before, walked letter by letter ("got 'g'") or
    # "'GaussianDpEvent' object is not iterable" (fuzz round 18)
    for kw in ({"events": "gaussian:z=1"}, {"dp_events": dpa.GaussianDpEvent(1.0)},
               {"dp_events": dpa.GaussianDpEvent(1.0).to_named_tuple()}):
        out = compose_events(delta=1e-5, accountants=["rdp"], **kw)
        assert out["results"][0]["epsilon"] == eps
    bad = [({"accountants": None}, "at least one"),  # None: none given
           ({"accountants": ["rdp", "rdp"]}, "names 'rdp' twice"),
           ({"accountants": []}, "at least one"),
           ({"opacus_histories": {"a": 1}}, "opacus_histories must be a list"),
           ({"curve": ["1"]}, "curve must hold"),
           ({"risk_target": "0.1@0.01"}, "must be a pair"),
           ({"risk_target": (0.1, 0.01, 3)}, "must be a pair"),
           ({"risk_target": (True, 0.01)}, "tpr must be a number"),
           # before: "the events after the first alone allow tpr ..." (there are none)
           ({"risk_target": (0.01, 0.1)}, r"tpr must lie in \(fpr, 1\)"),
           ({"risk_target": (0.5, float("nan"))}, "fpr must be finite")]
    for kw, words in bad:
        with pytest.raises(ValueError, match=words):
            compose_events(**{"events": ["gaussian:z=1"], "delta": 1e-5,
                              "accountants": ["rdp"], **kw})
    with pytest.raises(ValueError, match="no event to compose"):
        compose_events(None, delta=1e-5)  # type: ignore[arg-type]
    # None means none, as dp_events=None did before; numbers of any kind in a risk target, a
    # namedtuple of one's own holding events is a list of them (the review of stop 84)
    from collections import namedtuple
    from fractions import Fraction

    assert compose_events(["gaussian:z=1"], delta=1e-5, accountants=["rdp"], dp_events=None,
                          opacus_histories=None)["results"][0]["epsilon"] == eps
    for pair in (np.array([0.5, 0.01]), (Fraction(1, 2), Fraction(1, 100)),
                 (np.float16(0.5), np.array(0.01)), [np.float32(0.5), 0.01]):
        out = compose_events(["gaussian:z=1,steps=10"], delta=1e-5, accountants=["rdp"],
                             risk_target=pair)
        assert out["risk_target"]["tpr_attained"] <= 0.5
    Ev = namedtuple("Ev", "train tune")
    two = compose_events(delta=1e-5, accountants=["rdp"],
                         dp_events=Ev(dpa.GaussianDpEvent(1.0), dpa.GaussianDpEvent(1.0)))
    assert two["results"][0]["epsilon"] == compose_events(
        ["gaussian:z=1,steps=2"], delta=1e-5, accountants=["rdp"])["results"][0]["epsilon"]


def test_a_run_privacy_record_is_checked_where_it_is_read() -> None:
    from dpbounds.privacy.run import RunPrivacy

    d = RunPrivacy(PrivacyLedger("add_remove", [(GaussianMechanism(1.0), 3)]), 5.0, 1e-5,
                   "rdp").to_dict()
    assert RunPrivacy.from_dict(d).epsilon == pytest.approx(
        PrivacyLedger("add_remove", [(GaussianMechanism(1.0), 3)]).accountant("rdp")
        .get_epsilon(1e-5))
    assert RunPrivacy.from_dict(RunPrivacy.non_private().to_dict()).target_delta == 0.0
    # before: TypeError from float(), dict() and iter(); a junk delta or sensitivity kept
    for key, value, words in [("target_epsilon", "5", "not text"),
                              ("accountant_options", [1, 2], "accountant_options must be"),
                              ("trial_ledgers", 5, "trial_ledgers must be"),
                              ("target_delta", "x", "not text"),
                              ("target_delta", 1.0, r"target_delta must lie in \[0, 1\)"),
                              ("sensitivity", "a", "sensitivity must be a number"),
                              ("description", 5, "description must be text")]:
        with pytest.raises(ValueError, match=words):
            RunPrivacy.from_dict({**d, key: value})


def test_calibrate_checks_its_sensitivity_as_method_does() -> None:
    # before: True read as 1.0, "2" as 2.0, and 1e-320 (below Method's 1e-290 floor) gave a
    # subnormal Laplace scale 1.64e-316 that attained eps 0.0061 for a target of 1 (fuzz 18)
    from dpbounds import extend

    step = lambda x, grad, noise, p: x - 0.1 * (grad(x) + noise)  # noqa: E731
    gauss = extend.Method("g84", step=step, sensitivity=0.1)
    lap = extend.Method("l84", step=step, sensitivity=0.1, mechanism="laplace")
    for value in (True, "2"):
        with pytest.raises(ValueError, match="sensitivity must be positive and finite"):
            extend.calibrate(gauss, epsilon=1.0, delta=1e-5, steps=100, sensitivity=value)
    with pytest.raises(ValueError, match="below 1e-290"):
        extend.calibrate(lap, epsilon=1.0, steps=100, sensitivity=1e-320)
    # the override still scales the noise: Laplace b = T * sens / eps exactly (basic
    # composition of T pure steps, the oracle)
    cal = extend.calibrate(lap, epsilon=1.0, steps=100, sensitivity=2.0)
    assert cal.sensitivity == 2.0
    assert 200.0 <= cal.noise_scale <= 200.0 * (1 + 1e-12)


def test_a_second_thread_waits_for_the_class_swap_to_end() -> None:
    # mutant hunt 18's M05 (a lock made per call, not shared) was caught only by chance by
    # stop 82's thread test: here the second thread must not enter while the first holds the
    # swap, whatever the timing (with the mutant it enters at once)
    import threading

    from dpbounds.algorithms._common import data_derived_reads
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    f = LogisticRegression(rng.normal(size=(20, 3)), np.sign(rng.normal(size=20)), l2=0.1)
    cls = type(f)
    entered = threading.Event()

    def other() -> None:
        with data_derived_reads(f):
            entered.set()

    with data_derived_reads(f):
        assert type(f) is not cls  # the swap happened: there is something to guard
        thread = threading.Thread(target=other)
        thread.start()
        assert not entered.wait(0.5)
    thread.join(10)
    assert entered.is_set() and type(f) is cls


@pytest.mark.parametrize("n, m", [(True, 1), (2.5, 1), (0, 1), ("3", 1), (10, 20), (10, 0)])
def test_without_replacement_sizes_are_checked_with_the_file(n, m) -> None:
    # before: refused only after the accountants' imports (2.2 CPU-s, fuzz round 18); the
    # early words are checked against the library's own refusal (from_dp_event, the oracle)
    from dpbounds._dp_event_form import check_fields
    from dpbounds.privacy.events import from_dp_event

    dpa = pytest.importorskip("dp_accounting")
    data = {"class_name": "SampledWithoutReplacementDpEvent", "source_dataset_size": n,
            "sample_size": m, "event": {"class_name": "LaplaceDpEvent", "noise_multiplier": 1}}
    with pytest.raises(ValueError, match="SampledWithoutReplacementDpEvent"):
        check_fields(data, "f.json[0]")
    event = dpa.SampledWithoutReplacementDpEvent(n, m, dpa.LaplaceDpEvent(1.0))
    with pytest.raises(ValueError):
        from_dp_event(event, "replace_one")
    # the control: whole sizes in range pass the early check (10.0 as JSON may write it)
    check_fields({**data, "source_dataset_size": 10.0, "sample_size": 2}, "f.json[0]")


def test_the_cli_reads_and_checks_nested_notes(tmp_path, capsys) -> None:
    # before: a written file wrapped in a ComposedDpEvent was refused with "SelfComposedDpEvent
    # has no field(s) ['written_for']" (mutant hunt 19); now its notes are checked at any
    # depth, and the wrapped pair reads as the same composition given directly (the oracle)
    import json

    from dpbounds.cli import main

    top = tmp_path / "top.json"
    assert main(["privacy", "compose", "--event", "gaussian:z=2,steps=10", "--neighbouring",
                 "replace_one", "--accountant", "pld", "--dp-event-accountant", "pld",
                 "--to-dp-event", str(top), "--json"]) == 0
    capsys.readouterr()
    one = json.loads(top.read_text())
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"class_name": "ComposedDpEvent", "events": [one, one]}))
    assert main(["privacy", "compose", "--from-dp-event", str(nested), "--neighbouring",
                 "replace_one", "--accountant", "pld", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["results"][0]["epsilon"]
    assert main(["privacy", "compose", "--event", "gaussian:z=2,steps=20", "--neighbouring",
                 "replace_one", "--accountant", "pld", "--json"]) == 0
    want = json.loads(capsys.readouterr().out)["results"][0]["epsilon"]
    assert got == pytest.approx(want, rel=1e-9)
    for argv, words in [(["--accountant", "pld"], "events[0] was written under replace_one"),
                        (["--neighbouring", "replace_one", "--dp-event-accountant", "rdp"],
                         "events[0] was written for dp_accounting's pld")]:
        assert main(["privacy", "compose", "--from-dp-event", str(nested), *argv]) == 2
        assert words in capsys.readouterr().err


def test_a_note_without_its_relation_is_refused_in_python_too() -> None:
    # before: dp_event_from_json(neighbouring="add_remove") accepted {"accountant": "pld"} on a
    # replace-one PLD export: eps 7.51 for 17.86 (2.4x low; mutant hunt 19)
    from dpbounds.privacy.events import (
        dp_event_from_json,
        dp_event_note,
        dp_event_to_json,
        to_dp_event,
    )

    pytest.importorskip("dp_accounting")
    event = to_dp_event((GaussianMechanism(2.0), 10), "replace_one", accountant="pld")
    data = {**dp_event_to_json(event), "written_for": {"accountant": "pld"}}
    with pytest.raises(ValueError, match="written_for must be"):
        dp_event_note(data)
    for kw in ({"neighbouring": "add_remove"}, {"accountant": "pld"}):
        with pytest.raises(ValueError, match="written_for must be"):
            dp_event_from_json(data, **kw)
    full = dp_event_to_json(event, {"accountant": "pld", "neighbouring": "replace_one"})
    assert dp_event_note(full) == {"accountant": "pld", "neighbouring": "replace_one"}
    dp_event_from_json(full, accountant="pld", neighbouring="replace_one")


def test_the_yaml_key_check_leaves_merge_keys_and_odd_keys_to_yaml(tmp_path, capsys) -> None:
    # the review of stop 84: the duplicate-key check broke a merge key (refused as a tag
    # without a constructor) and turned an unhashable key into an internal error
    pytest.importorskip("yaml")
    from dpbounds.cli import main

    merge = tmp_path / "merge.yaml"
    merge.write_text("class_name: GaussianDpEvent\n<<: {noise_multiplier: 1.0}\n")
    assert main(["privacy", "compose", "--from-dp-event", str(merge), "--accountant",
                 "rdp"]) == 0
    capsys.readouterr()
    odd = tmp_path / "odd.yaml"
    odd.write_text("? [a, b]\n: 1\nclass_name: GaussianDpEvent\nnoise_multiplier: 1.0\n")
    assert main(["privacy", "compose", "--from-dp-event", str(odd), "--accountant",
                 "rdp"]) == 2
    assert "not YAML" in capsys.readouterr().err


def test_an_integer_with_a_float_is_read() -> None:
    # 10**308 is a float64 (1e308); the first fix refused every integer above 2**1023
    from dpbounds.privacy.events import dp_event_from_json

    event = dp_event_from_json({"class_name": "GaussianDpEvent", "noise_multiplier": 10**308})
    assert event.noise_multiplier == 10**308


def test_the_plug_in_audit_pair_declares_its_domain() -> None:
    # before: the two-record pair of audit_setting built LinearObjective without radii, so a
    # sensitivity reading f.gradient_bound took each data set's largest record and warned
    # twice per audit (notebook 07); now both data sets carry the public bound r
    from dpbounds import extend
    from dpbounds.audit.mutation import _two_record_pair
    from dpbounds.privacy.limits import DataDerivedCalibrationWarning
    from dpbounds.privacy.mechanisms import Neighbouring

    m = extend.Method("pair84", step=lambda x, grad, noise, p: x - 0.5 * (grad(x) + noise),
                      mechanism="gaussian", neighbouring="replace_one",
                      sensitivity=lambda f, p: 2 * f.gradient_bound / f.n)
    for relation in (Neighbouring.REPLACE_ONE, Neighbouring.ADD_REMOVE):
        pair = _two_record_pair(2, 1.5, relation)
        for f in pair:
            assert f.gradient_bound == 1.5
            with warnings.catch_warnings():
                warnings.simplefilter("error", DataDerivedCalibrationWarning)
                m.run(f, epsilon=1.0, delta=1e-5, steps=1, seed=0)
