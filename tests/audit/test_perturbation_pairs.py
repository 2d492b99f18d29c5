"""Output and objective perturbation audited where d > 1 and n > 1 (stop 72).

An independent adversary's mutants: output perturbation's noise divided by sqrt(d) (its mu
sqrt(d) times the claim's) and objective perturbation's noise built from zeta / n (the
average-form objective's bound: n times the claim's mu) are the correct code on the d = 1,
n = 1 pairs the audits had, and passed them. ``output_perturbation_d4`` and
``objective_perturbation_n8`` run the same mechanisms where they differ. Oracle: the claim
(an exact Gaussian mechanism for output perturbation, KST's theorem for objective
perturbation) against a certified lower bound; the correct code passes, the mutants are
refuted (negative controls), and on the old pairs they pass bit for bit (why the new pairs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

import dpbounds.algorithms.dp_erm as erm
from dpbounds.audit import audit


@contextlib.contextmanager
def _mutated(function: str, old: str, new: str) -> Iterator[None]:
    """``dp_erm.<function>`` with one line of its source replaced (its code object swapped,
    restored after)."""
    target = getattr(erm, function).__wrapped__
    src = open(erm.__file__, encoding="utf-8").read()
    assert src.count(old) == 1
    ns = dict(vars(erm))
    exec(compile(src.replace(old, new), erm.__file__, "exec"), ns)  # noqa: S102
    code = target.__code__
    target.__code__ = ns[function].__wrapped__.__code__
    try:
        yield
    finally:
        target.__code__ = code


CASES = {
    "output_perturbation": ("theta = theta + stream.normal((f.d,), sigma)",
                            "theta = theta + stream.normal((f.d,), sigma / math.sqrt(f.d))"),
    "objective_perturbation": ("    zeta = f.gradient_bound\n",
                               "    zeta = f.gradient_bound / f.n\n"),
}
NEW_PAIR = {"output_perturbation": "output_perturbation_d4",
            "objective_perturbation": "objective_perturbation_n8"}


@pytest.mark.parametrize("function", sorted(CASES))
def test_the_new_pair_refutes_the_mutant_the_old_pair_passed(function):
    correct = audit(NEW_PAIR[function], quick=True, seed=0)
    assert correct.status == "PASS", str(correct)
    old_correct = audit(function, quick=True, seed=0)
    with _mutated(function, *CASES[function]):
        caught = audit(NEW_PAIR[function], quick=True, seed=0)
        missed = audit(function, quick=True, seed=0)
    assert caught.violation and caught.status == "FAIL", str(caught)
    assert caught.epsilon_lower > 1.25 * caught.claimed_epsilon
    # the old pair: the mutant is the correct code there, bit for bit
    assert missed.epsilon_lower == old_correct.epsilon_lower and missed.status == "PASS"
