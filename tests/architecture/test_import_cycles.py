"""No import cycle between the product's modules, read from their source
(``tests.architecture.imports``: lazy imports inside functions, ``TYPE_CHECKING``
imports and ``import_module("…")`` strings all count, since a lazy import that
closes a loop still hides a cycle; migrations are left out).

The graph: a node is a module of the product (``accounts``, ``procurement``,
``artifacts``, ``benchmarks``, ``gates``, ``portal``, ``config``,
``reprogate_cli``, ``reprogate_agent``; a package is the node of its
``__init__``). An import in module ``m`` of ``a.b.c`` gives the edges:

- ``m → a.b.c``, the module it names (``from a.b import c`` names ``a.b.c``
  when ``c`` is a module, else ``a.b``, whose ``__init__`` holds the name);
- ``m → a`` and ``m → a.b``: Python runs the ``__init__`` of every package above
  the module first, so a cycle through an ``__init__`` that imports its
  submodules is a real one, except
- a package that holds ``m`` itself: Python has started its ``__init__``
  before ``m`` runs, so ``m`` never waits on it by that path (``a.b.c``
  importing ``a.b.d`` runs no ``__init__`` it is not already inside). An import
  that names that package (``from a.b import x``, ``x`` defined in
  ``a/b/__init__``) still counts: ``m`` reads what the ``__init__`` makes.

A strongly connected component of more than one module is a cycle; the test
lists each with the ``file:line`` of every edge inside it. No app module
imports ``config`` (or ``portal``): ``test_import_rules``' ``outside`` rule,
which a test here makes sure covers every app.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

import pytest

from tests.architecture.imports import (
    Import,
    imports_in,
    module_name,
    project_imports,
    source_files,
)
from tests.architecture.test_import_rules import RANK, RULES

Graph = dict[str, dict[str, list[Import]]]  # importer -> imported -> the imports


def _ancestors(module: str) -> Iterator[str]:
    """``a.b.c`` -> ``a``, ``a.b``."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def import_graph(imports: Iterable[Import], modules: Iterable[str]) -> Graph:
    """The edges between ``modules`` that ``imports`` make, each with the
    imports that make it (the rule in the module's docstring)."""
    nodes = frozenset(modules)
    graph: Graph = {m: defaultdict(list) for m in nodes}
    for i in imports:
        if i.module not in nodes:
            continue
        # the most specific node the target names (``import_module("a.b.X")``)
        target = i.target
        while target and target not in nodes:
            target = target.rpartition(".")[0]
        if not target:
            continue
        inside = set(_ancestors(i.module))
        for node in [*_ancestors(target), target]:
            if node != i.module and (node == target or node not in inside):
                graph[i.module][node].append(i)
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components, iterative (no recursion limit),
    each sorted; components of one module left out."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work.append((root, iter(sorted(graph[root]))))
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def cycles(imports: Iterable[Import], modules: Iterable[str]) -> list[str]:
    """One paragraph per cycle: its modules, then every edge inside it."""
    graph = import_graph(imports, modules)
    paragraphs = []
    for component in strongly_connected(graph):
        members = set(component)
        made = [
            (i, target)
            for module in component
            for target, made_by in graph[module].items()
            if target in members
            for i in made_by
        ]
        made.sort(key=lambda edge: (edge[0].path, edge[0].line, edge[1]))
        edges = [
            f"  {i.path}:{i.line} {i.module} -> {target}"
            + ("" if i.target == target else f" (runs its __init__: {i.target})")
            for i, target in made
        ]
        paragraphs.append("\n".join([f"cycle: {', '.join(component)}", *edges]))
    return paragraphs


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return project_imports()


def test_no_import_cycle(imports: list[Import]) -> None:
    modules = {module_name(path) for path in source_files()}

    found = cycles(imports, modules)

    assert not found, "Import cycles between product modules:\n" + "\n\n".join(found)


