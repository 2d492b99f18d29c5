"""Random sweep of every public function of dpbounds.privacy with extreme inputs (not a test:
run it by hand, ~5 minutes for 100 calls per entry point).

Reports per entry point: calls, ValueError/TypeError count, other exceptions (type + example),
non-finite float results, calls over 5 s, and the slowest call; every call runs under a 30 s
alarm. Usage::

    PYTHONPATH=. python tests/privacy/fuzz_sweep.py N_PER_FUNCTION [SEED] [NAME,NAME...]

The fast share of it that runs in CI is ``tests/privacy/test_fuzz.py``.
"""
import collections
import importlib
import logging
import math
import random
import signal
import sys
import time
import traceback

import numpy as np

logging.getLogger().setLevel(logging.ERROR)
import dpbounds.privacy as P  # noqa: E402
from dpbounds.privacy import accountants as A  # noqa: E402
from dpbounds.privacy import mechanisms as M  # noqa: E402

_zcdp = importlib.import_module("dpbounds.privacy.zcdp")
_table_module = importlib.import_module("dpbounds.privacy.table")

INF, NAN = math.inf, math.nan
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 5e-324, 1e-15, 1e-6, 1e-3, 0.999999, 2.0, 10.0,
          100.0, 1e3, 1e8, 1e15, 1e30, 1e100, 1e300, 1.7e308, INF, -INF, NAN, -1e30, 3.7, 0.07]
PROBS = FLOATS + [1e-5, 1e-10, 0.01, 0.1, 1 - 1e-16, 1e-200]
INTS = [0, 1, 2, 3, -1, 7, 10, 100, 1000, 10**6, 10**7, 10**9, 10**12, 10**30, 10**400, 1e30,
        1.5, 1e5, NAN, INF, True, 2**20 + 1]
KINDS = {
    "float": FLOATS, "prob": PROBS, "int": INTS,
    "method_zcdp": ["standard", "tight", "bogus"], "sampling": ["poisson", "without_replacement",
                                                                 "x"],
    "acc": ["rdp", "pld", "zcdp", "pure", "bogus"], "nb": ["add_remove", "replace_one", "x"],
    "form": ["tight", "sheet", "simple"], "kmethod": ["auto", "exact", "bound"],
    "orders": [[1.5, 2.0, 64.0], [2.0], [1.0], [0.5], [NAN], [1e6], [2.0, INF]],
    "arr": [[0.1, 0.2], [], [NAN], [-1.0], [1e308, 1e308], [1e-300] * 3, 0.5, [[1.0]]],
}


