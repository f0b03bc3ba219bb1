"""Schemathesis over the whole OpenAPI document, in process (the WSGI app), as a
buyer and as a vendor: every answer is no server error, has a documented status,
and matches the schema declared for it.

Requests are valid ones and ones the schema says are wrong (schemathesis'
positive and negative modes), and the schema and the server must agree on which
is which: a request the schema calls wrong is refused (``negative_data_rejection``),
one it calls valid is not refused with a 400 (``positive_data_acceptance``) unless
the refusal hinges on the world's data or state (``REFUSED_BY_STATE``).

Bounded and seeded: ``derandomize`` (the same cases every run), ``MAX_EXAMPLES``
per operation and role, no shrinking (a failure is recorded, not minimised), no
example database. Unsafe methods run
too; they act on the test's own world (its path parameters are the world's
objects half the time, generated ones else). It runs in both of CI's passes, on
SQLite and on PostgreSQL: the same requests meet the other database's
constraints, locks and error paths, which a 500 on one of them would show."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis import GenerationMode, checks
from schemathesis.core.result import Ok
from schemathesis.generation.case import Case
from schemathesis.openapi.checks import RejectedPositiveData

from artifacts.models import Deposit
from tests.api.conftest import World

pytestmark = pytest.mark.django_db

# CI's bound (about a minute on 2 cores); REPROGATE_OPENAPI_EXAMPLES=50 digs deeper.
MAX_EXAMPLES = int(os.environ.get("REPROGATE_OPENAPI_EXAMPLES", "8"))
# valid requests, and requests the schema says are wrong (the same checks)
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.negative_data_rejection,
    checks.positive_data_acceptance,
]


# Valid requests that the world's data or state refuses, or content no schema can
# state (the key inside a key line, the order of two deadlines): (operation, the
# answer's code, the one field its problems may name, or None for any). Any other
# 400 to a request the schema calls valid is a disagreement to fix.
REFUSED_BY_STATE: set[tuple[str, str, str | None]] = {
    ("POST /api/v1/auth/token/", "invalid_credentials", None),  # no such password
    ("GET /api/v1/log/proof/consistency", "out_of_range", None),  # beyond the log
    ("GET /api/v1/log/proof/inclusion", "out_of_range", None),
    (
        "POST /api/v1/escrow/deposits/{deposit_id}/retention/",
        "retention_not_extended",
        None,
    ),
    ("POST /api/v1/rfps/", "invalid", "template"),  # no such template
    ("POST /api/v1/rfps/", "invalid", "reference"),  # one already has it
    ("POST /api/v1/rfps/", "deadline_order", None),
    ("PATCH /api/v1/rfps/{rfp_id}/", "deadline_order", None),
    ("POST /api/v1/rfps/{rfp_id}/addenda/", "invalid", ""),  # only when published
    # a requirements document's range order (low <= high), a workload id or metric
    # given twice, an SDK name's form: no OpenAPI 3.0 schema states them
    ("PUT /api/v1/rfps/{rfp_id}/requirements/", "invalid_requirements", None),
    ("POST /api/v1/rfps/{rfp_id}/addenda/", "invalid_requirements", None),
    ("POST /api/v1/rfps/{rfp_id}/award/request/", "invalid", "bid"),  # no such bid
    ("POST /api/v1/rfps/{rfp_id}/gate-plans/", "invalid", "vendor"),  # not invited
    ("POST /api/v1/rfps/{rfp_id}/invitations/", "invalid", "vendor"),  # no such one
    ("POST /api/v1/rfps/{rfp_id}/clarifications/", "questions_closed", None),
    ("POST /api/v1/rfps/{rfp_id}/opening/cancel/", "no_pending_opening", None),
    ("POST /api/v1/rfps/{rfp_id}/opening/confirm/", "no_pending_opening", None),
    *(
        (f"POST /api/v1/rfps/{{rfp_id}}/{path}", "rfp_not_published", None)
        for path in (
            "bid/",
            "bid/documents/",
            "bid/reconfirm/",
            "bid/withdraw/",
            "bundles/",
        )
    ),
    # the archive's bytes (format, manifest, signature) are no schema's to state:
    # the buyer's baseline upload reaches the bundle's checks on any RFP status
    ("POST /api/v1/rfps/{rfp_id}/bundles/", "bundle_rejected", None),
    *(
        ("POST /api/v1/signing-keys/", code, None)  # the line's form is in the schema
        for code in ("key_malformed", "key_type_mismatch", "key_too_small")
    ),
}


def _refused_by_state(label: str, response: Any) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    if not isinstance(body, dict):
        return False
    paths = {p.get("path", "") for p in body.get("problems") or []} - {""}
    return any(
        label == operation
        and body.get("code") == code
        and (field is None or paths <= {field} - {""})
        for operation, code, field in REFUSED_BY_STATE
    )


class _ServerErrors(logging.Handler):
    """The tracebacks of the 500s (``django.request`` logs each one)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.seen.append(logging.Formatter().formatException(record.exc_info))


