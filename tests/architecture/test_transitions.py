"""Status moves as data (``docs``-free, read from the code): every
``*_TRANSITIONS`` table in the apps' models modules is moved through the one
helper, ``accounts.services.transitions.transition``, by a service of its app,
and has a (from, to) matrix test that records the helper's moves
(``transition_moves``); no service reads a table itself, and no code writes a
status or a run's state but the helper."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")
STATUS_FIELDS = ("status", "state")
SUFFIX = "_TRANSITIONS"


@functools.cache
def _modules(folder: Path) -> list[tuple[Path, ast.Module]]:
    """Every module under ``folder`` but migrations, parsed (once per run)."""
    return [
        (path, ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(folder.rglob("*.py"))
        if "migrations" not in path.parts
    ]


def _tables() -> dict[str, str]:
    """Every module-level ``<NAME>_TRANSITIONS`` of a models module: its app."""
    found: dict[str, str] = {}
    for app in APPS:
        for _path, tree in _modules(ROOT / app / "models"):
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else []
                if isinstance(node, ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.endswith(SUFFIX):
                        found[target.id] = app
    return found


TABLES = _tables()


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _calls(node: ast.AST) -> set[str]:
    return {
        n.func.id
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }


def _functions(folder: Path) -> Iterator[tuple[Path, ast.FunctionDef]]:
    for path, tree in _modules(folder):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                yield path, node


def test_the_tables_are_found_in_every_app_that_has_one() -> None:
    assert {"RFP_TRANSITIONS", "RELEASE_TRANSITIONS", "RUN_TRANSITIONS"} <= set(TABLES)
    assert set(TABLES.values()) == {"procurement", "artifacts", "benchmarks", "gates"}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_a_service_moves_the_table_through_the_helper(table: str) -> None:
    movers = [
        f"{path.relative_to(ROOT)}::{function.name}"
        for app in APPS
        for path, function in _functions(ROOT / app / "services")
        if table in _names(function) and "transition" in _calls(function)
    ]

    assert movers, f"no service moves {table} through transition()"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_a_matrix_test_records_the_tables_moves(table: str) -> None:
    matrices = [
        function.name
        for path, function in _functions(ROOT / "tests")
        if function.name.startswith("test_")
        and "transition_moves" in {a.arg for a in function.args.args}
        and table in _names(function)
        and any("parametrize" in ast.unparse(d) for d in function.decorator_list)
    ]

    assert matrices, f"no (from, to) matrix of {table} records transition_moves"


def test_no_service_reads_a_table_but_through_the_helper() -> None:
    """The allowed moves are looked up by ``transition``/``transition_check``;
    a service that indexes a table itself is a second implementation."""
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for app in APPS
        for path, tree in _modules(ROOT / app / "services")
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id.endswith(SUFFIX)
    ]

    assert offenders == []


def _line(node: ast.AST) -> int:
    """A statement's line (typeshed's ``ast.AST`` declares no ``lineno``)."""
    return int(getattr(node, "lineno", 0))


def _is_status(target: ast.expr) -> bool:
    """``<obj>.status`` (or a run's ``.state``) outside ``self`` (plain objects
    keep their own)."""
    return (
        isinstance(target, ast.Attribute)
        and target.attr in STATUS_FIELDS
        and not (isinstance(target.value, ast.Name) and target.value.id == "self")
    )


def _status_writes(tree: ast.AST) -> list[int]:
    """The line of every ``<obj>.status = …``, ``setattr(<obj>, "status", …)``
    and ``Model.objects….update(status=…)`` (and the same for ``state``)."""
    found: list[int] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            items = target.elts if isinstance(target, ast.Tuple) else [target]
            found += [_line(node) for item in items if _is_status(item)]
        if _setattr_of_status(node) or _queryset_update_of_status(node):
            found.append(_line(node))
    return sorted(found)


def _setattr_of_status(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in STATUS_FIELDS
    )


def _queryset_update_of_status(node: ast.AST) -> bool:
    """``Model.objects….update(status=…)`` (or ``state=``): a bulk status write."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "update"
        and any(k.arg in STATUS_FIELDS for k in node.keywords)
    ):
        return False
    receiver = node.func.value
    while isinstance(receiver, ast.Call | ast.Attribute):
        if isinstance(receiver, ast.Attribute) and receiver.attr == "objects":
            return True
        receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
    return False


def test_no_code_writes_a_status_but_the_helper() -> None:
    """Every status change goes through ``transition`` (which sets the field it
    is given), checked against its table, with its one audit row; factories,
    tests and migrations set states directly."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for app in APPS
        for path, tree in _modules(ROOT / app)
        for line in _status_writes(tree)
    ]

    assert offenders == []


def test_the_status_write_check_finds_every_kind_of_write() -> None:
    source = (
        "def bid_withdraw(bid):\n    bid.status = 'withdrawn'\n"
        "def bid_transition(bid, to):\n    old, bid.status = bid.status, to\n"
        "class Commands:\n    def __init__(self):\n        self.status = {}\n"
        "def run_claim(pk):\n    Run.objects.filter(pk=pk).update(state='preparing')\n"
        "def detail(data):\n    data.update(status='ok')\n"
        "def run_stop(run):\n    setattr(run, 'state', 'failed')\n"
    )

    assert _status_writes(ast.parse(source)) == [2, 4, 9, 13]
