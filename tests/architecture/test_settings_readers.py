"""Each app reads ``django.conf.settings`` in one module, its ``conf.py``
(read when used, so tests can change a setting): every other module asks
``conf``. Model modules may name ``settings.AUTH_USER_MODEL``, as Django asks
of a foreign key to the user."""

from __future__ import annotations

import ast

from tests.architecture.imports import ROOT, module_name, source_files
from tests.architecture.test_layout import APPS

ALLOWED_IN_MODELS = frozenset({"AUTH_USER_MODEL"})


def settings_reads(source: str, *, models: bool) -> list[str]:
    """``line: what`` for each import of ``django.conf.settings`` and each
    ``settings.NAME`` read in ``source`` (models: but ``AUTH_USER_MODEL``)."""
    tree = ast.parse(source)
    found = []
    imported = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "django.conf":
            if any(alias.name == "settings" for alias in node.names):
                imported = True
                if not models:
                    found.append(f"{node.lineno}: imports django.conf.settings")
        elif (
            models
            and imported
            and isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
            and node.attr not in ALLOWED_IN_MODELS
        ):
            found.append(f"{node.lineno}: reads settings.{node.attr}")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def test_only_conf_reads_the_settings() -> None:
    readers = []
    for path in source_files(APPS):
        module = module_name(path)
        if module.endswith(".conf") and module.count(".") == 1:
            continue
        models = "models" in module.split(".")[1:2]
        for read in settings_reads(path.read_text(encoding="utf-8"), models=models):
            readers.append(f"{path.relative_to(ROOT)}:{read}")

    assert not readers, "Ask the app's conf.py instead:\n" + "\n".join(readers)


def test_the_check_sees_a_settings_read() -> None:
    source = (
        "from django.conf import settings\n"
        "user = settings.AUTH_USER_MODEL\n"
        "limit = settings.REPROGATE_LIMIT\n"
    )

    assert settings_reads(source, models=False) == ["1: imports django.conf.settings"]
    assert settings_reads(source, models=True) == ["3: reads settings.REPROGATE_LIMIT"]
