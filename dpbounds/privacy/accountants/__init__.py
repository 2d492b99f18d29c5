r"""Interchangeable privacy accountants.

Each accountant reports its guarantee under its own :class:`~dpbounds.privacy.mechanisms.
Neighbouring` relation, converts every mechanism to it (see :mod:`~dpbounds.privacy.mechanisms`)
and raises :class:`UnsupportedMechanismError` (a ``ValueError``) for what it cannot account.

==========================  =====================================================================
accountant                  mechanisms
==========================  =====================================================================
:class:`RdpAccountant`      Gaussian, Laplace, subsampled Gaussian (Poisson: add/remove;
                            without replacement: replace-one), subsampled Laplace (via pure DP),
                            tree aggregation, zCDP, pure DP. Own code, optimal order.
:class:`ZcdpAccountant`     Gaussian, Laplace and pure DP (:math:`\varepsilon^2/2`), tree
                            aggregation, zCDP. Lee & Kifer's ledger.
:class:`PldAccountant`      Gaussian and tree aggregation (exact, closed form), Laplace,
                            Poisson-subsampled Gaussian (add/remove), pure DP:
                            ``dp_accounting``'s privacy-loss distributions (pessimistic) on a grid
                            chosen from the mechanisms' scales, with an optimistic twin for error
                            bars (:meth:`~PldAccountant.epsilon_interval`).
:class:`PureDpAccountant`   Laplace, subsampled Laplace (Kuru et al. (11)), pure DP: basic
                            composition (Kuru et al. Thm A.2).
:class:`BasicAccountant`    The pure-DP mechanisms and (ε, δ) guarantees stated by a theorem
                            (:class:`~dpbounds.privacy.mechanisms.ApproxDpMechanism`): basic
                            composition of ε and δ.
==========================  =====================================================================

Every accountant composes a :class:`~dpbounds.privacy.mechanisms.ComposedMechanism` part by
part, takes a mechanism's own math from the mechanism (e.g.
:meth:`SubsampledLaplaceMechanism.epsilon_under
<dpbounds.privacy.mechanisms.SubsampledLaplaceMechanism.epsilon_under>`, the amplification)
and may offer a closed-form inverse (:meth:`Accountant.closed_form_noise`), the fast path of
:func:`~dpbounds.privacy.calibrate.calibrate`.

One module per accountant: :mod:`~dpbounds.privacy.accountants.base` (the interface),
:mod:`~dpbounds.privacy.accountants.rdp_accountant`,
:mod:`~dpbounds.privacy.accountants.zcdp_accountant`,
:mod:`~dpbounds.privacy.accountants.pld_accountant`,
:mod:`~dpbounds.privacy.accountants.pure_dp_accountant` (pure DP and basic composition) and
:mod:`~dpbounds.privacy.accountants.registry` (:data:`ACCOUNTANTS`, :func:`make_accountant`).

Examples
--------
>>> from dpbounds.privacy.accountants import RdpAccountant
>>> from dpbounds.privacy.mechanisms import SubsampledGaussianMechanism
>>> acc = RdpAccountant().compose(SubsampledGaussianMechanism(1.1, 0.01), 1000)
>>> round(acc.get_epsilon(1e-5), 3)
1.725
"""

from __future__ import annotations

from dpbounds.privacy.accountants.base import Accountant, UnsupportedMechanismError
from dpbounds.privacy.accountants.pld_accountant import (
    MAX_PLD_COUNT,
    MAX_PLD_STEP_LOSS,
    PldAccountant,
)
from dpbounds.privacy.accountants.pure_dp_accountant import BasicAccountant, PureDpAccountant
from dpbounds.privacy.accountants.rdp_accountant import (
    RdpAccountant,
    laplace_rdp,  # noqa: F401 (public before)
)
from dpbounds.privacy.accountants.registry import ACCOUNTANTS, make_accountant
from dpbounds.privacy.accountants.zcdp_accountant import ZcdpAccountant

__all__ = [
    "ACCOUNTANTS",
    "MAX_PLD_COUNT",
    "MAX_PLD_STEP_LOSS",
    "Accountant",
    "BasicAccountant",
    "PldAccountant",
    "PureDpAccountant",
    "RdpAccountant",
    "UnsupportedMechanismError",
    "ZcdpAccountant",
    "make_accountant",
]
