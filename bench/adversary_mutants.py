"""Adversary mutants for ``dpbounds verify`` and ``dpbounds audit`` (not the named ones).

Each mutant is applied from OUTSIDE the package by monkeypatching (as
:mod:`dpbounds.audit.mutation` and :mod:`dpbounds.verify.mutants` do); the ledger, the claimed
(eps, delta) and the studies' bounds are untouched. Usage::

    PYTHONPATH=$PWD python bench/adversary_mutants.py MUTANT -- verify yang.sgd --vary d --quick
    PYTHONPATH=$PWD python bench/adversary_mutants.py none -- audit dp_sgd      # control

prints one JSON line: mutant, CLI argv, exit status (1 = a gating verdict failed = caught),
CPU seconds of the process (user + sys, children included), and the CLI's last output lines.

Mutants
-------
under15      every Gaussian/Laplace/exponential noise scale x 0.85 (15% too little noise,
             calibration and ledger unchanged: e.g. sigma computed for a larger eps).
correlated   noise drawn once per stream and shape and reused at every later draw of that
             shape (right marginal variance, fully correlated across steps).
shared_trial every trial gets trial 0's noise (the seed ignored for trials k > 0; right
             variance, correlated across trials).
no_clip      per-example clipping skipped (DP-SGD's ``_per_sample_map`` kind 'clip' and
             tree momentum's ``_clip_rows`` return their input).
t_minus_1    the accountant charged for one unit less than run: DP-SGD/NSGD's noise AND
             ledger for T-1 steps (T run); tree momentum's for k-1 nodes per sample.
t_minus_1_sigma  as t_minus_1, but DP-SGD/NSGD's sigma alone is for T-1 steps (the ledger
             still records T steps of that sigma, i.e. it is honest).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

MUTANTS = ("none", "under15", "correlated", "shared_trial", "no_clip", "t_minus_1",
           "t_minus_1_sigma")


@contextlib.contextmanager
def _patch(owner: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _correlated() -> Any:
    from dpbounds.backend import TrialRandom

    inner = TrialRandom._scaled
    cache: dict[tuple[int, tuple[int, ...]], Any] = {}

    def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
        # the first standard draw of this stream and shape, reused for every later draw
        key = (id(self), tuple(base.shape))
        if key not in cache:
            cache[key] = (self, base)  # keep self alive so that id() is not reused
        return inner(self, cache[key][1], scale, ndim_extra)

    steps_inner = TrialRandom.normal_steps

    def normal_steps(self: TrialRandom, steps: int, shape: Any = (), scale: Any = 1.0) -> Any:
        # block draws (DP-SGD): every step of every block gets this stream's first step
        unit = steps_inner(self, 1, shape, 1.0)
        key = (id(self), "steps", tuple(unit.shape))
        if key not in cache:
            cache[key] = (self, unit)
        unit = cache[key][1]
        out = self.xp.broadcast_to(unit, (unit.shape[0], steps, *unit.shape[2:])) * 1.0
        s = np.asarray(scale, dtype=float)
        if s.ndim == 1:  # per-step scales
            s = s.reshape((1, steps) + (1,) * (out.ndim - 2))
        return out * (self.xp.asarray(s) if s.ndim else float(s))

    stack = contextlib.ExitStack()
    stack.enter_context(_patch(TrialRandom, "_scaled", _scaled))
    stack.enter_context(_patch(TrialRandom, "normal_steps", normal_steps))
    return stack


def _shared_trial() -> Any:
    from dpbounds.backend import TrialRandom

    inner = TrialRandom._scaled

    def _scaled(self: TrialRandom, base: Any, scale: Any, ndim_extra: int) -> Any:
        xp = self.xp
        if base.ndim >= 1 and base.shape[0] == self.trials and self.trials > 1:
            base = xp.broadcast_to(base[0:1], base.shape) * 1.0  # trial 0's draw everywhere
        return inner(self, base, scale, ndim_extra)

    return _patch(TrialRandom, "_scaled", _scaled)


def _no_clip() -> Any:
    sgd = importlib.import_module("dpbounds.algorithms.dp_sgd")  # the module, not the function
    tm = importlib.import_module("dpbounds.algorithms.tree_momentum")

    stack = contextlib.ExitStack()
    per_sample = sgd._per_sample_map

    def _per_sample_map(xp: Any, g: Any, kind: str, param: float) -> Any:
        return g if kind == "clip" else per_sample(xp, g, kind, param)

    from dpbounds.objectives._base import Objective

    clipped = Objective.clipped_mean_grad

    def clipped_mean_grad(self: Any, x: Any, idx: Any, clip_norm: float,
                          include_regularizer: bool = False) -> Any:
        return clipped(self, x, idx, 1e300, include_regularizer)  # "clipped" at infinity

    kernels = importlib.import_module("dpbounds.algorithms._step_kernels")
    stack.enter_context(_patch(sgd, "_per_sample_map", _per_sample_map))
    stack.enter_context(_patch(tm, "_clip_rows", lambda xp, g, bound: g))
    stack.enter_context(_patch(Objective, "clipped_mean_grad", clipped_mean_grad))
    # the compiled loops clip inside numba: take the NumPy path, where the patches apply
    stack.enter_context(_patch(kernels, "active", lambda *a, **k: None))
    return stack


def _t_minus_1(ledger_too: bool) -> Any:
    sgd = importlib.import_module("dpbounds.algorithms.dp_sgd")
    tree = importlib.import_module("dpbounds.privacy.tree")

    stack = contextlib.ExitStack()
    calibrate = sgd._calibrate

    def _calibrate(epsilon: float, delta: float, q: float, steps: int, *rest: Any) -> Any:
        return calibrate(epsilon, delta, q, max(1, steps - 1), *rest)

    nodes = tree.max_nodes_per_sample

    def max_nodes_per_sample(*a: Any, **k: Any) -> int:
        return max(1, int(nodes(*a, **k)) - 1)

    noise = sgd.noisy_sgd_noise

    def noisy_sgd_noise(*a: Any, steps: int, **k: Any) -> Any:
        return noise(*a, steps=max(1, steps - 1), **k)  # sigma AND ledger for T-1 steps

    if ledger_too:
        stack.enter_context(_patch(sgd, "noisy_sgd_noise", noisy_sgd_noise))
    else:
        stack.enter_context(_patch(sgd, "_calibrate", _calibrate))
    stack.enter_context(_patch(tree, "max_nodes_per_sample", max_nodes_per_sample))
    return stack


def mutant(name: str) -> Any:
    """The context manager that applies mutant ``name``."""
    if name == "none":
        return contextlib.nullcontext()
    if name == "under15":
        from dpbounds.audit.mutation import scaled_noise
        return scaled_noise(0.85)
    return {"correlated": _correlated, "shared_trial": _shared_trial, "no_clip": _no_clip,
            "t_minus_1": lambda: _t_minus_1(True),
            "t_minus_1_sigma": lambda: _t_minus_1(False)}[name]()


def _failed(text: str) -> list[str]:
    """The verdict rows whose ``holds`` column is not yes/vacuous (verify's table), or the
    audit's refutation lines."""
    out, col = [], None
    for ln in text.splitlines():
        if "holds" in ln and "claim" in ln:
            col, c0, c1, c2 = (ln.index("holds"), ln.index("case"), ln.index("claim"),
                               ln.index("measured"))
            continue
        if col is not None and len(ln) > col and not ln.startswith("-"):
            held = ln[col:col + 8].split()
            if held and held[0] not in ("yes", "vacuous"):
                out.append(f"{ln[c0:c1].strip()} | {ln[c1:c2].strip()} -> {held[0]}")
        if "REFUTED" in ln.upper() or "refutes" in ln:
            out.append(ln.strip()[:160])
    return out


def run_one(name: str, cli: list[str]) -> dict[str, Any]:
    """Run the CLI once under mutant ``name``; exit status, CPU seconds, failed verdicts."""
    import io

    from dpbounds.cli import main as cli_main

    buf = io.StringIO()
    t0 = time.process_time()
    with mutant(name), contextlib.redirect_stdout(buf):
        try:
            rc = cli_main(cli)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    cpu = time.process_time() - t0
    text = buf.getvalue()
    last = [ln.strip() for ln in text.splitlines() if ln.strip()][-4:]
    return {"mutant": name, "argv": cli, "rc": rc, "cpu_s": round(cpu, 2),
            "failed": _failed(text), "last": last}


def _gating(failed: list[str]) -> list[str]:
    """The failed rows that gate (slopes are shape diagnostics; the audit line is kept)."""
    return sorted({f.split(" -> ")[0].split(" over ")[0] + (" (" + f.split(" | ")[1].split(
        " -> ")[0] + ")" if " | " in f else "") for f in failed
                   if "slope" not in f and not f.startswith("-")})


def table(paths: list[str]) -> str:
    """Markdown: mutant x theorem (verify, seeds 0-2) and mutant x audit, from JSON lines."""
    rows = [json.loads(ln) for p in paths for ln in open(p) if ln.strip()]
    out = ["| mutant | study / audit | seed 0 | seed 1 | seed 2 | caught by (gating) | CPU s |",
           "|---|---|---|---|---|---|---|"]
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        argv = r["argv"]
        seed = argv[argv.index("--seed") + 1] if "--seed" in argv else "0"
        key = (r["mutant"], " ".join(argv[:2]))
        c = cells.setdefault(key, {"rc": {}, "why": set(), "cpu": 0.0, "last": ""})
        c["rc"][seed] = r["rc"]
        c["why"].update(_gating(r["failed"]))
        c["cpu"] += r["cpu_s"]
        if argv[0] == "audit":
            c["why"].add(r["last"][-1].split(";")[1].strip() + " -> " + r["last"][-1].split(
                "-> ")[-1] if r["last"] else "")
    for (m, what), c in cells.items():
        marks = [{0: "passes", 1: "CAUGHT"}.get(c["rc"].get(s), "-" if s not in c["rc"]
                 else f"rc {c['rc'][s]}") for s in "012"]
        out.append(f"| {m} | {what} | {' | '.join(marks)} | {'; '.join(sorted(c['why']))} "
                   f"| {c['cpu']:.1f} |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """``MUTANT -- ARGS [-- ARGS ...]``: one JSON line per CLI invocation;
    ``--table FILE.jsonl ...``: the markdown table of such lines."""
    if argv[:1] == ["--table"]:
        print(table(argv[1:]))
        return 0
    if len(argv) < 3 or argv[0] not in MUTANTS or argv[1] != "--":
        raise SystemExit(f"usage: adversary_mutants.py {{{','.join(MUTANTS)}}} -- CLI ARGS "
                         "[-- CLI ARGS ...]")
    runs: list[list[str]] = [[]]
    for a in argv[2:]:
        if a == "--":
            runs.append([])
        else:
            runs[-1].append(a)
    for cli in runs:
        print(json.dumps(run_one(argv[0], cli)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
