"""Privacy accounting: mechanisms, accountants and noise calibration.

* formulas: :mod:`~dpbounds.privacy.laplace` (Kuru et al.), :mod:`~dpbounds.privacy.tree`
  (Tran & Cutkosky), :mod:`~dpbounds.privacy.gaussian`, :mod:`~dpbounds.privacy.zcdp`
  (Lee & Kifer), :mod:`~dpbounds.privacy.rdp` (DP-SGD / DP-NSGD);
* objects: :mod:`~dpbounds.privacy.mechanisms` (frozen mechanism descriptions),
  :mod:`~dpbounds.privacy.accountants` (RDP, zCDP, PLD, pure DP),
  :mod:`~dpbounds.privacy.calibrate` (never-overshooting inversion),
  :mod:`~dpbounds.privacy.ledger` (what an algorithm spent, serialisable),
  :mod:`~dpbounds.privacy.events` (to and from ``dp_accounting``'s ``DpEvent``),
  :mod:`~dpbounds.privacy.run` (a run's record: ledger, target, accountant; every algorithm's
  ``result.privacy``),
  :mod:`~dpbounds.privacy.table` (the ``dpbounds privacy`` table as data).

Example
-------
>>> from dpbounds.privacy import RdpAccountant, SubsampledGaussianMechanism, calibrate
>>> sigma = calibrate(lambda s: SubsampledGaussianMechanism(s, 0.01), 1.0, 1e-5, count=1000)
>>> round(sigma, 3)
1.513
"""

from typing import TYPE_CHECKING

from dpbounds._lazy import lazy_package

# The names below are imported on first use (PEP 562), not with the package: a submodule such
# as ``dpbounds.privacy.limits`` (the command line's early checks) would otherwise pull in the
# accountants, scipy and dp-accounting (0.19 of a 0.35 CPU-s refusal).
if TYPE_CHECKING:
    from dpbounds.privacy.accountants import (
        Accountant,
        BasicAccountant,
        PldAccountant,
        PureDpAccountant,
        RdpAccountant,
        UnsupportedMechanismError,
        ZcdpAccountant,
        make_accountant,
    )
    from dpbounds.privacy.calibrate import (
        calibrate,
        calibrate_result,
        calibrate_to_risk,
        epsilon_for_noise_multiplier,
        epsilon_of,
        noise_multiplier_for_epsilon,
    )
    from dpbounds.privacy.events import (
        dp_accounting_relation,
        from_dp_event,
        ledger_from_dp_event,
        to_dp_event,
    )
    from dpbounds.privacy.gaussian import (
        analytic_gaussian_sigma,
        classic_gaussian_epsilon,
        classic_gaussian_sigma,
        gaussian_delta,
        gaussian_epsilon,
    )
    from dpbounds.privacy.laplace import (
        amplify_without_replacement,
        basic_composition,
        deamplify_without_replacement,
        laplace_epsilon,
        laplace_scale_for_epsilon,
        laplace_scales_for_budgets,
        laplace_variance,
        per_step_epsilon,
        split_budget,
        subsampled_laplace_epsilon,
    )
    from dpbounds.privacy.ledger import PrivacyLedger
    from dpbounds.privacy.mechanisms import (
        ApproxDpMechanism,
        ComposedMechanism,
        DiscreteGaussianMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        Mechanism,
        Neighbouring,
        PureDpMechanism,
        Sampling,
        SubsampledDiscreteGaussianMechanism,
        SubsampledGaussianMechanism,
        SubsampledLaplaceMechanism,
        SubsampledZcdpMechanism,
        TreeAggregationMechanism,
        ZcdpMechanism,
        convert_sensitivity,
        mechanism_from_dict,
    )
    from dpbounds.privacy.rdp import (
        DEFAULT_ORDERS,
        gaussian_rdp,
        poisson_subsampled_gaussian_rdp,
        rdp_to_dp,
        rdp_to_dp_epsilon,
        subsampled_gaussian_rdp,
        without_replacement_gaussian_rdp,
    )
    from dpbounds.privacy.run import RunPrivacy
    from dpbounds.privacy.table import privacy_table
    from dpbounds.privacy.tree import (
        compose,
        dyadic_nodes,
        max_nodes_per_sample,
        max_nodes_per_sample_bound,
        momentum_node_sensitivity,
        nodes_ending_at,
        tree_aggregation_epsilon,
        tree_aggregation_sigma,
        tree_momentum_sigma_closed_form,
    )
    from dpbounds.privacy.zcdp import (
        compose_zcdp,
        dp_to_zcdp_rho,
        gaussian_sigma_for_zcdp,
        gaussian_zcdp_rho,
        pure_dp_to_zcdp_rho,
        zcdp_to_dp_epsilon,
    )

