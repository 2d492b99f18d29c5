"""Self-registering studies and audit settings (:mod:`dpbounds._discovery`)."""

from __future__ import annotations

import pkgutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpbounds.audit.settings as audit_settings
import dpbounds.verify.studies as verify_studies
from dpbounds._discovery import Registry
from dpbounds.audit.registry import AUDITS
from dpbounds.audit.settings._common import AUDIT_REGISTRY, RELEASE_REGISTRY
from dpbounds.verify.studies._common import STUDY_REGISTRY
from dpbounds.verify.theorems import STUDIES

#: The order of ``verify --list`` / ``audit --list`` when both were literal lists (before the
#: split into one module per concept); the ranks must reproduce it.
STUDY_ORDER = ["nonconvex.tree_momentum_nsgd", "nonconvex.sensitivity_reduced_nsgd",
               "nonconvex.normalized_sgd", "nonconvex.clipped_sgd",
               "convex.noisy_projected_sgd", "strongly_convex.nag", "strongly_convex.heavy_ball"]
AUDIT_ORDER = ["dp_gd_laplace", "dp_heavy_ball", "dp_nag", "dp_nag_opt", "dp_masg",
               "dp_masg_opt", "dp_gd_gaussian", "dp_sgd", "dp_nsgd", "dp_agd",
               "noisy_projected_sgd", "output_perturbation", "objective_perturbation",
               "tree_momentum_nsgd", "sensitivity_reduced_nsgd", "tree_momentum_nsgd_T3",
               "tree_momentum_nsgd_T8"]


def test_shipped_order_is_the_old_lists() -> None:
    assert list(STUDIES) == STUDY_ORDER
    assert list(AUDITS) == AUDIT_ORDER


@pytest.mark.parametrize("package,registries", [
    (verify_studies, (STUDY_REGISTRY,)),
    (audit_settings, (AUDIT_REGISTRY, RELEASE_REGISTRY)),  # release audits: same walk
])
def test_every_module_registers_and_nothing_else_does(package, registries) -> None:
    modules = {i.name for i in pkgutil.iter_modules(package.__path__, package.__name__ + ".")
               if not i.name.rpartition(".")[2].startswith("_")}
    owners = {reg.module_of(name) for reg in registries for name in reg.entries}
    assert owners == modules


def test_release_audits_are_discovered_and_kept_out_of_audit_all() -> None:
    from dpbounds.audit.registry import RELEASE_AUDITS

    assert list(RELEASE_AUDITS) == ["dp_gd_laplace_grid"]
    assert RELEASE_REGISTRY.module_of("dp_gd_laplace_grid") == \
        "dpbounds.audit.settings.laplace_grid"
    assert not set(RELEASE_AUDITS) & set(AUDITS)


@given(st.lists(st.tuples(st.integers(-5, 5), st.text("abc", min_size=1, max_size=3)),
                max_size=12))
def test_order_is_rank_then_name_whatever_the_import_order(items) -> None:
    reg: Registry[int] = Registry("thing", "nowhere")
    seen: dict[str, int] = {}
    for k, (rank, name) in enumerate(items):
        if name in seen:
            continue
        seen[name] = rank
        reg.register(name, k, rank=rank, module=f"m_{name}")
    assert list(reg.entries) == sorted(seen, key=lambda n: (seen[n], n))


def test_duplicate_names_both_modules_and_a_reload_replaces() -> None:
    reg: Registry[int] = Registry("verify study", "nowhere")
    reg.register("x", 1, rank=1, module="pkg.first")
    reg.register("x", 2, rank=1, module="pkg.first")  # control: the same module (a reload)
    assert reg.entries == {"x": 2}
    with pytest.raises(ValueError, match=r"verify study 'x' is registered twice: by module "
                                         r"pkg\.first and by module pkg\.second"):
        reg.register("x", 3, rank=1, module="pkg.second")
    assert reg.entries == {"x": 2}
    # the calling module is recorded by default
    reg.register("y", 0, rank=0)
    assert reg.module_of("y") == __name__
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        reg.register("", 0, rank=0)