def spec():
    f, p, i = "float", "prob", "int"
    return {
        "amplify_without_replacement": (P.amplify_without_replacement, [f, i, i]),
        "deamplify_without_replacement": (P.deamplify_without_replacement, [f, i, i]),
        "analytic_gaussian_sigma": (P.analytic_gaussian_sigma, [f, p, f]),
        "basic_composition": (P.basic_composition, ["arr"]),
        "classic_gaussian_epsilon": (P.classic_gaussian_epsilon, [f, p, f]),
        "classic_gaussian_sigma": (P.classic_gaussian_sigma, [f, p, f]),
        "compose": (lambda a, b: len(P.compose(a, b)), [i, i]),
        "compose_zcdp": (P.compose_zcdp, ["arr"]),
        "dp_to_zcdp_rho": (P.dp_to_zcdp_rho, [f, p, "method_zcdp"]),
        "dyadic_nodes": (lambda t: len(P.dyadic_nodes(t)), [i]),
        "epsilon_for_noise_multiplier": (P.epsilon_for_noise_multiplier,
                                         [f, p, p, i, "sampling", "acc"]),
        "gaussian_delta": (P.gaussian_delta, [f, f, f]),
        "gaussian_epsilon": (P.gaussian_epsilon, [f, p, f]),
        "gaussian_rdp": (P.gaussian_rdp, [f, "orders", f]),
        "gaussian_sigma_for_zcdp": (P.gaussian_sigma_for_zcdp, [f, f]),
        "gaussian_zcdp_rho": (P.gaussian_zcdp_rho, [f, f]),
        "laplace_epsilon": (P.laplace_epsilon, [f, f]),
        "laplace_scale_for_epsilon": (P.laplace_scale_for_epsilon, [f, f, i, i]),
        "laplace_scales_for_budgets": (P.laplace_scales_for_budgets, [f, "arr", i, i]),
        "laplace_variance": (P.laplace_variance, [f]),
        "max_nodes_per_sample": (lambda n, e, m: P.max_nodes_per_sample(n, e, method=m),
                                 [i, i, "kmethod"]),
        "max_nodes_per_sample_bound": (P.max_nodes_per_sample_bound, [i, i]),
        "momentum_node_sensitivity": (lambda g, a, n, nb, fo: P.momentum_node_sensitivity(
            g, a, n, nb, form=fo), [f, p, i, "nb", "form"]),
        "nodes_ending_at": (lambda t: len(P.nodes_ending_at(t)), [i]),
        "noise_multiplier_for_epsilon": (P.noise_multiplier_for_epsilon,
                                         [f, p, p, i, "sampling", "acc"]),
        "per_step_epsilon": (P.per_step_epsilon, [f, i, i, i]),
        "poisson_subsampled_gaussian_rdp": (P.poisson_subsampled_gaussian_rdp, [p, f, "orders"]),
        "pure_dp_to_zcdp_rho": (P.pure_dp_to_zcdp_rho, [f]),
        "rdp_to_dp": (lambda r, o, d: P.rdp_to_dp(r, o, d), ["arr", "orders", p]),
        "split_budget": (lambda e, s: P.split_budget(e, s), [f, i]),
        "split_budget_w": (lambda e, w: P.split_budget(e, weights=w), [f, "arr"]),
        "subsampled_gaussian_rdp": (P.subsampled_gaussian_rdp, [p, f, "orders", "sampling"]),
        "subsampled_laplace_epsilon": (P.subsampled_laplace_epsilon, [f, f, i, i]),
        "tree_aggregation_epsilon": (P.tree_aggregation_epsilon, [f, p, f, i]),
        "tree_aggregation_sigma": (P.tree_aggregation_sigma, [f, p, f, i]),
        "tree_momentum_sigma_closed_form": (P.tree_momentum_sigma_closed_form,
                                            [f, p, f, p, i, i]),
        "without_replacement_gaussian_rdp": (P.without_replacement_gaussian_rdp,
                                             [p, f, "orders"]),
        "zcdp_to_dp_epsilon": (P.zcdp_to_dp_epsilon, [f, p, "method_zcdp"]),
        "zcdp_to_dp_delta": (_zcdp.zcdp_to_dp_delta, [f, f, "method_zcdp"]),
        "convert_sensitivity": (lambda s, a, b, pe: P.convert_sensitivity(
            s, a, b, per_example_sum=pe), [f, "nb", "nb", "acc"]),
        "accountant": (_accountant, ["acc", "nb", "mech", i, p, f]),
        "calibrate": (_calibrate, ["fam", f, p, "acc", i, "nb"]),
        "ledger": (_ledger, ["mech", i, p, "acc"]),
        "privacy_table": (_table, [f, p, f, i, p, "nb", f, f, i]),
        "privacy_table_one": (_table_one, ["tparam", "tval"]),
        "calibrate_real": (_calibrate, ["fam", "reps", "rdelta", "acc", "rcount", "nb"]),
        "advanced_composition_epsilon": (_table_module.advanced_composition_epsilon,
                                         [f, i, p]),
    }


def _mech(rng):
    k = rng.randrange(7)
    f = lambda: rng.choice(FLOATS)  # noqa: E731
    nb = rng.choice(["add_remove", "replace_one"])
    pes = rng.choice([True, False])
    if k == 0:
        return M.GaussianMechanism(f(), f(), nb, pes)
    if k == 1:
        return M.LaplaceMechanism(f(), f(), nb, pes)
    if k == 2:
        return M.SubsampledGaussianMechanism(f(), rng.choice(PROBS), f(),
                                             rng.choice(["poisson", "without_replacement"]),
                                             nb, pes)
    if k == 3:
        return M.SubsampledLaplaceMechanism(f(), f(), rng.choice(INTS), rng.choice(INTS), nb, pes)
    if k == 4:
        return M.TreeAggregationMechanism(f(), f(), rng.choice(INTS), nb, pes)
    if k == 5:
        return M.PureDpMechanism(f(), nb)
    return M.ZcdpMechanism(f(), nb)


def _accountant(name, nb, mech, count, delta, eps):
    acc = A.make_accountant(name, nb)
    acc.compose(mech, count)
    return [acc.get_epsilon(delta) if acc.name != "pure" else acc.get_epsilon(), acc.get_delta(eps)]


