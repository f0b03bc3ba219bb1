"""One import path per function: a server module does not hand on names it
imported (no ``__all__`` listing another module's names, no package
``__init__`` that imports its modules' contents). Two exceptions, both the
usual Python idiom: ``models/__init__.py`` (Django finds an app's models in
``<app>.models``) and the package files of the Django-free libraries, whose
``__init__`` is the library's public interface."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.architecture.imports import ROOT, source_files

SERVER = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")
LIBRARIES = (
    "artifacts/lib/",
    "benchmarks/lib/parsers/",
    "benchmarks/lib/environment/",
    "benchmarks/lib/sandbox/",
    "benchmarks/lib/workloads/",
    "benchmarks/lib/lab/scenarios/",
    "gates/lib/engine/",
)


def _exempt(relative: str) -> bool:
    return relative.endswith("models/__init__.py") or relative.startswith(LIBRARIES)


def reexports(source: str, *, package_file: bool) -> list[str]:
    """What ``source`` hands on: names in an ``__all__`` that it imported, and
    (for a package's ``__init__``) any name it imports from the project."""
    tree = ast.parse(source)
    imported: dict[str, int] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] in SERVER
        ):
            for alias in node.names:
                imported[alias.asname or alias.name] = node.lineno
    found = [f"line {line}: imports {name}" for name, line in imported.items()]
    if package_file:
        return found
    listed: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            listed |= {
                e.value
                for e in ast.walk(node.value)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    return [
        f"line {imported[n]}: re-exports {n}" for n in sorted(listed & imported.keys())
    ]


def test_no_server_module_hands_on_what_it_imported() -> None:
    offenders = []
    for path in source_files(SERVER):
        relative = path.relative_to(ROOT).as_posix()
        if _exempt(relative):
            continue
        for problem in reexports(
            path.read_text(), package_file=path.name == "__init__.py"
        ):
            offenders.append(f"{relative} {problem}")

    assert offenders == [], "\n".join(offenders)


def test_the_rule_sees_an_all_that_lists_an_imported_name() -> None:
    source = (
        "from procurement.services.rfp_lifecycle import rfp_publish\n"
        "def rfp_create(): ...\n"
        "__all__ = ['rfp_create', 'rfp_publish']\n"
    )

    assert reexports(source, package_file=False) == ["line 1: re-exports rfp_publish"]
    assert reexports("def f(): ...\n__all__ = ['f']\n", package_file=False) == []


def test_the_rule_sees_a_package_file_that_imports_its_modules() -> None:
    source = "from benchmarks.services.runs import run_claim\n"

    assert reexports(source, package_file=True) == ["line 1: imports run_claim"]
    assert reexports('"""Docstring only."""\n', package_file=True) == []


def test_the_exemptions_are_real_paths() -> None:
    for prefix in LIBRARIES:
        assert (ROOT / prefix / "__init__.py").is_file(), prefix
    assert Path(ROOT / "artifacts/models/__init__.py").is_file()
