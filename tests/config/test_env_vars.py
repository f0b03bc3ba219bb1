"""Every environment variable the server reads is declared once.

The reads are found in the code by its syntax tree, not listed by hand: every call
of a ``config.env`` helper (``env_str("NAME", …)``; ``env_secret`` reads
``NAME_FILE`` too) and every ``os.environ.get("NAME")``, ``os.environ["NAME"]`` and
``os.getenv("NAME")``. Each must be read in ``config/settings.py`` (the apps read
``django.conf.settings``, never the environment) and listed in
``deploy/.env.example``, and the example lists nothing else.

Scanned: the server (``config``, the apps, ``manage.py``) and ``deploy/`` (gunicorn's
own variables, read by ``deploy/gunicorn.conf.py``). Not scanned: ``reprogate_cli``
(the vendor's command, configured by its own variables such as ``REPROGATE_URL``),
``examples`` (harnesses, which read what the runner hands them) and the tests.
"""

from __future__ import annotations

import ast
import os
import re
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import django.conf.global_settings
import pytest

from tests.config.scripts_support import run_in_project

ROOT = Path(__file__).resolve().parents[2]
SERVER = ("config", "accounts", "procurement", "artifacts", "benchmarks", "gates")
SERVER_DIRS = (*SERVER, "portal", "deploy")
SETTINGS = Path("config/settings.py")
ENV_MODULE = Path("config/env.py")
GUNICORN = Path("deploy/gunicorn.conf.py")
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
ENV_HELPERS = frozenset(
    {
        "env_str",
        "env_bool",
        "env_int",
        "env_float",
        "env_choice",
        "env_list",
        "env_secret",
        "env_url",
        "env_origin",
        "_raw",
    }
)
# Read from the environment, but not settings: each with the reason.
NOT_SETTINGS = {
    # benchmarks.lib.environment.sources: the host's PATH, handed to the tools it runs
    "PATH",
}
# A line of the example that lists a variable: NAME=value, or # NAME=value (unset).
LISTED = re.compile(r"^(?:# )?([A-Z][A-Z0-9_]*)=", re.MULTILINE)


@dataclass(frozen=True)
class Read:
    path: Path
    line: int
    name: str | None  # None: a name computed at run time


def _is_os_environ(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _literal(args: list[ast.expr]) -> str | None:
    first = args[0] if args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _reads_in(tree: ast.AST) -> Iterator[tuple[int, str | None]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ENV_HELPERS:
                name = _literal(node.args)
                yield node.lineno, name
                if func.id == "env_secret" and name is not None:
                    yield node.lineno, f"{name}_FILE"
            elif isinstance(func, ast.Attribute) and (
                (func.attr == "get" and _is_os_environ(func.value))
                or (
                    func.attr == "getenv"
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "os"
                )
            ):
                yield node.lineno, _literal(node.args)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _is_os_environ(node.value)
        ):
            yield node.lineno, _literal([node.slice])


def _python_files() -> Iterator[Path]:
    yield Path("manage.py")
    for top in SERVER_DIRS:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" not in relative.parts:
                yield relative


def environment_reads() -> list[Read]:
    reads = []
    for path in _python_files():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), str(path))
        reads += [Read(path, line, name) for line, name in _reads_in(tree)]
    return reads


def listed_in_env_example() -> list[str]:
    return LISTED.findall(ENV_EXAMPLE.read_text(encoding="utf-8"))


def test_the_scan_finds_the_reads_it_is_meant_to_find() -> None:
    found = {(r.path, r.name) for r in environment_reads()}

    assert (SETTINGS, "DJANGO_DEBUG") in found
    assert (SETTINGS, "DJANGO_SECRET_KEY_FILE") in found  # env_secret's NAME_FILE
    assert (SETTINGS, "RUNNER_HEARTBEAT_SECONDS") in found
    assert (GUNICORN, "GUNICORN_BIND") in found
    assert (ENV_MODULE, None) in found  # the helpers read a name given at run time


def test_only_config_env_reads_a_variable_by_a_computed_name() -> None:
    computed = [r for r in environment_reads() if r.name is None]

    assert {r.path for r in computed} == {ENV_MODULE}, computed


def test_every_variable_is_read_in_config_settings() -> None:
    """Or by the helpers' own start-up message (``config.env``) and by gunicorn."""
    reads = [r for r in environment_reads() if r.name not in NOT_SETTINGS]
    in_settings = {r.name for r in reads if r.path == SETTINGS}

    elsewhere = [r for r in reads if r.path not in (SETTINGS, ENV_MODULE, GUNICORN)]
    assert elsewhere == []
    helpers = {r.name for r in reads if r.path == ENV_MODULE and r.name is not None}
    assert helpers <= in_settings


def test_every_variable_read_is_in_the_env_example() -> None:
    read = {r.name for r in environment_reads() if r.name is not None}
    listed = set(listed_in_env_example())

    assert sorted(read - NOT_SETTINGS - listed) == []


def test_the_env_example_lists_only_variables_read_each_once() -> None:
    read = {r.name for r in environment_reads() if r.name is not None}
    listed = listed_in_env_example()

    assert sorted(set(listed) - read) == []
    assert sorted(n for n in set(listed) if listed.count(n) > 1) == []


def _declared_in_settings() -> set[str]:
    tree = ast.parse((ROOT / SETTINGS).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _settings_names_used(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``settings.NAME`` and ``getattr(settings, "NAME", …)``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
            and node.attr.isupper()
        ):
            yield node.lineno, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "settings"
        ):
            name = _literal(node.args[1:])
            if name is not None:
                yield node.lineno, name


def _imports_django_settings(tree: ast.AST) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "django.conf"
        and any(alias.name == "settings" for alias in node.names)
        for node in ast.walk(tree)
    )


@pytest.mark.parametrize("app", [*SERVER[1:], "portal"])
def test_every_setting_an_app_reads_is_declared_in_config_settings(app: str) -> None:
    declared = _declared_in_settings() | set(dir(django.conf.global_settings))
    undeclared = []
    for path in sorted((ROOT / app).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _imports_django_settings(tree):
            undeclared += [
                f"{path.relative_to(ROOT)}:{line} {name}"
                for line, name in _settings_names_used(tree)
                if name not in declared
            ]

    assert undeclared == []


def test_artifacts_reads_settings_only_in_its_conf_module() -> None:
    """Models and migrations name ``settings.AUTH_USER_MODEL`` as a ForeignKey
    target; nothing else under ``artifacts/`` but ``conf.py`` reads a setting."""
    readers = []
    for path in sorted((ROOT / "artifacts").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not _imports_django_settings(tree):
            continue
        names = {name for _, name in _settings_names_used(tree)}
        if path.name != "conf.py" and names - {"AUTH_USER_MODEL"}:
            readers.append(f"{path.relative_to(ROOT)}: {sorted(names)}")

    assert readers == []


def test_every_value_in_the_env_example_is_accepted(tmp_path: Path) -> None:
    """The example is a production environment that starts (``check --deploy``)."""
    text = ENV_EXAMPLE.read_text(encoding="utf-8")
    example = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", text, re.MULTILINE))
    env = {k: v for k, v in os.environ.items() if k not in example}
    env.update(example, REPROGATE_VAR_DIR=str(tmp_path / "var"))
    env["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(45)

    result = run_in_project(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env,
    )

    assert result.returncode == 0, result.stderr
