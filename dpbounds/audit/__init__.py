r"""Empirical privacy auditing: does an algorithm leak more than its ledger claims?

An audit runs an algorithm of :mod:`dpbounds.algorithms` many times on two neighbouring
data sets built to be worst-case for its declared relation and sensitivity
(:mod:`dpbounds.audit.neighbours`), computes a statistic of each released transcript
(:mod:`dpbounds.audit.transcript`), and turns a threshold test on it into a lower bound on
ε with a Clopper–Pearson confidence level (:mod:`dpbounds.audit.statistics`). A lower bound
above the claimed ε refutes the claim; one below it is consistent with it (an audit can
only ever show a violation, not privacy). Every audit also runs the same estimator on
(D, D), a null control that must certify 0, and reads its statistic as a Gaussian
trade-off (a GDP estimate of μ next to the ledger's). :func:`scaled_noise` and the mutant
zoo :data:`MUTANTS` (:mod:`dpbounds.audit.mutation`) make copies with known bugs;
:func:`plan` (:mod:`dpbounds.audit.planner`) says how many runs an audit needs.

Example
-------
>>> from dpbounds.audit import audit, audit_names
>>> "dp_gd_gaussian" in audit_names()
True
>>> r = audit("dp_gd_gaussian", trials=1000, seed=0)
>>> r.violation
False
"""

from typing import TYPE_CHECKING

from dpbounds._lazy import lazy_package

if TYPE_CHECKING:
    from dpbounds.audit.mutation import MUTANTS, mutant_names, scaled_noise
    from dpbounds.audit.planner import plan
    from dpbounds.audit.registry import AUDITS, AuditSpec, audit_names
    from dpbounds.audit.runner import AuditResult, audit

# imported on first use (PEP 562): a plug-in's ``audit_setting`` registers through
# ``dpbounds.audit.settings._common`` without loading the runner, the planner and the
# built-in settings (scipy.stats, every algorithm: 0.5 of the 1.0 CPU-s that
# ``dpbounds --plugin FILE verify --help`` took)
_LAZY = {
    "MUTANTS": "dpbounds.audit.mutation", "mutant_names": "dpbounds.audit.mutation",
    "scaled_noise": "dpbounds.audit.mutation", "plan": "dpbounds.audit.planner",
    "AUDITS": "dpbounds.audit.registry", "AuditSpec": "dpbounds.audit.registry",
    "audit_names": "dpbounds.audit.registry", "AuditResult": "dpbounds.audit.runner",
    "audit": "dpbounds.audit.runner",
}
lazy_package(__name__, {k: (v, k) for k, v in _LAZY.items()})

__all__ = ["AUDITS", "MUTANTS", "AuditResult", "AuditSpec", "audit", "audit_names",
           "mutant_names", "plan", "scaled_noise"]
