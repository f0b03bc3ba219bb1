"""One anatomy for every app (``docs/architecture.md``): every module of
accounts, procurement, artifacts, benchmarks and gates sits in a layer folder
but the few that an app has once; and the API mounts each app's API urlconf
(``<app>/api/urls.py``) once, under ``/api/v1/`` (``config/api_urls.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture.imports import ROOT

APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates")
LAYER_FOLDERS = frozenset(
    {
        "models",
        "services",
        "selectors",
        "api",
        "views",
        "forms",
        "storage",
        "lib",
        "management",
        "migrations",
        "templatetags",
    }
)
APP_MODULES = frozenset(
    {
        "__init__.py",
        "apps.py",
        "admin.py",
        "conf.py",
        "exceptions.py",
        "permissions.py",
        "tasks.py",
        "urls.py",
    }
)
# Each app's API urlconf, as config/api_urls.py includes it.
API_URLCONFS = frozenset(f"{app}.api.urls" for app in APPS)


def modules_outside_layers(app: Path) -> list[str]:
    """The .py files of ``app`` outside its layer folders that are not one of
    the modules an app has once."""
    stray = []
    for path in sorted(app.rglob("*.py")):
        relative = path.relative_to(app)
        if relative.parts[0] in LAYER_FOLDERS:
            continue
        if len(relative.parts) > 1 or relative.name not in APP_MODULES:
            stray.append(relative.as_posix())
    return stray


def included(urlconf: Path) -> list[str]:
    """The dotted modules a urlconf passes to ``include("…")``, in order (also
    ``include(("module", "namespace"))``)."""
    found = []
    for node in ast.walk(ast.parse(urlconf.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        if getattr(node.func, "id", getattr(node.func, "attr", "")) != "include":
            continue
        first = node.args[0]
        if isinstance(first, ast.Tuple) and first.elts:
            first = first.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append(first.value)
    return found


@pytest.mark.parametrize("app", APPS)
def test_the_app_has_no_module_outside_its_layer_folders(app: str) -> None:
    stray = modules_outside_layers(ROOT / app)

    assert not stray, (
        f"Outside {app}'s layer folders ({', '.join(sorted(LAYER_FOLDERS))}) "
        f"only {', '.join(sorted(APP_MODULES))}; also found: {stray}"
    )


@pytest.mark.parametrize("app", APPS)
def test_the_app_api_has_its_urlconf(app: str) -> None:
    assert (ROOT / app / "api" / "urls.py").is_file()


def test_the_layout_check_finds_a_stray_module(tmp_path: Path) -> None:
    for name in ("apps.py", "views/bundles.py", "api_bundles.py", "x/helpers.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")

    assert modules_outside_layers(tmp_path) == ["api_bundles.py", "x/helpers.py"]


def test_the_api_includes_each_app_api_once() -> None:
    found = included(ROOT / "config" / "api_urls.py")

    twice = sorted({m for m in found if found.count(m) > 1})
    assert not twice, f"config/api_urls.py includes more than once: {twice}"
    assert set(found) == API_URLCONFS


def test_no_app_api_is_mounted_outside_the_api() -> None:
    found = included(ROOT / "config" / "urls.py")

    api = [m for m in found if m.split(".")[1:2] == ["api"]]

    assert api == [], f"config/urls.py mounts an app's API outside /api/v1/: {api}"


def test_every_api_urlconf_exists() -> None:
    for urlconf in API_URLCONFS:
        base = ROOT.joinpath(*urlconf.split("."))

        module = base.with_suffix(".py").is_file()
        assert module or (base / "__init__.py").is_file(), urlconf


# The layer a class of each kind belongs in: Django forms in ``forms/``, DRF
# serializers in ``api/``, by the base class's last name.
CLASS_LAYERS = {"Form": "forms", "ModelForm": "forms", "Serializer": "api"}


def classes_out_of_layer(source: str, *, layer: str) -> list[str]:
    """``Name(Base)`` for each class of ``source`` (a module of ``layer``) whose
    base is a form or serializer that belongs in another layer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            name = getattr(base, "attr", getattr(base, "id", ""))
            home = CLASS_LAYERS.get(name)
            if home is not None and home != layer:
                found.append(f"{node.name}({name})")
    return found


@pytest.mark.parametrize("app", APPS)
def test_forms_and_serializers_sit_in_their_layer(app: str) -> None:
    misplaced = []
    for path in sorted((ROOT / app).rglob("*.py")):
        layer = path.relative_to(ROOT / app).parts[0]
        for found in classes_out_of_layer(path.read_text("utf-8"), layer=layer):
            misplaced.append(f"{path.relative_to(ROOT)}: {found}")

    assert not misplaced, f"Forms go in forms/, serializers in api/: {misplaced}"


def test_the_class_check_finds_a_form_in_views() -> None:
    source = (
        "class F(forms.Form): ...\n"
        "class S(serializers.Serializer): ...\n"
        "class V(View): ...\n"
    )

    assert classes_out_of_layer(source, layer="views") == [
        "F(Form)",
        "S(Serializer)",
    ]
    assert classes_out_of_layer(source, layer="api") == ["F(Form)"]
