"""A full disk answers 507, never 500 (accounts/views/disk_full.py): which errors say
the
disk is full, the API's error shape, the page, the 500 handler's fallback, and a
record a read may skip. The real full disk: tests/faults/test_embedded_runtime.py."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import sqlite3
from pathlib import Path

import pytest
from django.db import OperationalError
from django.http import HttpResponse
from django.test import RequestFactory

from accounts.api.errors import exception_handler
from accounts.models import AuditEvent
from accounts.views.disk_full import DiskFullMiddleware, is_disk_full, unless_disk_full
from config.urls import handler500

SQLITE_FULL = "database or disk is full"


class _DiskFull(Exception):
    sqlstate = "53100"  # PostgreSQL's disk_full, as psycopg's errors carry it


def _chained(error: BaseException) -> BaseException:
    try:
        try:
            raise error
        except BaseException as cause:
            raise RuntimeError("storing failed") from cause
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    ("error", "full"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), True),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), True),
        (OSError(errno.EACCES, "Permission denied"), False),
        (OperationalError(SQLITE_FULL), True),
        (OperationalError("database is locked"), False),
        (OperationalError("disk I/O error"), False),
        (_DiskFull("could not extend file"), True),
        (_chained(OSError(errno.ENOSPC, "No space left on device")), True),
        (_chained(ValueError("bad")), False),
    ],
)
def test_is_disk_full(error: BaseException, full: bool) -> None:
    assert is_disk_full(error) is full


def test_a_full_sqlite_database_says_so(tmp_path: Path) -> None:
    with contextlib.closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("PRAGMA max_page_count = 3")  # the database may not grow

        with pytest.raises(sqlite3.OperationalError) as raised:
            db.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)

    assert raised.value.sqlite_errorcode == sqlite3.SQLITE_FULL
    assert is_disk_full(raised.value)


def test_the_api_answers_a_full_disk_with_507_disk_full() -> None:
    response = exception_handler(OperationalError(SQLITE_FULL), {})

    assert response is not None
    assert response.status_code == 507
    assert response.data["code"] == "disk_full"
    assert "disk is full" in response.data["message"]
    assert response.data["problems"] == []


def test_the_api_leaves_other_database_errors_to_the_500_handler() -> None:
    assert exception_handler(OperationalError("database is locked"), {}) is None


def test_a_page_whose_view_hit_a_full_disk_says_so() -> None:
    middleware = DiskFullMiddleware(lambda request: HttpResponse())
    request = RequestFactory().post("/rfps/new/")

    response = middleware.process_exception(request, OperationalError(SQLITE_FULL))

    assert response is not None
    assert response.status_code == 507
    page = response.content.decode()
    assert "<h1>The disk is full</h1>" in page
    assert "nothing was saved" in page
    other = OperationalError("database is locked")
    assert middleware.process_exception(request, other) is None


@pytest.mark.parametrize(
    ("error", "status"),
    [(OSError(errno.ENOSPC, "No space left on device"), 507), (KeyError("x"), 500)],
)
def test_the_500_handler_answers_a_full_disk_outside_a_view_with_507(
    error: Exception, status: int
) -> None:
    request = RequestFactory().get("/api/v1/rfps/")
    try:
        raise error  # as Django calls the handler: while handling the error
    except type(error):
        response = handler500(request)

    assert response.status_code == status
    body = json.loads(response.content)
    assert body["code"] == ("disk_full" if status == 507 else "server_error")


@pytest.mark.django_db
def test_a_record_a_read_may_skip_is_rolled_back_and_logged_on_a_full_disk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="accounts.views.disk_full")

    with unless_disk_full("bundle.downloaded b1 by vendor-a"):
        AuditEvent.objects.create(action="bundle.downloaded", actor_repr="vendor-a")
        raise OperationalError(SQLITE_FULL)

    assert not AuditEvent.objects.exists()
    assert "not recorded: bundle.downloaded b1 by vendor-a" in caplog.text


@pytest.mark.django_db
def test_a_record_a_read_may_skip_still_fails_on_other_errors() -> None:
    with (
        pytest.raises(OperationalError, match="locked"),
        unless_disk_full("something"),
    ):
        raise OperationalError("database is locked")