FAMILIES = {
    "gauss": lambda s: M.GaussianMechanism(s),
    "sgm": lambda s: M.SubsampledGaussianMechanism(s, 0.01),
    "wor": lambda s: M.SubsampledGaussianMechanism(s, 0.01, sampling="without_replacement"),
    "lap": lambda s: M.LaplaceMechanism(s),
    "tree": lambda s: M.TreeAggregationMechanism(s, 1.0, 12),
}


def _calibrate(fam, eps, delta, acc, count, nb):
    return P.calibrate(FAMILIES[fam], eps, delta, acc, count, neighbouring=nb)


def _ledger(mech, count, delta, acc):
    led = P.PrivacyLedger()
    led.record(mech, count)
    led.record(mech, count)
    out = led.epsilon(delta, acc)
    led.report(delta)
    return out


def _table(eps, delta, sens, steps, q, nb, sigma, scale, n):
    rows = P.privacy_table(eps, delta, sens, steps, q, nb, sigma, scale, n)
    return [v for r in rows for v in (r["noise"], r["noise_multiplier"],
                                      r["epsilon_at_given_noise"]) if v is not None]


TABLE_DEFAULTS = dict(epsilon=1.0, delta=1e-5, sensitivity=1.0, steps=1000, sampling_rate=0.01,
                      neighbouring="add_remove", sigma=None, scale=None, dataset_size=10_000)
KINDS["tparam"] = list(TABLE_DEFAULTS)
KINDS["tval"] = FLOATS + INTS + [None, "replace_one"]
KINDS["reps"] = [1e-3, 0.1, 1.0, 10.0, 100.0, 1e-6, 1e4, 1e-300, 1e300]
KINDS["rdelta"] = [1e-5, 1e-10, 1e-3, 0.5, 1e-100, 1e-300]
KINDS["rcount"] = [1, 10, 1000, 10**5, 10**7, 10**9, 10**12]


def _table_one(param, value):
    kw = dict(TABLE_DEFAULTS)
    kw[param] = value
    rows = P.privacy_table(**kw)
    return [v for r in rows for v in (r["noise"], r["noise_multiplier"],
                                      r["epsilon_at_given_noise"]) if v is not None]


class Timeout(Exception):
    pass


def _alarm(*_):
    raise Timeout()


def draw(kind, rng):
    if kind == "mech":
        for _ in range(50):
            try:
                return _mech(rng)
            except ValueError:
                continue
        return M.GaussianMechanism(1.0)
    if kind == "fam":
        return rng.choice(list(FAMILIES))
    return rng.choice(KINDS[kind])


def main():
    n = int(sys.argv[1])
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    only = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    rng = random.Random(seed)
    signal.signal(signal.SIGALRM, _alarm)
    report = {}
    for name, (fn, kinds) in spec().items():
        if only and name not in only:
            continue
        stats = collections.Counter()
        bad = []
        tmax = 0.0
        for _ in range(n):
            args = [draw(k, rng) for k in kinds]
            t = time.time()
            signal.alarm(30)
            try:
                out = fn(*args)
                signal.alarm(0)
                vals = np.asarray(out if not isinstance(out, (list, tuple)) else
                                  [x for v in out for x in np.atleast_1d(v)], dtype=float)
                if not np.all(np.isfinite(vals)):
                    stats["nonfinite"] += 1
                    bad.append(("nonfinite", args, out))
                else:
                    stats["ok"] += 1
            except (ValueError, TypeError):
                signal.alarm(0)
                stats["valueerror"] += 1
            except Timeout:
                stats["timeout"] += 1
                bad.append(("timeout", args, None))
            except Exception as err:  # noqa: BLE001
                signal.alarm(0)
                stats[type(err).__name__] += 1
                bad.append((type(err).__name__, args, traceback.format_exc(limit=-3)))
            dt = time.time() - t
            if dt > 5:
                stats["slow>5s"] += 1
                bad.append((f"slow {dt:.1f}s", args, None))
            tmax = max(tmax, dt)
        report[name] = (dict(stats), tmax, bad[:4])
        print(f"{name:34s} {dict(stats)} max {tmax:.2f}s", flush=True)
        for kind, args, info in bad[:4]:
            print(f"    {kind}: {args!r:.300}")
            if info and kind not in ("nonfinite",):
                print("       ", str(info)[-400:].replace("\n", "\n        "))
            elif info is not None:
                print(f"        -> {info!r:.200}")


if __name__ == "__main__":
    main()