@pytest.fixture
def server_errors() -> Iterator[_ServerErrors]:
    handler = _ServerErrors()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
def wsgi_app() -> Iterator[Any]:
    """The WSGI app, without Django closing the database connection at each
    request's start and end (as the test client does): on PostgreSQL that would
    close the test's own connection, in its transaction; SQLite's in-memory one
    ignores it."""
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        for signal in (signals.request_started, signals.request_finished):
            signal.connect(close_old_connections)


def _known_ids(world: World) -> dict[str, str]:
    run = world.campaign.runs.order_by("pk").first()
    ids = {
        "rfp_id": world.rfp.public_id,
        "bundle_id": world.bundle.public_id,
        "campaign_id": world.campaign.public_id,
        "deposit_id": Deposit.objects.get(bundle=world.bundle).public_id,
        "run_id": run.public_id if run else None,
    }
    return {name: str(value) for name, value in ids.items() if value is not None}


def _failure_lines(error: BaseException) -> list[str]:
    """One line per failed check: its title and the start of its message."""
    found = getattr(error, "exceptions", None) or [error]
    return [" ".join(str(failure).split())[:300] for failure in found]


def _fuzz(
    operation: Any,
    token: str,
    known: dict[str, str],
    failures: dict[str, set[str]],
    reports: list[str],
) -> None:
    names = {p.name for p in operation.path_parameters}
    fixed = {name: value for name, value in known.items() if name in names}
    strategies = [
        operation.as_strategy(mode, **({"path_parameters": fixed} if ids else {}))
        for mode in MODES
        for ids in ([False, True] if fixed else [False])
    ]
    strategy = st.one_of(*strategies)

    @given(case=strategy)
    @hypothesis_settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Case) -> None:
        headers = {"Authorization": f"Token {token}"}
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, BaseExceptionGroup) as error:  # per operation
            found = getattr(error, "exceptions", None) or [error]
            if all(
                isinstance(f, RejectedPositiveData) for f in found
            ) and _refused_by_state(operation.label, response):
                return
            lines = failures.setdefault(operation.label, set())
            if not lines:  # the first failure's whole report (its curl command)
                reports.append(str(error))
            answer = f" [{response.status_code}: {response.text[:200]}]"
            lines.update(line + answer for line in _failure_lines(error))

    run()


def test_every_operation_answers_as_documented(
    world: World, settings: Any, server_errors: _ServerErrors, wsgi_app: Any
) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]  # the host schemathesis' WSGI client sends
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", wsgi_app)
    known = _known_ids(world)
    failures: dict[str, set[str]] = {}
    reports: list[str] = []
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result.err()  # every operation loads
        operations.append(result.ok())

    for role in ("buyer", "vendor"):
        for operation in operations:
            _fuzz(operation, world.tokens[role], known, failures, reports)

    report = "\n".join(
        f"{label}: {line}"
        for label, lines in sorted(failures.items())
        for line in lines
    )
    print(report, *reports, *server_errors.seen[:5], sep="\n")
    assert len(operations) > 80
    assert failures == {}
