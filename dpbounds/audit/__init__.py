r"""Empirical privacy auditing: does an algorithm leak more than its ledger claims?

An audit runs an algorithm of :mod:`dpbounds.algorithms` many times on two neighbouring
data sets built to be worst-case for its declared relation and sensitivity
(:mod:`dpbounds.audit.neighbours`), computes a statistic of each released transcript
(:mod:`dpbounds.audit.transcript`), and turns a threshold test on it into a lower bound on
ε with a Clopper–Pearson confidence level (:mod:`dpbounds.audit.statistics`). A lower bound
above the claimed ε refutes the claim; one below it is consistent with it (an audit can
only ever show a violation, not privacy). :func:`scaled_noise` makes under-noised copies
of the algorithms for mutation testing.

Example
-------
>>> from dpbounds.audit import audit, audit_names
>>> "dp_gd_gaussian" in audit_names()
True
>>> r = audit("dp_gd_gaussian", trials=1000, seed=0)
>>> r.violation
False
"""

from dpbounds.audit.mutation import scaled_noise
from dpbounds.audit.registry import AUDITS, AuditSpec, audit_names
from dpbounds.audit.runner import AuditResult, audit

__all__ = ["AUDITS", "AuditResult", "AuditSpec", "audit", "audit_names", "scaled_noise"]
