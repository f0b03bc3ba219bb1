"""The import rules (the dependency direction), checked on the source of
every module (``tests.architecture.imports``: lazy imports, ``TYPE_CHECKING``
imports and ``importlib.import_module("…")`` included; migrations left out):

- ``gates → benchmarks → artifacts → procurement → accounts``: an app imports
  only itself and the apps to its right. A lower app shows a higher app's facts
  through a Protocol and a registry the higher app fills in its
  ``AppConfig.ready()`` (``procurement.selectors.evidence_sources``,
  ``procurement.selectors.reproduced``);
- ``portal`` and ``config`` sit outside and may import any app; no app imports
  them (the pieces every app shares, pagination and the site's URLs, are
  ``accounts``'), and nothing but ``config`` itself imports ``config`` (the
  entry points, ``manage.py``, WSGI/ASGI and the Celery app, live there);
- nothing in the server imports the ``reprogate`` CLI;
- each app's Django-free library, ``<app>.lib`` (``DJANGO_FREE``), imports only
  the standard library, third-party packages that are not the web stack, and
  each other;
- the CLI imports only those, itself, the standard library and third parties;
- the lab host's agent imports only those, itself, the standard
  library and third parties (Celery and kombu too: it runs a worker), and
  nothing in the server imports it but ``portal.lab_loopback`` (the demo seed
  drives the agent's run path in process, through the runner API's views);
- one library module may import kombu: the embedded broker's transport
  (``benchmarks.lib.broker``), which the server's Celery app and the embedded
  default's lab agent both load;
- no model module imports the Celery app (enqueuing is a service's business).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from tests.architecture.imports import (
    Import,
    imports_in,
    is_module,
    is_stdlib,
    project_imports,
    within,
)

# Rank of each app in the dependency direction; a module may import an app of
# equal or lower rank only.
RANK = {"accounts": 0, "procurement": 1, "artifacts": 2, "benchmarks": 3, "gates": 4}
APPS = frozenset(RANK)
OUTSIDE = frozenset({"portal", "config"})  # may import any app
SERVER = APPS | OUTSIDE
CLI = "reprogate_cli"
AGENT = "reprogate_agent"
AGENT_STACK = frozenset({"celery", "kombu"})
# The libraries outsiders run offline (the CLI, the runner workers): their
# package docstrings say "no Django", and they import none of the server.
DJANGO_FREE = tuple(f"{app}.lib" for app in RANK)
# Importing ``artifacts.lib`` first runs ``artifacts/__init__.py``, and so on.
DJANGO_FREE_PARENTS = frozenset(RANK)
# Third-party packages of the web stack, which the Django-free code never imports.
WEB_STACK = frozenset(
    {
        "celery",
        "dj_database_url",
        "drf_spectacular",
        "drf_spectacular_sidecar",
        "kombu",
        "rest_framework",
        "storages",
        "whitenoise",
    }
)
FIRST_PARTY = SERVER | {CLI, AGENT, "tests"}
# The embedded broker's transport: a kombu transport the agent loads too.
LIBRARY_TRANSPORT = "benchmarks.lib.broker"
# The demo seed's in-process lab: the agent's run path through the API's views.
AGENT_IN_PROCESS = "portal.lab_loopback"

Rule = Callable[[Iterable[Import]], list[Import]]


def app_of(module: str) -> str:
    return module.split(".")[0]


def against_the_direction(imports: Iterable[Import]) -> list[Import]:
    """An app importing an app to its left in gates → benchmarks → artifacts →
    procurement → accounts."""
    return [
        i
        for i in imports
        if app_of(i.module) in APPS
        and i.top in APPS
        and RANK[i.top] > RANK[app_of(i.module)]
    ]


def into_portal_or_config(imports: Iterable[Import]) -> list[Import]:
    """An app importing portal or config."""
    return [i for i in imports if app_of(i.module) in APPS and i.top in OUTSIDE]


def into_config(imports: Iterable[Import]) -> list[Import]:
    """A module outside ``config`` importing it (``config`` is the top: it
    imports the apps, and only the entry points import it)."""
    return [i for i in imports if i.top == "config" and app_of(i.module) != "config"]


def server_into_cli(imports: Iterable[Import]) -> list[Import]:
    """A server module (apps, portal, config) importing the CLI."""
    return [i for i in imports if app_of(i.module) in SERVER and i.top == CLI]


def _offline_safe(i: Import, *, also: tuple[str, ...] = ()) -> bool:
    """Standard library, a third party outside the web stack, or Django-free."""
    if is_stdlib(i.target):
        return True
    if i.top in FIRST_PARTY:
        return within(i.target, (*DJANGO_FREE, *also))
    return i.top not in WEB_STACK and not i.top.startswith("django")


def is_django_free(module: str) -> bool:
    return within(module, DJANGO_FREE) or module in DJANGO_FREE_PARENTS


def django_free_into_server(imports: Iterable[Import]) -> list[Import]:
    """A Django-free library importing Django, the web stack or a server module."""
    return [
        i
        for i in imports
        if is_django_free(i.module)
        and not _offline_safe(i)
        and not (i.module == LIBRARY_TRANSPORT and i.top == "kombu")
    ]


def cli_beyond_libraries(imports: Iterable[Import]) -> list[Import]:
    """The CLI importing anything but the Django-free libraries, itself, the
    standard library and third parties outside the web stack."""
    return [
        i
        for i in imports
        if within(i.module, (CLI,)) and not _offline_safe(i, also=(CLI,))
    ]


def server_into_agent(imports: Iterable[Import]) -> list[Import]:
    """A server module (apps, portal, config) or the CLI importing the agent."""
    return [
        i
        for i in imports
        if app_of(i.module) in SERVER | {CLI}
        and i.top == AGENT
        and i.module != AGENT_IN_PROCESS
    ]


def agent_beyond_libraries(imports: Iterable[Import]) -> list[Import]:
    """The agent importing Django, the web stack (but Celery and kombu), config
    or an app module beyond the Django-free libraries."""
    return [
        i
        for i in imports
        if within(i.module, (AGENT,))
        and not (i.top in AGENT_STACK or _offline_safe(i, also=(AGENT,)))
    ]


def is_model_module(module: str) -> bool:
    return "models" in module.split(".")[1:]


def model_into_celery(imports: Iterable[Import]) -> list[Import]:
    """A model module importing Celery, a tasks module, or anything of config
    (``config/__init__.py`` creates the Celery app, so any config import does)."""
    return [
        i
        for i in imports
        if is_model_module(i.module)
        and (
            i.top in {"celery", "kombu", "config"} or i.target.split(".")[-1] == "tasks"
        )
    ]


RULES: dict[str, Rule] = {
    "direction": against_the_direction,
    "outside": into_portal_or_config,
    "config": into_config,
    "server_cli": server_into_cli,
    "django_free": django_free_into_server,
    "cli": cli_beyond_libraries,
    "server_agent": server_into_agent,
    "agent": agent_beyond_libraries,
    "models": model_into_celery,
}


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return project_imports()


def offenders(rule: Rule, imports: list[Import]) -> str:
    return "\n".join(str(i) for i in rule(imports))


def test_the_checker_sees_the_project(imports: list[Import]) -> None:
    importers = {app_of(i.module) for i in imports}

    assert importers == SERVER | {CLI, AGENT}
    assert any(
        i.target == "gates.lib.engine" for i in imports if i.module.startswith(CLI)
    )


@pytest.mark.parametrize("name", RULES)
def test_no_module_breaks_the_rule(name: str, imports: list[Import]) -> None:
    rule = RULES[name]

    found = offenders(rule, imports)

    assert not found, f"{rule.__doc__}\n{found}"


def test_every_module_the_rules_name_exists() -> None:
    named = [*DJANGO_FREE, *DJANGO_FREE_PARENTS]

    missing = [m for m in named if not is_module(m)]

    assert not missing, f"The rules name modules that do not exist: {missing}"


# --- the checker itself, on synthetic sources -----------------------------------------

LAZY = """
from __future__ import annotations

