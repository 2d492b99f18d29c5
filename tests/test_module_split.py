"""The four modules split by concept (issue 21 item 5) keep their public contract.

``lmi.heavy_ball_lmi``, ``privacy.accountants``, ``bounds.strongly_convex.heavy_ball`` and
``bounds.strongly_convex.noise_allocation`` became packages with one concept per module. The
oracle here is the old modules' ``__all__`` (copied verbatim below, in their order): the
package still exports exactly those names, every name is defined in one of its modules (not
re-built), and the modules import only their siblings, never the package ``__init__`` and
never in a cycle (function-level imports included), so any module can be imported first.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

OLD_ALL = {
    "dpbounds.lmi.heavy_ball_lmi": [
        "DEFAULT_MARGIN", "SOURCE_PROP34", "HeavyBallLMI", "LMICertificate", "NoCertificate",
        "Verification", "assemble_lmi", "heavy_ball_lmi_bound", "heavy_ball_lmi_bound_as_printed",
        "heavy_ball_lmi_certificate_at", "heavy_ball_lmi_rate", "lmi_blocks",
        "naive_heavy_ball_lmi_rate", "verify_certificate"],
    "dpbounds.privacy.accountants": [
        "ACCOUNTANTS", "MAX_PLD_COUNT", "MAX_PLD_STEP_LOSS", "Accountant", "BasicAccountant",
        "PldAccountant", "PureDpAccountant", "RdpAccountant", "UnsupportedMechanismError",
        "ZcdpAccountant", "make_accountant"],
    "dpbounds.bounds.strongly_convex.heavy_ball": [
        "SOURCE_B3_ROOTS", "SOURCE_BOUND_DERIVED", "SOURCE_EQ26_PRINTED", "SOURCE_PROP34",
        "SOURCE_STATIONARY", "SOURCE_THM35", "StationaryError", "classical_heavy_ball_parameters",
        "heavy_ball_bound_valid", "heavy_ball_expected_error", "heavy_ball_iteration_blocks",
        "heavy_ball_iteration_matrix", "heavy_ball_noise_term", "heavy_ball_quadratic_bound",
        "heavy_ball_rate", "heavy_ball_rate_eq26_as_printed", "heavy_ball_stationary_error",
        "heavy_ball_transient_constant", "nesterov_quadratic_rate", "stationary_variance",
        "stationary_variance_symbolic", "stationary_error_theorem", "theorem_3_5",
        "heavy_ball_symbolic"],
    "dpbounds.bounds.strongly_convex.noise_allocation": [
        "SOURCE_EQ30", "SOURCE_PROP42", "SOURCE_REMARK41", "Allocation", "MAX_HORIZON",
        "HorizonChoice", "laplace_scale_eq27_as_printed", "optimal_noise",
        "optimal_noise_closed_form", "remark_4_2_allocation", "select_horizon", "uniform_noise",
        "check_allocation_privacy", "check_max_horizon", "naive_select_horizon",
        "noise_allocation_for", "select_horizon_subsampled", "remark_4_1_theorem"],
}
#: Names the old modules themselves imported from elsewhere and exported (kept as they were).
REEXPORTED = {"SOURCE_PROP34": "dpbounds.lmi.heavy_ball_lmi",
              "MAX_HORIZON": "dpbounds.bounds.strongly_convex.noise_allocation"}


def _submodules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__, package + "."))


def _imports(module: str) -> set[str]:
    """Every module named by an import statement of ``module`` (function-level ones too)."""
    tree = ast.parse(Path(importlib.import_module(module).__file__).read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> successors) as a list of nodes, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


@pytest.mark.parametrize("package", sorted(OLD_ALL))
def test_package_exports_the_old_names_from_its_modules(package):
    pkg = importlib.import_module(package)
    assert hasattr(pkg, "__path__"), f"{package} is not a package"
    assert pkg.__all__ == OLD_ALL[package]
    subs = _submodules(package)
    assert len(subs) >= 2
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        if REEXPORTED.get(name) == package:
            continue
        # defined once, in one module of the package, and the package hands out that object
        homes = [s for s in subs if name in vars(importlib.import_module(s)).get("__all__", ())]
        assert len(homes) == 1, (name, homes)
        assert getattr(importlib.import_module(homes[0]), name) is obj
    # every module's __all__ is re-exported by the package
    for s in subs:
        assert set(importlib.import_module(s).__all__) <= set(pkg.__all__), s


@pytest.mark.parametrize("package", sorted(OLD_ALL))
def test_modules_import_siblings_only_and_without_cycles(package):
    subs = _submodules(package)
    graph = {}
    for s in subs:
        named = _imports(s)
        assert package not in named, f"{s} imports its package's __init__"
        graph[s] = {m for m in named if m in subs}
    assert _cycle(graph) is None, _cycle(graph)


def test_cycle_check_catches_a_cycle():
    """Control: the same check reports a sibling cycle (a -> b -> a) and passes a chain."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def _reexports():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "docs" / "_reexports.py"
    spec = importlib.util.spec_from_file_location("_reexports", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_link_a_reexported_name_to_its_home():
    """The docs hook sends a reference written at the package path to the defining module (the
    only page that documents the object): classes, methods, properties, cached functions, data."""
    home = _reexports().home
    lmi = "dpbounds.lmi.heavy_ball_lmi"
    assert home(f"{lmi}.HeavyBallLMI") == f"{lmi}.solvers.HeavyBallLMI"
    assert home(f"{lmi}.LMICertificate.verified") == f"{lmi}.certificate.LMICertificate.verified"
    assert (home("dpbounds.privacy.accountants.Accountant.closed_form_noise")
            == "dpbounds.privacy.accountants.base.Accountant.closed_form_noise")
    assert (home("dpbounds.bounds.strongly_convex.heavy_ball.theorem_3_5")
            == "dpbounds.bounds.strongly_convex.heavy_ball.theorems.theorem_3_5")
    assert (home("dpbounds.privacy.accountants.ACCOUNTANTS")
            == "dpbounds.privacy.accountants.registry.ACCOUNTANTS")
    # controls: a name already at its home maps to itself; unknown or foreign names to None
    at_home = f"{lmi}.rate_search.heavy_ball_lmi_rate"
    assert home(at_home) == at_home
    assert home(f"{lmi}.no_such_name") is None
    assert home("numpy.linalg.eigvalsh") is None
