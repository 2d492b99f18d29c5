"""The allowed import order of dpbounds' subpackages, written down once.

``LAYERS`` lists the top-level modules and subpackages of :mod:`dpbounds` from the bottom
(imported by everything, importing nothing of dpbounds) to the top (the command line). A module
may import from its own layer's entry or from a lower layer, never from a higher one; within a
layer, the entries are peers and may not import one another. ``tests/test_import_graph.py``
parses every module with :mod:`ast` (module-level and function-level imports, relative ones
too) and checks this order plus the absence of import cycles between modules.

Why this order: formulas below objects (the privacy formulas never reach for an accountant),
closed-form bounds below the LMI certificates that refine them, bounds and privacy below the
algorithms that run them, and everything below the studies, audits and the CLI that drive them.

>>> layer_of("dpbounds.privacy.rdp") < layer_of("dpbounds.algorithms.momentum")
True
>>> upward_imports({"dpbounds.bounds.a": {"dpbounds.lmi.b"}, "dpbounds.lmi.b": set()})
[('dpbounds.bounds.a', 'dpbounds.lmi.b')]
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

#: Layers from the bottom up; each layer is a tuple of peers (top-level names under dpbounds).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_suggest", "_dp_event_form", "_lazy", "_numfmt", "_advisory"),  # standard library only:
    # _validation, the
    # privacy events, the lazy packages and the CLI's input errors use them
    ("_layers", "_discovery", "_validation", "notation", "provenance", "_progress", "_normals",
     "_seeds", "_patching", "_laplace", "_event_spec"),
    ("data", "backend", "intervals", "schedules", "sweep"),
    ("settings",),
    ("objectives", "privacy"),
    ("bounds",),
    ("lmi",),
    ("pep",),
    ("algorithms",),
    ("tuning", "audit"),
    ("verify",),
    ("extend",),
    ("cli",),
    ("__main__",),
)

_PACKAGE = "dpbounds"


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int:
    """The layer index (0 = bottom) of a dotted module name under ``dpbounds``.

    The package ``dpbounds`` itself is layer 0 (it only holds the version).

    Raises
    ------
    ValueError
        If ``module`` is not under ``dpbounds`` or its subpackage is not in :data:`LAYERS`.
    """
    if module == _PACKAGE:
        return 0
    top = _top(module)
    if not module.startswith(_PACKAGE + "."):
        raise ValueError(f"module must be under {_PACKAGE!r}, got {module!r}")
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    raise ValueError(f"{top!r} (from module {module!r}) is not in dpbounds._layers.LAYERS; "
                     "add it to the layer it belongs to")


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of ``name`` that is a module of the graph (None: outside it)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def import_graph(root: str | Path) -> dict[str, set[str]]:
    """Module -> modules it imports, for every ``.py`` file of the package at ``root``.

    Every ``import`` statement counts, at module level or inside a function (a lazy import is
    still a dependency), except under ``if TYPE_CHECKING:`` (annotations only, never run).
    ``from a import b`` points to ``a.b`` when that is a module, to ``a`` otherwise; relative
    imports are resolved against the importing module. Importing a submodule is not counted as
    importing its parent packages' ``__init__`` (that would make every package that
    re-exports its submodules a cycle).
    """
    root = Path(root)
    files = sorted(root.rglob("*.py"))
    names = {_module_name(f, root): f for f in files}
    modules = set(names)
    graph: dict[str, set[str]] = {}
    for mod, path in names.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                dep = _resolve(t, modules)
                if dep is not None and dep != mod:
                    deps.add(dep)
        graph[mod] = deps
    return graph


def upward_imports(graph: Mapping[str, Iterable[str]],
                   layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[tuple[str, str]]:
    """The edges ``(importer, imported)`` that climb: from a lower layer to a higher one, or
    between two different peers of one layer."""
    def where(m: str) -> tuple[int, str]:
        if m == _PACKAGE:
            return 0, ""
        top = _top(m)
        for i, layer in enumerate(layers):
            if top in layer:
                return i, top
        raise ValueError(f"{top!r} (from module {m!r}) is not in the layers; add it to one")

    bad = []
    for src, dsts in graph.items():
        ls, ts = where(src)
        for dst in dsts:
            ld, td = where(dst)
            if ld > ls or (ld == ls and td != ts and ts and td):
                bad.append((src, dst))
    return sorted(bad)


def import_cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan's
    algorithm, iterative), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = set(graph) | {d for ds in graph.values() for d in ds}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)
