"""A refused request is one log line: Django's ``django.request`` warning for a
403 (and any other 4xx) carries no traceback; a server error keeps its own."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from config.logs import ClientErrorFilter, JsonFormatter

pytestmark = pytest.mark.django_db


def _request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "django.request"]


def test_a_403_is_logged_as_one_line_without_a_traceback(
    client_for: Callable[[Any], Client],
    vendor_a: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client_for(vendor_a).get("/accounts/audit/")

    (record,) = _request_records(caplog)
    line = JsonFormatter().format(record)
    assert response.status_code == 403
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "Forbidden (Permission denied): /accounts/audit/"
    assert record.exc_info is None
    assert record.exc_text is None
    assert "exception" not in line
    assert "Traceback" not in line


@pytest.mark.parametrize(("status", "kept"), [(400, False), (403, False), (500, True)])
def test_the_filter_drops_tracebacks_of_client_errors_only(
    status: int, kept: bool
) -> None:
    try:
        raise PermissionError("boom")
    except PermissionError as error:
        exc_info = (type(error), error, error.__traceback__)
    record = logging.LogRecord(
        "django.request", logging.WARNING, __file__, 1, "x", None, exc_info
    )
    record.status_code = status

    assert ClientErrorFilter().filter(record) is True
    assert (record.exc_info is not None) is kept
