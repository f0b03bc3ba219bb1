"""Shared fixtures. Personas follow healthchecks' alice/bob/charlie: ``buyer`` and
``evaluator`` work for ``buyer_org``; ``vendor_a`` and ``vendor_b`` for two competing
vendors; ``labops`` and ``auditor`` for the lab and audit firms the buyer engaged;
``outsider`` buys for another organisation."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from accounts.models import Organisation, Role
from accounts.selectors import clock as installation_clock
from accounts.selectors.users import memberships_cache_end
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory

# the demo with its lab runs, seeded once a session, for the tests that start there
# (with the runner's work folder, which its seed asks for)
from tests.benchmarks.runner.support import runner_work_dir  # noqa: F401
from tests.demo_gates import demo_gates, demo_gates_snapshot  # noqa: F401
from tests.transition_moves import Move, spy_on_transitions

DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_setup", "shared_database", "live_server"}
)


def _uses_database(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return item.get_closest_marker("django_db") is not None or bool(
        fixtures & DATABASE_FIXTURES
    )


CI_PASSES = ("sqlite", "postgresql")


def _in_ci_pass(item: pytest.Item, ci_pass: str) -> bool:
    """Whether ``item`` runs in the CI pass ``ci_pass`` (``.ci/run`` runs one pass
    on SQLite and one on PostgreSQL side by side, one a core).

    The tests that use the database run in both, but for the Chromium ones: the
    browser journeys (``-m "not browser"`` in the PostgreSQL pass) and the tests
    that render signed reports in Chromium (the ``chromium`` fixture). They drive
    the same views and services, whose database behaviour the rest of the pass
    covers (locks, constraints, transactions); WeasyPrint and kaleido give the
    same PDF on either database.

    The tests that use no database (the gate engine, the CLI, parsers, the
    sandbox, ``scripts/run``) would give the same answer in both, so they run
    once: those that start processes of their own (marked ``integration``: the
    README's commands, ``scripts/run``, the embedded broker, the soak) in the
    PostgreSQL pass, the others in the SQLite pass, which keeps the two passes
    about as long as each other."""
    if _uses_database(item):
        return ci_pass == "sqlite" or "chromium" not in getattr(
            item, "fixturenames", ()
        )
    starts_processes = item.get_closest_marker("integration") is not None
    return starts_processes == (ci_pass == "postgresql")


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Browser tests last: their session-wide Chromium keeps an event loop running
    in the main thread until the session ends (see tests/browser/conftest.py).

    With ``REPROGATE_TESTS_CI_PASS=sqlite`` or ``postgresql``, only that CI
    pass's share of the tests runs (``_in_ci_pass``)."""
    ci_pass = os.environ.get("REPROGATE_TESTS_CI_PASS", "")
    if ci_pass:
        if ci_pass not in CI_PASSES:
            raise pytest.UsageError(
                f"REPROGATE_TESTS_CI_PASS={ci_pass!r}: expected one of "
                + ", ".join(CI_PASSES)
            )
        kept = [item for item in items if _in_ci_pass(item, ci_pass)]
        if len(kept) != len(items):
            left = set(kept)
            config.hook.pytest_deselected(
                items=[item for item in items if item not in left]
            )
            items[:] = kept
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(autouse=True, scope="session")
def _charts_chromium_stopped() -> Iterator[None]:
    """The report charts' Chromium is kept by the process that started it: stop
    it while the test run's output is still captured."""
    yield
    charts = sys.modules.get("gates.lib.report_charts")
    if charts is not None:
        charts.charts_stop()


@pytest.fixture(autouse=True)
def _test_settings(settings: Any, tmp_path: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
        "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    # The transparency log's key: one per test, never the repository's var/.
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "log-key" / "log.pem")
    # The report keys likewise, with no time-stamping authority.
    settings.REPROGATE_REPORT_KEYS_DIR = str(tmp_path / "report-keys")
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(
        tmp_path / "report-keys" / "statement.pem"
    )
    settings.REPROGATE_REPORT_SIGNER = ""
    settings.REPROGATE_REPORT_TSA_URL = ""


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    cache.clear()  # the login rate counts per account and client address
    # A test that left a streamed response unread never ended its request: the
    # next test starts outside any request, as a task or a command would.
    memberships_cache_end()
    yield
    cache.clear()


class Clock:
    """Moves ``accounts.selectors.clock`` for a test: ``clock.travel_to(dt)``,
    ``clock.advance(days=3)``."""

    def __init__(self) -> None:
        self.travel_to(timezone.now().replace(microsecond=0))

    def travel_to(self, moment: datetime) -> None:
        installation_clock.travel_to(moment)

    def advance(self, **delta: float) -> datetime:
        moment = installation_clock.now() + timedelta(**delta)
        installation_clock.travel_to(moment)
        return moment

    def now(self) -> datetime:
        return installation_clock.now()


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()
    installation_clock.travel_to(None)


def _member(org: Organisation, role: str, username: str) -> Any:
    user = UserFactory.create(username=username)
    MembershipFactory.create(user=user, organisation=org, role=role)
    return user


@pytest.fixture
def buyer_org(db: None) -> Organisation:
    org = OrganisationFactory.create(slug="northwind-ai", kind=Organisation.Kind.BUYER)
    org.engages.add(
        OrganisationFactory.create(slug="northwind-lab", kind=Organisation.Kind.LAB),
        OrganisationFactory.create(slug="ledger-audit", kind=Organisation.Kind.AUDIT),
    )
    return org


@pytest.fixture
def vendor_a_org(db: None) -> Organisation:
    return OrganisationFactory.create(slug="acme-flash", kind=Organisation.Kind.VENDOR)


@pytest.fixture
def vendor_b_org(db: None) -> Organisation:
    return OrganisationFactory.create(
        slug="bolt-storage", kind=Organisation.Kind.VENDOR
    )


@pytest.fixture
def buyer(buyer_org: Organisation) -> Any:
    return _member(buyer_org, Role.BUYER, "buyer")


@pytest.fixture
def evaluator(buyer_org: Organisation) -> Any:
    return _member(buyer_org, Role.EVALUATOR, "evaluator")


@pytest.fixture
def vendor_a(vendor_a_org: Organisation) -> Any:
    return _member(vendor_a_org, Role.VENDOR, "vendor-a")


@pytest.fixture
def vendor_b(vendor_b_org: Organisation) -> Any:
    return _member(vendor_b_org, Role.VENDOR, "vendor-b")


@pytest.fixture
def labops(buyer_org: Organisation) -> Any:
    return _member(buyer_org.engages.get(kind="lab"), Role.LABOPS, "labops")


@pytest.fixture
def auditor(buyer_org: Organisation) -> Any:
    return _member(buyer_org.engages.get(kind="audit"), Role.AUDITOR, "auditor")


@pytest.fixture
def outsider(db: None) -> Any:
    other = OrganisationFactory.create(slug="globex", kind=Organisation.Kind.BUYER)
    return _member(other, Role.BUYER, "outsider")


@pytest.fixture
def client_for() -> Any:
    """``client_for(user)``: a browser session logged in as ``user``."""

    def make(user: Any) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def transition_moves(monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    """The status moves the transition helper made during the test, in order."""
    return spy_on_transitions(monkeypatch)
