r"""The :math:`(L_0,L_1)`-smooth setting of normalized and clipped DP-SGD, and Lemma 3.1's noise.

Shared by :mod:`~dpbounds.bounds.nonconvex.normalized_sgd` and
:mod:`~dpbounds.bounds.nonconvex.clipped_sgd` (Yang et al., arXiv 2206.13033).

The seed lost every formula. **Only the headline rate is the paper's (abstract, VERBATIM):**

.. math::
   \min_t\mathbb E\lVert\nabla f(x_t)\rVert=O\big((d\log(1/\delta))^{1/4}/\sqrt{N\epsilon}\big).

Every bound, constant, learning rate and condition of these modules is **DERIVED by dpbounds**
(theory sheet ``yang_et_al.md`` §§5-8) for the noise model :math:`\tau_1=0`
(:math:`\lVert\nabla f(x;z)-\nabla f(x)\rVert\le\tau_0` a.s.); the :math:`\tau_1>0` case is not
derived here.

* the setting: :math:`(L_0,L_1)`-smoothness in the descent form of Lemma A.1 (RECONSTRUCTED),
  noise :math:`\sigma` on the batch sum, :math:`V=1+\sigma^2d/B^2`;
* :data:`lemma31_sigma` — Lemma 3.1's :math:`\sigma=c_2B\sqrt{T\log(1/\delta)}/(N\epsilon)`
  (RECONSTRUCTED); with it :math:`V/T\to\nu^2=c_2^2d\log(1/\delta)/(N\epsilon)^2` as
  :math:`T\to\infty` (:data:`nu_squared`). ``c2`` is Lemma 3.1's existential constant;
  :func:`lemma31_constant` fits it for a given accountant.

Example
-------
>>> from dpbounds.bounds.nonconvex.generalized_smoothness import lemma31_sigma
>>> print(lemma31_sigma.provenance)
RECONSTRUCTED
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp

from dpbounds._validation import check_choice, check_int, check_open_interval, check_positive
from dpbounds.bounds.theorem import Assumption, Lemma, sym
from dpbounds.provenance import YANG, Provenance, Source

__all__ = ["V", "lemma31_sigma", "nu", "problem_params"]

d, N, eps, delta = sym("d"), sym("N"), sym("eps"), sym("delta")
L0, L1, D_f, tau0 = sym("L0"), sym("L1"), sym("D_f"), sym("tau0")
B, T, sigma, c2 = sym("B"), sym("T"), sym("sigma"), sym("c2")

DERIVED_NOTE = "DERIVED by dpbounds (theory sheet yang_et_al.md), not the paper's"
SETTING = Assumption(
    "f is (L0, L1)-smooth in the descent form of Lemma A.1; D_f = f(x_0) - inf f; "
    "E[grad f(x;z)] = grad f(x) and ||grad f(x;z) - grad f(x)|| <= tau0 a.s. (tau1 = 0); "
    "batches of size B without replacement; Gaussian noise sigma on the batch sum")
DELTA = Assumption("0 < delta < 1", delta < 1)

#: second-moment factor of the noisy batch direction: E||g^||^2 <= V (per unit sensitivity)
V = 1 + sigma**2 * d / B**2

lemma31_sigma = Lemma(
    name="yang.lemma31",
    quantity=r"\sigma\ \text{(noise std on the batch sum, per unit sensitivity bound)}",
    expr=c2 * B * sp.sqrt(T * sp.log(1 / delta)) / (N * eps),
    sources=(Source(YANG, "Lemma 3.1", Provenance.RECONSTRUCTED,
                    "same expression as Abadi et al. 2016 Thm 1; c1, c2 existential absolute "
                    "constants (fit c2 with lemma31_constant for a given accountant)"),),
    assumptions=(DELTA,),
)

#: lim_{T->oo} V/T when sigma follows Lemma 3.1: V/T = 1/T + nu^2.
nu_squared = c2**2 * d * sp.log(1 / delta) / (N * eps) ** 2
nu = sp.sqrt(nu_squared)

#: the paper's headline rate (the only part of the bounds that is the paper's own)
HEADLINE = Source(YANG, "abstract", Provenance.VERBATIM,
                  "min_t E||grad f|| = O((d log(1/delta))^(1/4)/sqrt(N eps)) (exponents only)")




def lemma31_constant(
    epsilon: float,
    delta: float,
    sampling_rate: float = 0.01,
    steps: int = 10_000,
    sampling: str = "without_replacement",
) -> float:
    r"""Fit Lemma 3.1's constant :math:`c_2` for one accountant and configuration.

    :math:`c_2=\sigma\,\epsilon/(q\sqrt{T\log(1/\delta)})` with :math:`\sigma` the noise std on the
    batch sum of normalised (norm < 1) or clipped-to-1 per-sample vectors:
    :func:`~dpbounds.privacy.calibrate.noise_multiplier_for_epsilon` times the sum's sensitivity
    (2 for sampling without replacement, replace-one; 1 for Poisson, add/remove). The value is only
    meaningful "for that accountant" (the paper's :math:`c_2` is existential).
    """
    from dpbounds.privacy.calibrate import noise_multiplier_for_epsilon

    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    q = check_open_interval("sampling_rate", sampling_rate, 0.0, 1.0)
    steps = check_int("steps", steps, minimum=1)
    sampling = check_choice("sampling", sampling, ("without_replacement", "poisson"))
    z = noise_multiplier_for_epsilon(epsilon, delta, q, steps, sampling=sampling)
    sens = 2.0 if sampling == "without_replacement" else 1.0
    c2 = z * sens * epsilon / q / math.sqrt(steps * math.log(1.0 / delta))
    if not math.isfinite(c2):
        raise ValueError(f"sampling_rate = {q!r} is too small: the constant overflows")
    return c2


@functools.cache
def _fitted_c2(eps: float, delta: float) -> float:
    """Lemma 3.1 constant fitted with the without-replacement RDP accountant (replace-one).

    Fitted at q = 0.01, T = 10^4 (100 epochs); cached per (eps, delta), without a bound: a
    crossover scan along eps evaluates 400 values for every pair of bounds it compares, and
    a cache of 64 recomputed all of them for each pair (0.05-1.6 CPU-s a fit; ``compare
    --crossover-variable eps`` ran for more than 5 minutes). A pair of the shipped
    table (:func:`_c2_table`, generated by this very fit) is read from it instead: the same
    float, without the calibration's 0.1-0.3 s. The pair is matched to 12 significant digits
    (:func:`_table_key`): the notebook's axis comes from ``np.geomspace``, whose last bits
    differ between hosts (NumPy's AVX2 and AVX-512 ``exp``/``log``), and c2 at an eps that
    close differs by ~1e-12 relative, far inside the calibration's own ``rtol`` of 1e-6.
    """
    stored = _c2_table().get(_table_key(eps, delta))
    if stored is not None:
        return stored
    return lemma31_constant(eps, delta, sampling_rate=0.01, steps=10_000)


#: The shipped fits of :func:`_fitted_c2`, next to this module (generated: ``python -m
#: dpbounds.bounds.nonconvex.generalized_smoothness --write``).
_C2_TABLE = Path(__file__).with_name("c2_fitted.json")


def _c2_table_pairs() -> list[tuple[float, float]]:
    """The (eps, delta) pairs the table holds: the eps axis of the bounds explorer
    (``notebooks/02_bounds_explorer.ipynb``: 40 points from 0.01 to 10, geometric) and its
    default eps = 1, at delta = 1e-5 (:data:`~dpbounds.bounds.problem.DEFAULT_PROBLEM`'s).
    A first draw there needs all of them: 40 calibrations, ~6 CPU-s, before the table."""
    from dpbounds.bounds.problem import DEFAULT_PROBLEM

    delta = float(DEFAULT_PROBLEM["delta"])
    hi = min(10.0, 0.99 * math.log(1 / delta))  # the notebook's eps range (grid_for)
    eps_values = dict.fromkeys([*np.geomspace(1e-2, hi, 40).tolist(), 1.0])
    return [(float(e), delta) for e in eps_values]


def _table_key(eps: float, delta: float) -> tuple[float, float]:
    """(eps, delta) rounded to 12 significant digits: the table's key (see :func:`_fitted_c2`)."""
    return float(f"{eps:.11e}"), float(f"{delta:.11e}")


@functools.cache
def _c2_table() -> dict[tuple[float, float], float]:
    """(eps, delta) -> c2 as shipped (floats round-trip JSON exactly), keyed by
    :func:`_table_key`; empty if the file is missing. ``tests/bounds/nonconvex/test_c2_table.py``
    refits every entry and requires the fit's value to 1e-12 relative (the bits themselves
    differ between hosts: the fit's transcendentals are NumPy's SIMD ones, 2-8e-16 apart on
    AVX2 and AVX-512 hosts), so the table cannot drift from :func:`lemma31_constant`."""
    try:
        rows = json.loads(_C2_TABLE.read_text("utf-8"))["fits"]
    except FileNotFoundError:
        return {}
    return {_table_key(float(e), float(dl)): float(c) for e, dl, c in rows}


def _write_c2_table() -> None:
    """Fit every pair of :func:`_c2_table_pairs` afresh and write the table."""
    fits = [[e, dl, lemma31_constant(e, dl, sampling_rate=0.01, steps=10_000)]
            for e, dl in _c2_table_pairs()]
    doc = {"about": "Yang et al. Lemma 3.1's c2 fitted by the without-replacement RDP "
                    "accountant at q = 0.01, T = 10^4 (_fitted_c2); rows [eps, delta, c2]. "
                    "Generated by python -m dpbounds.bounds.nonconvex.generalized_smoothness "
                    "--write; checked by tests/bounds/nonconvex/test_c2_table.py.",
           "fits": fits}
    rows = ",\n".join("  " + json.dumps(row) for row in fits)  # one fit per line
    _C2_TABLE.write_text(f'{{"about": {json.dumps(doc["about"])},\n "fits": [\n{rows}\n]}}\n',
                         encoding="utf-8")
    _c2_table.cache_clear()
    _fitted_c2.cache_clear()


def problem_params(p: Mapping[str, float]) -> dict[str, float]:
    r"""The shared problem in this setting's symbols.

    Tran & Cutkosky's setting maps to it: :math:`\lVert\nabla f(x;z)\rVert\le G` gives
    :math:`\tau_0=2G`; :math:`L_0=L`, :math:`L_1=0`, :math:`D_f=R` unless given; ``c2`` is
    fitted by the RDP accountant unless given.
    """
    out = {"d": p["d"], "N": p["N"], "eps": p["eps"], "delta": p["delta"],
           "L0": p.get("L0", p["L"]), "L1": p.get("L1", 0.0), "D_f": p.get("D_f", p["R"]),
           "tau0": p.get("tau0", 2.0 * p["G"])}
    out["c2"] = p["c2"] if "c2" in p else _fitted_c2_array(p["eps"], p["delta"])
    return out


def _fitted_c2_array(eps: Any, delta: Any) -> Any:
    """:func:`_fitted_c2` at every (eps, delta) of broadcast arrays (a float for scalars).

    Each distinct pair costs one RDP calibration (about 0.5 s), so a sweep over eps costs
    that per grid point; the fit is not interpolated (an interpolated constant could fall
    below the fitted one).
    """
    e, dl = np.broadcast_arrays(np.asarray(eps, dtype=float), np.asarray(delta, dtype=float))
    if e.ndim == 0:
        return _fitted_c2(float(e), float(dl))
    pairs = list(zip(e.ravel().tolist(), dl.ravel().tolist()))
    values = {pair: _fitted_c2(*pair) for pair in dict.fromkeys(pairs)}
    return np.array([values[pair] for pair in pairs]).reshape(e.shape)


#: theorem symbol -> the shared problem quantity it comes from (for messages in words)
PROBLEM_NAMES = {"L0": "L", "D_f": "R"}


if __name__ == "__main__":  # python -m dpbounds.bounds.nonconvex.generalized_smoothness --write
    import sys

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m dpbounds.bounds.nonconvex.generalized_smoothness "
                         "--write")
    # the imported module's functions (this file also runs as ``__main__``: a second copy)
    from dpbounds.bounds.nonconvex import generalized_smoothness as _gs

    _gs._write_c2_table()
    print(f"wrote {len(_gs._c2_table())} fits to {_gs._C2_TABLE}")
