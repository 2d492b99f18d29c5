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


def test_listings_follow_the_ranks_without_a_snapshot_list() -> None:
    """No literal list to edit when a result is added: every registered study and audit is
    listed once, in (rank, name) order; every study verifies a registered bound, and the
    studies are grouped by the problem class in their ids (``CLASSES`` order)."""
    from dpbounds.bounds import registry
    from dpbounds.bounds.problem import CLASSES

    for reg, listed in ((STUDY_REGISTRY, STUDIES), (AUDIT_REGISTRY, AUDITS)):
        names = list(listed)
        assert names == list(reg.entries) and len(set(names)) == len(names)
        assert names == sorted(names, key=lambda n: (reg.rank_of(n), n))
    assert set(STUDIES) <= set(registry.names())
    shipped = [n for n in STUDIES if STUDY_REGISTRY.module_of(n).startswith("dpbounds.")]
    order = [CLASSES.index(n.split(".")[0]) for n in shipped]
    assert order == sorted(order)
    # control: the order check sees a listing out of rank order (the reversed one)
    names = list(STUDIES)
    assert names[::-1] != sorted(names, key=lambda n: (STUDY_REGISTRY.rank_of(n), n))


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