from typing import TYPE_CHECKING

from accounts.models import Role

if TYPE_CHECKING:
    from gates.models import Evaluation


def late() -> None:
    import benchmarks.selectors
    from artifacts import selectors
    importlib.import_module("gates.services.runs")
"""


def test_the_checker_finds_lazy_type_checking_and_string_imports() -> None:
    found = imports_in(
        LAZY, module="procurement.selectors.x", path="procurement/selectors/x.py"
    )

    wrong = [(i.line, i.target) for i in against_the_direction(found)]

    assert wrong == [
        (9, "gates.models"),
        (13, "benchmarks.selectors"),
        (14, "artifacts.selectors"),
        (15, "gates.services.runs"),
    ]
    assert str(against_the_direction(found)[0]) == (
        "procurement/selectors/x.py:9 imports gates.models"
    )


def test_the_checker_resolves_relative_imports() -> None:
    source = "from ..models import Evaluation\nfrom . import reproduced\n"

    found = imports_in(source, module="gates.selectors.x", path="gates/selectors/x.py")

    assert [i.target for i in found] == ["gates.models", "gates.selectors.reproduced"]


@pytest.mark.parametrize(
    ("name", "module", "source", "caught"),
    [
        ("outside", "accounts.x", "import config.celery", True),
        ("outside", "accounts.x", "from portal import views", True),
        ("outside", "accounts.x", "from accounts.conf import a", False),
        ("config", "portal.x", "from config.celery import app", True),
        ("config", "reprogate_cli.x", "import config.settings", True),
        ("config", "config.urls", "from config.headers import csp_update", False),
        ("server_cli", "config.x", "from reprogate_cli import main", True),
        ("server_cli", "portal.x", "import gates.models", False),
        ("django_free", "artifacts.lib.x", "import django.db", True),
        ("django_free", "gates.lib.engine.x", "import rest_framework", True),
        ("django_free", "artifacts.lib.x", "import artifacts.models", True),
        ("django_free", "benchmarks", "from config import env", True),
        ("django_free", "gates.lib.engine.x", "import numpy, json", False),
        ("django_free", "gates.lib.engine.x", "import benchmarks.lib.parsers", False),
        ("django_free", "benchmarks.lib.broker", "from kombu import a", False),
        ("django_free", "benchmarks.lib.queues", "from kombu import a", True),
        ("django_free", "benchmarks.lib.broker", "import celery", True),
        ("cli", "reprogate_cli.x", "import gates.selectors", True),
        ("cli", "reprogate_cli.x", "import celery", True),
        ("cli", "reprogate_cli.x", "from reprogate_cli import gate", False),
        ("cli", "reprogate_cli.x", "from artifacts.lib import spool", False),
        ("server_agent", "benchmarks.x", "import reprogate_agent.client", True),
        ("server_agent", "reprogate_cli.x", "from reprogate_agent import x", True),
        ("server_agent", "portal.demo", "import reprogate_agent.execute", True),
        ("server_agent", "portal.lab_loopback", "import reprogate_agent.client", False),
        ("agent", "reprogate_agent.x", "import django.conf", True),
        ("agent", "reprogate_agent.x", "from config import celery", True),
        ("agent", "reprogate_agent.x", "from benchmarks.models import Run", True),
        ("agent", "reprogate_agent.x", "import benchmarks.services.runs", True),
        ("agent", "reprogate_agent.x", "import rest_framework", True),
        ("agent", "reprogate_agent.x", "from celery import Celery", False),
        ("agent", "reprogate_agent.x", "from benchmarks.lib.queues import q", False),
        ("agent", "reprogate_agent.x", "from benchmarks.lib.sandbox import a", False),
        ("agent", "reprogate_agent.x", "import urllib3, json", False),
        ("agent", "reprogate_agent.x", "from reprogate_agent import client", False),
        ("models", "benchmarks.models.x", "from config.celery import app", True),
        ("models", "gates.models", "from gates.tasks import t", True),
        ("models", "gates.services.x", "from gates.tasks import t", False),
    ],
)  # fmt: skip
def test_each_rule_catches_its_violation(
    name: str, module: str, source: str, caught: bool
) -> None:
    path = module.replace(".", "/") + ".py"

    found = RULES[name](imports_in(source, module=module, path=path))

    assert bool(found) is caught
