"""Keyword names and JSON keys follow the notation table (``dpbounds/notation.py``).

Every parameter of a public algorithm is a notation quantity (its name or a declared
``api_names`` spelling) or one of the non-quantity arguments listed once below with the reason;
renamed keywords keep working for one release through :func:`dpbounds.notation.notation_keywords`
(``DeprecationWarning`` naming the new keyword; both at once is a ``ValueError``), and a
misspelt keyword is named in a ``TypeError`` with a did-you-mean hint (Python 3.11's own
message has none). Negative controls: a fake function with non-notation keywords is reported,
an undecorated function gives no hint, a JSON key outside the vocabulary is reported.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest

import dpbounds.algorithms as algorithms
from dpbounds.algorithms.gradient_descent import gaussian_gd_sensitivity
from dpbounds.cli import main
from dpbounds.notation import QUANTITIES, notation_keywords
from dpbounds.objectives import NonconvexLogisticRegression, QuadraticObjective

#: Spellings that name a quantity: every row's name and its declared API names.
QUANTITY_NAMES = frozenset(n for q in QUANTITIES for n in (q.name, *q.api_names))

#: Parameters that are not quantities of the notation table, by group, each with its reason.
NOT_QUANTITIES: dict[str, tuple[str, frozenset[str]]] = {
    "inputs": ("the problem and the start point, not numbers of the theory",
               frozenset({"objective", "x0", "xp"})),
    "run settings": ("how many runs, their randomness and what is recorded; not part of "
                     "the algorithm's mathematics (transcript: the run's record for the "
                     "re-accounting of dpbounds.verify.reaccount)",
                     frozenset({"trace", "trace_every", "transcript"})),
    "variant choices": ("strings or switches that pick an implementation or a schedule, "
                        "each documented with its choices where it is taken",
                        frozenset({"accountant", "sampling", "calibration", "sensitivity_rule",
                                   "node_count_method", "release", "horizon_rule",
                                   "horizon_reselection", "allocation", "method", "restart",
                                   "budgets", "noise_split", "first_stage"})),
    "declared public size": ("public_n is a declared bound on the dataset size under "
                             "add/remove (not the private size n of dataset_size)",
                             frozenset({"public_n"})),
    "Kuru et al.'s MASG": ("p, Kuru et al.'s stage-growth exponent of DP-MASG (eq. (33)), "
                           "used by dp_masg only", frozenset({"p"})),
    "Lee & Kifer's DP-AGD": ("the constants of Algorithm 2 (budget splits, γ of the budget "
                             "increase, C_grad, C_obj, the step grid, τ, η, the NoisyMax and "
                             "gradient budgets) in the paper's names, used by dp_agd only; "
                             "γ and η there are not the mixing and step size of the table",
                             frozenset({"splits", "gamma", "grad_clip", "obj_clip",
                                        "grid_size", "initial_max_step", "tau", "eta",
                                        "alpha_cap", "noisy_max_noise", "noisy_max_ledger",
                                        "rho_nmax", "rho_ng",
                                        "max_iterations"})),
    "forwarding": ("**kwargs of the *_opt wrappers, checked by the function they call",
                   frozenset({"kwargs"})),
}
#: Where the exemptions for a group hold: the DP-AGD and MASG names only in those functions.
ONLY_IN = {"Lee & Kifer's DP-AGD": {"dp_agd"}, "Kuru et al.'s MASG": {"dp_masg",
                                                                       "reselected_horizon"}}


def non_notation_names(func: Callable[..., Any]) -> list[str]:
    """The parameter names of ``func`` that are neither quantities nor exempt for it."""
    fname = getattr(func, "__name__", "")
    exempt = set().union(*(names for group, (_, names) in NOT_QUANTITIES.items()
                           if group not in ONLY_IN or fname in ONLY_IN[group]))
    return [p for p in inspect.signature(func).parameters
            if p not in QUANTITY_NAMES and p not in exempt]


def _public_algorithms() -> list[Callable[..., Any]]:
    # make_streams is the seeding utility (seed, trials, xp), not an algorithm
    return [getattr(algorithms, n) for n in algorithms.__all__
            if inspect.isfunction(getattr(algorithms, n)) and n != "make_streams"]


@pytest.mark.parametrize("func", _public_algorithms(), ids=lambda f: f.__name__)
def test_every_algorithm_keyword_is_a_notation_name(func):
    assert non_notation_names(func) == []


def test_gaussian_gd_sensitivity_keywords_are_notation_names():
    assert non_notation_names(gaussian_gd_sensitivity) == []


def test_negative_control_a_non_notation_keyword_is_reported():
    def fake(objective, *, epsilon, clip_norm, momentun, trials=1, seed=None):
        return None

    assert non_notation_names(fake) == ["clip_norm", "momentun"]
    # the DP-AGD exemptions hold in dp_agd only
    def dp_gd_like(objective, *, epsilon, gamma):
        return None

    assert non_notation_names(dp_gd_like) == ["gamma"]


@pytest.mark.parametrize("func", _public_algorithms(), ids=lambda f: f.__name__)
def test_every_algorithm_goes_through_the_keyword_check(func):
    # the did-you-mean and alias machinery is the decorator; every public algorithm has it
    assert hasattr(func, "deprecated_keywords"), func.__name__
    for old, new in func.deprecated_keywords.items():
        assert new in QUANTITY_NAMES and new in inspect.signature(func).parameters
        assert old not in inspect.signature(func).parameters


# ------------------------------------------------------------------ deprecated aliases
RENAMED = {  # function -> old -> new (this release)
    "tree_momentum_nsgd": {"alpha": "momentum_weight", "clip_norm": "clip_threshold"},
    "sensitivity_reduced_nsgd": {"alpha": "momentum_weight", "gamma": "mixing",
                                 "clip_norm": "clip_threshold"},
    "dp_nsgd": {"r": "regulariser"},
    "dp_sgd": {"clip_norm": "clip_threshold"},
    "dp_gd": {"clip_norm": "clip_threshold"},
}


def test_the_renamed_keywords_are_declared():
    got = {f.__name__: f.deprecated_keywords for f in _public_algorithms()
           if f.deprecated_keywords}
    assert got == RENAMED


def _tiny():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 2))
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    y = np.where(A @ np.ones(2) >= 0, 1.0, -1.0)
    return NonconvexLogisticRegression(A, y, lam=0.1)


def _tree(**kw):
    return algorithms.tree_momentum_nsgd(_tiny(), epsilon=2.0, delta=1e-5, epochs=1,
                                         step_size=0.1, trials=2, seed=3, trace=None, **kw)


def test_old_keyword_warns_names_the_new_one_and_runs_the_same():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # control: the new names warn about nothing
        new = _tree(momentum_weight=0.25, clip_threshold=0.8)
    with pytest.warns(DeprecationWarning) as record:
        old = _tree(alpha=0.25, clip_norm=0.8)
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert "'alpha' is deprecated, use 'momentum_weight'" in messages[0]
    assert "'clip_norm' is deprecated, use 'clip_threshold'" in messages[1]
    np.testing.assert_array_equal(old.x, new.x)
    # and the value reached the renamed parameter: another weight moves the iterates
    other = _tree(momentum_weight=0.5, clip_threshold=0.8)
    assert not np.array_equal(other.x, new.x)


def test_old_and_new_keyword_together_is_a_value_error():
    with pytest.raises(ValueError, match="both 'momentum_weight' and its deprecated alias "
                                         "'alpha'"):
        _tree(alpha=0.25, momentum_weight=0.25)


def test_renamed_value_checks_name_the_new_keyword():
    with pytest.raises(ValueError, match="momentum_weight"):
        _tree(momentum_weight=1.5)
    with pytest.raises(ValueError, match="regulariser"):
        algorithms.dp_nsgd(_tiny(), epsilon=1.0, delta=1e-5, steps=2, batch_size=4,
                           step_size=0.1, regulariser=-1.0)


def test_alias_positional_parameter_keeps_its_place():
    q = QuadraticObjective([1.0, 2.0], offsets=[[0.5, 0.0], [-0.5, 0.0]])
    positional = gaussian_gd_sensitivity(q, "add/remove", 1.0, None, 4)
    with pytest.warns(DeprecationWarning, match="use 'clip_threshold'"):
        old = gaussian_gd_sensitivity(q, "add/remove", clip_norm=1.0, public_n=4)
    assert positional == old == 0.25  # C / N


# ------------------------------------------------------------------ unknown keywords
def test_python_311_gives_no_hint_for_a_misspelt_keyword():
    # why the machinery exists: the undecorated function's TypeError names no candidate
    with pytest.raises(TypeError) as info:
        algorithms.dp_heavy_ball.__wrapped__(_tiny(), epsilon=1.0, steps=2, momentun=0.5)
    assert "did you mean" not in str(info.value).lower()


@pytest.mark.parametrize(("func", "wrong", "hint"), [
    ("dp_heavy_ball", "momentun", "momentum"),
    ("tree_momentum_nsgd", "momentum", "momentum_weight"),
    ("dp_sgd", "clip_treshold", "clip_threshold"),
    ("dp_gd", "eps", "epsilon"),
])
def test_misspelt_keyword_is_named_with_did_you_mean(func, wrong, hint):
    with pytest.raises(TypeError) as info:
        getattr(algorithms, func)(_tiny(), **{wrong: 0.5})
    assert f"{func}(): unknown parameter {wrong!r} (did you mean {hint!r}?)" == \
        str(info.value)


def test_decorator_refuses_an_alias_to_a_missing_keyword():
    with pytest.raises(ValueError, match="cannot alias 'a' to 'momentum'"):
        @notation_keywords(a="momentum")
        def f(*, step_size):
            return step_size


# ------------------------------------------------------------------ JSON keys
#: JSON keys that are not quantities of the table, by command, with the reason.
JSON_RESULT_FIELDS: dict[str, tuple[str, frozenset[str]]] = {
    "audit": ("the audit's measurements and bookkeeping (Nasr et al.'s lower bound, its "
              "interval, the f-DP fit μ of Dong, Roth & Su, the trade-off curve, the run's "
              "cost); the curve's key alpha is Dong, Roth & Su's type-I level, a name the "
              "table gives the step size (a known collision, left as the f-DP papers write it)",
              frozenset({"algorithm", "low_bits", "claim_accountant", "claim_fnr",
                         "claimed_epsilon",
                         "cpu_seconds", "elapsed", "epsilon_estimate", "epsilon_lower",
                         "epsilon_lower_reference", "epsilon_tight", "epsilon_upper",
                         "estimator", "fnr", "fnr_high", "fnr_low", "fpr", "fpr_high",
                         "fpr_low", "gdp_fnr", "input_epsilon", "ledger_epsilon", "model",
                         "mu_claim", "mu_gof_pvalue", "mu_hat", "mu_high", "mu_low", "mutant",
                         "null_epsilon_lower", "null_false_positive", "pair", "pilot", "power",
                         "ratio", "reference_delta", "rows", "runs", "statistic", "target",
                         "tpr", "tradeoff", "violation", "description",
                         "mutant_noise_factor", "relations", "in_all", "origin",
                         "estimate_exceeds_claim", "status", "independence_z",
                         "independence_crit", "runs_dependent", "features",
                         "estimated_memory_bytes", "memory_bytes",
                         # stop 71: a plug-in step's post-processing share, and runs that
                         # ignore their seed (white-box violations)
                         "post_processing", "not_post_processing", "seed_ignored",
                         # stop 72: the ledger's claim above the target it was asked for
                         "target_epsilon", "target_delta", "overshoots_target"})),
    "tune": ("a tuned configuration's label, its bound, the computed error, the noise scale "
             "and the gap to the best horizon; 'horizon' is the chosen T (the table's "
             "'steps': a divergence of the tuner's rows, kept here until they are renamed); "
             "a plug-in tuned by its worst-case error (tune bound --objective error): the "
             "worst case attained, the noise's per-coordinate variance, the look-ahead gamma "
             "of the fixed-step family (y_t = x_t + gamma (x_t - x_{t-1})), the "
             "noise-aware Lyapunov bound, and on the tuned row the proven lower bound of the "
             "best choice with the tuned row's gap to it",
             frozenset({"label", "horizon", "bound", "computed", "noise_scale",
                        "horizon_gap", "worst_case_upper", "worst_case_lower",
                        "horizons_searched", "worst_case", "noise_variance", "gamma",
                        "lyapunov", "lower_bound", "certified_gap",
                        # stop 75: what runs a tuned DP-NAG / DP-MASG row (per-step budgets
                        # and Laplace scales; c is the step factor)
                        "epsilons", "noise_scales",
                        # tune nag's rows (checked since stop 75): which method (nag, masg)
                        # and allocation, and strict JSON's record of the non-finite values
                        "method", "allocation", "_nonfinite",
                        # stop 76: tune runs (the pick, each evaluated choice's mean and 95%
                        # interval over its runs, why a grid point did not run, and the
                        # privacy the tuning spent by the runs' accountant)
                        "problem", "best", "rows", "mean", "low", "high", "runs", "failure",
                        "spent_epsilon", "accountant", "notes",
                        # stop 77: tune runs --private (the released run's final iterate and
                        # noisy score, the trials run, one trial's epsilon, and the chosen
                        # run's F(x) - F*, not released: for simulation studies)
                        "algorithm", "x", "score", "trial_epsilon", "suboptimality",
                        "not_released", "trials_run",
                        # stop 79: the selection's seed (null: fresh entropy)
                        "selection_seed", "epsilon_per_run",
                        # why the guarantee is no privacy (delta above 1/n)
                        "flags"})),
    "verify": ("a theorem's catalogue entry: its name, aliases, components, notes, the "
               "algorithms its runs use (what a mutation patches) and the "
               "fixed and grid values of its problem keys (those keys are bound symbols), "
               "the fixed keys its runs do not read (unread); "
               "the lists of studies and problems, a problem's name, class and description",
               frozenset({"aliases", "components", "fixed", "grids", "notes", "theorem",
                          "origin", "provenance", "studies", "problems", "name",
                          "problem_class", "description", "algorithms", "unread"})),
}
#: Bound symbols (``N``, ``eps`` ...) name quantities in verify's problem keys.
BOUND_SYMBOLS = frozenset(s for q in QUANTITIES for s in q.symbols)


def _keys(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | set().union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj))
    return set()


def unknown_json_keys(obj: Any, allowed: Iterable[str]) -> list[str]:
    ok = QUANTITY_NAMES | BOUND_SYMBOLS | set(allowed)
    return sorted(k for k in _keys(obj) if k not in ok)


def _cli_json(*argv: str) -> Any:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*argv])
    return json.loads(out.getvalue())


@pytest.mark.parametrize(("argv", "group"), [
    (("audit", "plan", "dp_sgd", "--json"), "audit"),  # a 2000-trial pilot: ~0.6 s CPU
    (("audit", "--list", "--json"), "audit"),
    (("verify", "--list", "--json"), "verify"),
    (("tune", "hb", "--epsilon", "1", "--dataset-size", "1000", "--strong-convexity", "0.1",
      "--smoothness", "1", "--dimension", "5", "--sensitivity", "1", "--json"), "tune"),
    (("tune", "bound", "nonconvex.clipped_sgd", "--grid-size", "33", "--json"), "tune"),
    (("tune", "runs", "hb", "--problem", "quadratic", "--N", "100", "--d", "3", "--mu", "0.1",
      "--search", "alpha=0.5,1", "--search", "T=3,6", "--trials", "3", "--json"), "tune"),
    (("tune", "runs", "hb", "--N", "100", "--d", "3",
      "--search", "alpha=0.5,1", "--search", "T=3,6", "--private", "--loss-bound", "5",
      "--json"), "tune"),
    (("tune", "nag", "--epsilon", "1", "--dataset-size", "1000", "--strong-convexity", "0.1",
      "--smoothness", "1", "--dimension", "2", "--sensitivity", "1", "--max-horizon", "30",
      "--json"), "tune"),
])
def test_cli_json_keys_are_notation_names(argv, group, monkeypatch):
    if argv[:2] == ("tune", "hb"):
        # heavy ball's branch and bound (run last; it feeds only the bracket's lower end,
        # which is in no JSON row: the keys are the same without it) was ~70% of this call
        import dpbounds.tuning.heavy_ball as hb

        monkeypatch.setattr(hb, "certify_error_minimum",
                            lambda *a, **k: type("NoBracket", (), {"lower": -np.inf})())
    obj = _cli_json(*argv)
    assert _keys(obj)  # control: the walk found keys at all
    assert unknown_json_keys(obj, JSON_RESULT_FIELDS[group][1]) == []


def test_negative_control_a_json_key_outside_the_notation_is_reported():
    obj = [{"epsilon": 1.0, "fixed": {"N": 10, "clip_norm": 1.0}}, {"momentun": 0.1}]
    assert unknown_json_keys(obj, JSON_RESULT_FIELDS["verify"][1]) == ["clip_norm", "momentun"]


# ------------------------------------------------------------------ result params keys
#: ``SimulationResult.params`` keys that are not quantities of the table, by group, with the
#: reason (the keyword exemptions of NOT_QUANTITIES hold for params too).
PARAMS_RESULT_FIELDS: dict[str, tuple[str, frozenset[str]]] = {
    "per-step values": ("the schedules and budgets as the run used them, one entry per step",
                        frozenset({"step_sizes", "momenta", "budgets", "laplace_scales",
                                   "noise_scales",
                                   "stages", "stage_lengths", "trace_steps", "trace_every"})),
    "derived noise": ("noise levels, sensitivities and node counts the calibration derived "
                      "from the keywords (the paper's names where it has one: Δ, λ_H, ζ, "
                      "G of objective perturbation and projected SGD)",
                      frozenset({"noise_multiplier", "noise_std_sum", "sensitivity_sum",
                                 "sigma_over_clip", "sigma_1", "sigma_2", "node_sensitivity",
                                 "node_sensitivity_1", "node_sensitivity_2", "node_count",
                                 "node_count_1", "node_count_2", "diff_clip", "normaliser",
                                 "gradient_sigmas", "released_gradient_sigmas",
                                 "rho_ng_initial", "rho_ng_final", "rho_total", "Delta",
                                 "lambda_H", "zeta", "G", "rule", "grid_bits",
                                 "noise_std_mean"})),
    "run bookkeeping": ("counts of what the run did: the horizon chosen against the one "
                        "asked for, epochs' steps, DP-AGD's rounds and releases",
                        frozenset({"horizon", "requested_steps", "steps_per_epoch",
                                   "iterations", "rounds", "gradient_measurements",
                                   "noisy_max_calls", "released_noisy_max_calls"})),
}


def non_notation_params(algorithm: str, keys: Iterable[str]) -> list[str]:
    """The ``params`` keys of a result of ``algorithm`` that are neither quantities (nor
    exempt for it) or that are a keyword name the algorithm renamed (``alpha`` is a
    quantity's API name, but tree momentum's old keyword for ``momentum_weight``)."""
    func = getattr(algorithms, algorithm)
    base = algorithm.removesuffix("_opt")  # the *_opt wrappers record their method's keys
    exempt = set().union(*(names for group, (_, names) in NOT_QUANTITIES.items()
                           if group not in ONLY_IN or base in ONLY_IN[group]),
                         *(names for _, names in PARAMS_RESULT_FIELDS.values()))
    renamed = set(getattr(func, "deprecated_keywords", {}))
    return sorted(k for k in keys
                  if k in renamed or (k not in QUANTITY_NAMES and k not in exempt))


def _algorithm_table() -> dict[str, Any]:
    # the table of one small run per algorithm that the property tests share
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent / "algorithms" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_algorithm_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: (run, module.OBJECTIVES[name][0]) for name, run in module.CASES.items()}


@pytest.fixture(scope="module")
def result_params() -> dict[str, tuple[str, Any]]:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the table uses the new names
        for case, (run, objective) in _algorithm_table().items():
            res = run(objective, trials=1, seed=0)
            out[case] = (res.algorithm, res.params)
    return out


def test_every_algorithm_has_a_params_case(result_params):
    ran = {algorithm for algorithm, _ in result_params.values()}
    assert {f.__name__ for f in _public_algorithms()} - {"reselected_horizon"} == ran


def test_result_params_keys_are_notation_names(result_params):
    bad = {case: non_notation_params(algorithm, params)
           for case, (algorithm, params) in result_params.items()}
    assert {case: keys for case, keys in bad.items() if keys} == {}
    # the renamed keywords' values are recorded under the new names (DP-GD's Laplace
    # mechanism has no clipping threshold)
    for case, (algorithm, params) in result_params.items():
        for new in getattr(algorithms, algorithm).deprecated_keywords.values():
            if case == "dp_gd[laplace]":
                continue
            assert new in params, (case, new)


def test_negative_control_old_params_keys_are_reported():
    old = {"epochs": 1, "alpha": 0.1, "clip_norm": 1.0, "sigma": 2.0, "momentun": 0.5}
    assert non_notation_params("tree_momentum_nsgd", old) == ["alpha", "clip_norm",
                                                              "momentun"]
    assert non_notation_params("dp_nsgd", {"r": 0.1, "steps": 3}) == ["r"]
    # alpha is a quantity's API name: reported only where it is a renamed keyword
    assert non_notation_params("dp_heavy_ball", {"alpha": 0.1}) == []
    # DP-AGD's own gamma stays exempt there, and only there
    assert non_notation_params("dp_agd", {"gamma": 0.1}) == []
    assert non_notation_params("sensitivity_reduced_nsgd", {"gamma": 0.1}) == ["gamma"]


def test_old_params_keys_read_the_new_ones_with_a_warning():
    from dpbounds.algorithms._common import RENAMED_PARAMS, FrozenParams

    res = algorithms.sensitivity_reduced_nsgd(_tiny(), epsilon=2.0, delta=1e-5, epochs=1,
                                              step_size=0.1, mixing=0.3, trials=1, seed=0,
                                              trace=None)
    for old, new in (("alpha", "momentum_weight"), ("gamma", "mixing"),
                     ("clip_norm", "clip_threshold")):
        with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated, use '{new}'"):
            assert res.params[old] == res.params[new]
        with pytest.warns(DeprecationWarning):
            assert res.params.get(old) == res.params[new]
        assert old not in res.params and old not in dict(res.params)  # stored: new only
    assert res.params["mixing"] == 0.3
    # one alias map, the same renames as the keywords
    renamed = {old: new for f in _public_algorithms()
               for old, new in getattr(f, "deprecated_keywords", {}).items()}
    assert renamed == dict(RENAMED_PARAMS)
    # a record stored before the rename (pickled, cached) answers the new key, silently
    stored = FrozenParams({"r": 0.5, "steps": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stored["regulariser"] == 0.5 and stored.get("regulariser") == 0.5
        assert stored["r"] == 0.5 and stored.get("missing", 7) == 7  # control: no alias
    with pytest.raises(KeyError):
        stored["clip_threshold"]  # neither name stored
