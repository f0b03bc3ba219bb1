"""Every import of the project's modules, read from their source (never imported):
``import``/``from … import`` anywhere in a module (inside functions and
``TYPE_CHECKING`` blocks too, since ``ast.walk`` sees every node) and the string
calls ``importlib.import_module("…")``, ``import_module("…")`` and
``__import__("…")``. The rules in ``test_import_rules`` are plain functions over
these ``Import`` rows, so a test can feed them a synthetic source string."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The first-party top-level packages the rules look at.
PACKAGES = (
    "accounts",
    "procurement",
    "artifacts",
    "benchmarks",
    "gates",
    "portal",
    "config",
    "reprogate_cli",
    "reprogate_agent",
)
STRING_IMPORTERS = frozenset({"import_module", "__import__"})


@dataclass(frozen=True)
class Import:
    """``module`` (the importer, dotted) at ``path:line`` imports ``target``."""

    module: str
    path: str  # relative to the repository root
    line: int
    target: str  # dotted; the most specific module or package that exists

    @property
    def top(self) -> str:
        return self.target.split(".")[0]

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    """``gates/selectors/board.py`` -> ``gates.selectors.board``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(packages: Iterable[str] = PACKAGES) -> Iterator[Path]:
    """Every .py of the packages, migrations left out (they import what they are
    generated against and are never imported by the server's code)."""
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                yield path


def is_module(dotted: str) -> bool:
    """Is ``dotted`` a module or package of the repository?"""
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module of a ``from … import``, relative levels resolved."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: str, is_package: bool, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _resolve_from(module, is_package, node)
        # ``from artifacts.lib import manifest`` imports artifacts.lib.manifest
        found = [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        found = [f for f in found if is_module(f)]
        return found or [base]
    if isinstance(node, ast.Call) and node.args:
        func, first = node.func, node.args[0]
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        literal = first.value if isinstance(first, ast.Constant) else None
        if name in STRING_IMPORTERS and isinstance(literal, str):
            return [] if literal.startswith(".") else [literal]
    return []


def imports_in(source: str, *, module: str, path: str) -> list[Import]:
    """Every import in ``source``, the text of ``module`` (found at ``path``)."""
    tree = ast.parse(source, filename=path)
    is_package = path.endswith("__init__.py")
    return [
        Import(module, path, getattr(node, "lineno", 0), target)
        for node in ast.walk(tree)
        for target in _targets(module, is_package, node)
    ]


def project_imports(packages: Iterable[str] = PACKAGES) -> list[Import]:
    """Every import of every (non-migration) module of the packages."""
    found = []
    for path in source_files(packages):
        relative = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        found += imports_in(source, module=module_name(path), path=relative)
    return sorted(found, key=lambda i: (i.path, i.line, i.target))


def is_stdlib(target: str) -> bool:
    return target.split(".")[0] in sys.stdlib_module_names


def within(module: str, packages: Iterable[str]) -> bool:
    """Is ``module`` one of ``packages`` or inside one of them?"""
    return any(module == p or module.startswith(f"{p}.") for p in packages)