#: public name -> the submodule that defines it
_LAZY: dict[str, str] = {
    **{name: "dpbounds.privacy.accountants" for name in (
        "Accountant", "BasicAccountant", "PldAccountant", "PureDpAccountant", "RdpAccountant",
        "UnsupportedMechanismError", "ZcdpAccountant", "make_accountant",)},
    **{name: "dpbounds.privacy.calibrate" for name in (
        "calibrate", "calibrate_result", "calibrate_to_risk", "epsilon_for_noise_multiplier",
        "epsilon_of", "noise_multiplier_for_epsilon",)},
    **{name: "dpbounds.privacy.events" for name in (
        "dp_accounting_relation", "from_dp_event", "ledger_from_dp_event", "to_dp_event",)},
    **{name: "dpbounds.privacy.gaussian" for name in (
        "analytic_gaussian_sigma", "classic_gaussian_epsilon", "classic_gaussian_sigma",
        "gaussian_delta", "gaussian_epsilon",)},
    **{name: "dpbounds.privacy.laplace" for name in (
        "amplify_without_replacement", "basic_composition", "deamplify_without_replacement",
        "laplace_epsilon", "laplace_scale_for_epsilon", "laplace_scales_for_budgets",
        "laplace_variance", "per_step_epsilon", "split_budget", "subsampled_laplace_epsilon",)},
    **{name: "dpbounds.privacy.ledger" for name in (
        "PrivacyLedger",)},
    **{name: "dpbounds.privacy.mechanisms" for name in (
        "ApproxDpMechanism", "ComposedMechanism", "DiscreteGaussianMechanism",
        "GaussianMechanism", "LaplaceMechanism", "Mechanism", "Neighbouring",
        "PureDpMechanism", "Sampling", "SubsampledDiscreteGaussianMechanism",
        "SubsampledGaussianMechanism", "SubsampledLaplaceMechanism", "SubsampledZcdpMechanism",
        "TreeAggregationMechanism", "ZcdpMechanism", "convert_sensitivity",
        "mechanism_from_dict",)},
    **{name: "dpbounds.privacy.rdp" for name in (
        "DEFAULT_ORDERS", "gaussian_rdp", "poisson_subsampled_gaussian_rdp", "rdp_to_dp",
        "rdp_to_dp_epsilon", "subsampled_gaussian_rdp", "without_replacement_gaussian_rdp",)},
    **{name: "dpbounds.privacy.run" for name in (
        "RunPrivacy",)},
    **{name: "dpbounds.privacy.table" for name in (
        "privacy_table",)},
    **{name: "dpbounds.privacy.tree" for name in (
        "compose", "dyadic_nodes", "max_nodes_per_sample", "max_nodes_per_sample_bound",
        "momentum_node_sensitivity", "nodes_ending_at", "tree_aggregation_epsilon",
        "tree_aggregation_sigma", "tree_momentum_sigma_closed_form",)},
    **{name: "dpbounds.privacy.zcdp" for name in (
        "compose_zcdp", "dp_to_zcdp_rho", "gaussian_sigma_for_zcdp", "gaussian_zcdp_rho",
        "pure_dp_to_zcdp_rho", "zcdp_to_dp_epsilon",)},
}


lazy_package(__name__, {k: (v, k) for k, v in _LAZY.items()}, functions=("calibrate",))

__all__ = [
    "DEFAULT_ORDERS",
    "Accountant",
    "ApproxDpMechanism",
    "BasicAccountant",
    "ComposedMechanism",
    "DiscreteGaussianMechanism",
    "RunPrivacy",
    "mechanism_from_dict",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "Neighbouring",
    "PldAccountant",
    "PrivacyLedger",
    "PureDpAccountant",
    "PureDpMechanism",
    "RdpAccountant",
    "Sampling",
    "SubsampledDiscreteGaussianMechanism",
    "SubsampledGaussianMechanism",
    "SubsampledLaplaceMechanism",
    "SubsampledZcdpMechanism",
    "TreeAggregationMechanism",
    "UnsupportedMechanismError",
    "ZcdpAccountant",
    "ZcdpMechanism",
    "calibrate",
    "calibrate_result",
    "calibrate_to_risk",
    "convert_sensitivity",
    "epsilon_of",
    "make_accountant",
    "privacy_table",
    "amplify_without_replacement",
    "analytic_gaussian_sigma",
    "basic_composition",
    "classic_gaussian_epsilon",
    "classic_gaussian_sigma",
    "compose",
    "compose_zcdp",
    "deamplify_without_replacement",
    "dp_accounting_relation",
    "dp_to_zcdp_rho",
    "dyadic_nodes",
    "epsilon_for_noise_multiplier",
    "from_dp_event",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_rdp",
    "gaussian_sigma_for_zcdp",
    "gaussian_zcdp_rho",
    "laplace_epsilon",
    "laplace_scale_for_epsilon",
    "laplace_scales_for_budgets",
    "laplace_variance",
    "ledger_from_dp_event",
    "max_nodes_per_sample",
    "max_nodes_per_sample_bound",
    "momentum_node_sensitivity",
    "nodes_ending_at",
    "noise_multiplier_for_epsilon",
    "per_step_epsilon",
    "poisson_subsampled_gaussian_rdp",
    "pure_dp_to_zcdp_rho",
    "rdp_to_dp",
    "rdp_to_dp_epsilon",
    "split_budget",
    "subsampled_gaussian_rdp",
    "subsampled_laplace_epsilon",
    "tree_aggregation_epsilon",
    "tree_aggregation_sigma",
    "tree_momentum_sigma_closed_form",
    "to_dp_event",
    "without_replacement_gaussian_rdp",
    "zcdp_to_dp_epsilon",
]
