r"""Full studies run where the bounds are informative, stored with the package.

A full study in the informative regime costs minutes of CPU (Tran & Cutkosky's Algorithm 1:
:math:`\sim10^8` steps per point); notebooks and figures read the stored outcome instead of
re-running it. ``data/informative_runs.json`` holds one compact record per study
(:func:`compact` of ``dpbounds verify THEOREM --vary N --json``), with the command, the exit
status and the CPU seconds measured when it ran. Re-create a record with::

    dpbounds verify tran_cutkosky.alg2 --vary N --json > alg2.json
    python - <<'END'
    import json
    from dpbounds.verify.stored import compact
    rec = compact(json.load(open("alg2.json")), command="...", exit_status=0, cpu_seconds=...)
    print(json.dumps(rec))
    END

Example
-------
>>> from dpbounds.verify.stored import stored_runs
>>> runs = stored_runs()
>>> sorted(runs)[:1]                                                 # doctest: +SKIP
['kamath.bst14']
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["compact", "draw_stored", "stored_runs"]

_FILE = "informative_runs.json"


def stored_runs() -> dict[str, dict[str, Any]]:
    """The stored records, keyed by the study's name (e.g. ``"tran_cutkosky.alg1"``)."""
    text = resources.files("dpbounds.verify").joinpath("data", _FILE).read_text("utf-8")
    return dict(json.loads(text)["runs"])


def compact(doc: dict[str, Any], *, command: str, exit_status: int,
            cpu_seconds: float) -> dict[str, Any]:
    """The part of a study's ``--json`` document a figure or a table needs (gating
    verdicts only; slopes as diagnostics), with how it ran."""
    keep = ("theorem", "vary", "values", "fixed", "utility", "measured", "bound",
            "bound_components", "trivial_bound", "do_nothing", "informative", "ratio_range",
            "slopes", "predicted_exponent", "bound_local_slope", "holds", "params")
    out = {k: doc[k] for k in keep if k in doc}
    reg = doc.get("regime", {})
    out["regime"] = {k: reg[k] for k in ("name", "why", "label", "trials",
                                         "estimated_total_seconds", "informative_points",
                                         "points") if k in reg}
    out["params"] = [{k: p[k] for k in ("E", "T", "eta", "alpha", "gamma", "r", "C",
                                        "sigma", "sigma_1", "sigma_2") if k in p}
                     for p in doc.get("params", [])]
    out["verdicts"] = [{k: v[k] for k in ("name", "holds", "status", "measured", "predicted")}
                       for v in doc.get("verdicts", []) if v.get("gating")]
    out.update(command=command, exit_status=int(exit_status), cpu_seconds=float(cpu_seconds))
    return out


def draw_stored(rec: dict[str, Any], ax: Any, color: str = "C0", label: str = "",
                offset: float = 1.0) -> None:
    """The stored study's utility (mean, 95% CI) and its bound on a log-log axis ``ax``
    (``offset`` multiplies ``N`` so that two studies on one axis do not overlap)."""
    import numpy as np

    x = np.asarray(rec["values"], dtype=float)
    u = rec["utility"]
    m = rec["measured"][u]
    mean = np.array([p["mean"] for p in m])
    # a lower end <= 0 (few trials) is drawn to the bottom of a log axis
    lo = mean - np.maximum([p["ci_low"] for p in m], 1e-12)
    hi = np.array([p["ci_high"] for p in m]) - mean
    trials = rec["regime"].get("trials", "")
    ax.errorbar(x * offset, mean, yerr=[lo, hi], fmt="s", color=color, ms=4, capsize=2,
                label=f"{label}measured where informative ({trials} trials, 95% CI)")
    ax.plot(x, rec["bound"], "-", color=color, lw=2.5, alpha=0.35,
            label=f"{label}bound at the runs' parameters")