@pytest.mark.parametrize("app", sorted(RANK))
def test_the_rules_forbid_every_app_to_import_config(app: str) -> None:
    """``test_import_rules`` holds the project to the ``outside`` rule; this
    makes sure the rule is there and covers every app."""
    source = "from config.celery import app\nimport config\nfrom portal import views\n"

    found = RULES["outside"](imports_in(source, module=f"{app}.x", path=f"{app}/x.py"))

    assert [i.line for i in found] == [1, 2, 3]


# --- the checker itself, on synthetic sources -----------------------------------------

SOURCES = {
    "gates/services/runs.py": "from gates.services import reports\n",
    "gates/services/reports.py": (
        "def later() -> None:\n"
        "    if True:\n"
        "        from gates.tasks import report_render_task\n"
    ),
    "gates/tasks.py": 'importlib.import_module("gates.services.runs")\n',
    "gates/services/__init__.py": "",
    "gates/__init__.py": "",
    "gates/selectors.py": "import gates.services.reports\n",
}


def synthetic(sources: dict[str, str]) -> tuple[list[Import], set[str]]:
    found = []
    modules = set()
    for path, source in sources.items():
        module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        modules.add(module)
        found += imports_in(source, module=module, path=path)
    return found, modules


def test_the_checker_finds_a_cycle_through_lazy_and_string_imports() -> None:
    found, modules = synthetic(SOURCES)

    reported = cycles(found, modules)

    assert reported == [
        "cycle: gates.services.reports, gates.services.runs, gates.tasks\n"
        "  gates/services/reports.py:3 gates.services.reports -> gates.tasks\n"
        "  gates/services/runs.py:1 gates.services.runs -> gates.services.reports\n"
        "  gates/tasks.py:1 gates.tasks -> gates.services.runs"
    ]


def test_the_checker_counts_an_init_that_imports_its_submodules() -> None:
    sources = {
        "artifacts/__init__.py": "",
        "artifacts/lib/__init__.py": "",
        "artifacts/lib/archive/__init__.py": (
            "from artifacts.lib.archive.tar import T\n"
            "from artifacts.lib.other import O\n"
        ),
        "artifacts/lib/archive/tar.py": "from artifacts.lib.archive.base import B\n",
        "artifacts/lib/archive/base.py": "",
        "artifacts/lib/other.py": "from artifacts.lib.archive.base import B\n",
    }
    found, modules = synthetic(sources)

    graph = import_graph(found, modules)

    # tar runs inside archive/__init__, which Python has started: no edge back
    assert set(graph["artifacts.lib.archive.tar"]) == {"artifacts.lib.archive.base"}
    # other runs archive/__init__ before base, and that __init__ imports other
    assert set(graph["artifacts.lib.other"]) == {
        "artifacts.lib.archive",
        "artifacts.lib.archive.base",
    }
    assert cycles(found, modules) == [
        "cycle: artifacts.lib.archive, artifacts.lib.other\n"
        "  artifacts/lib/archive/__init__.py:2 artifacts.lib.archive"
        " -> artifacts.lib.other\n"
        "  artifacts/lib/other.py:1 artifacts.lib.other -> artifacts.lib.archive"
        " (runs its __init__: artifacts.lib.archive.base)"
    ]


def test_the_checker_counts_a_name_read_from_the_own_package() -> None:
    sources = {
        "gates/__init__.py": "",
        "gates/lib/__init__.py": "from gates.lib.x import run\nLIMIT = 3\n",
        "gates/lib/x.py": "from gates.lib import LIMIT\n",
    }
    found, modules = synthetic(sources)

    reported = cycles(found, modules)

    assert [c.splitlines()[0] for c in reported] == ["cycle: gates.lib, gates.lib.x"]


def test_the_checker_passes_a_graph_without_cycles() -> None:
    sources = {**SOURCES, "gates/services/reports.py": "import gates.models\n"}
    found, modules = synthetic(sources)

    assert cycles(found, modules) == []
