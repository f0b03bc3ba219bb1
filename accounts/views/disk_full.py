"""A full disk answers a write with HTTP 507, never with a 500: SQLite's "database
or disk is full" (``SQLITE_FULL``), PostgreSQL's ``disk_full`` (SQLSTATE 53100) and
``OSError`` ``ENOSPC``/``EDQUOT`` raised anywhere while a request is served. The
API answers in its one error shape (``{"code": "disk_full", ...}``), pages with a
page saying so. A write that failed wrote nothing (its transaction rolled back);
reads go on working, and writes work again as soon as space is freed.

A read that records something on the side (a token's last use, a download's audit
row) does it through ``unless_disk_full``: on a full disk the record is skipped
with a warning in the log, which names it, and the read is served.

Three places catch it: the API's exception handler (accounts/api/errors.py), this
module's middleware (a page's view) and the 500 handler (what fails outside a
view, such as the session saved after it: config/urls.py)."""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import DatabaseError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

logger = logging.getLogger(__name__)

DISK_FULL_CODE = "disk_full"
DISK_FULL_MESSAGE = (
    "The server's disk is full, so nothing was saved. Reading works; try this "
    "again once the administrator has freed space."
)
_NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_POSTGRES_DISK_FULL = "53100"
_SQLITE_FULL_TEXT = "database or disk is full"


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an exception it was raised from, says the disk is full."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE_ERRNOS:
            return True
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        if getattr(exc, "sqlstate", None) == _POSTGRES_DISK_FULL:
            return True
        if _SQLITE_FULL_TEXT in str(exc):  # Django's wrapper of the driver's error
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@contextmanager
def unless_disk_full(record: str) -> Iterator[None]:
    """Run the block's writes in a savepoint; on a full disk roll them back, log
    ``record`` (what was not recorded) and go on."""
    try:
        with transaction.atomic():
            yield
    except DatabaseError as error:
        if not is_disk_full(error):
            raise
        logger.warning("disk full: not recorded: %s", record)


def disk_full_response(request: HttpRequest) -> HttpResponse:
    """507: JSON in the API's error shape under /api/, the page elsewhere."""
    logger.warning("disk full: %s %s answered 507", request.method, request.path)
    if request.path.startswith("/api/"):
        body = {"code": DISK_FULL_CODE, "message": DISK_FULL_MESSAGE, "problems": []}
        return JsonResponse(body, status=507)
    page = loader.get_template("507.html").render({"message": DISK_FULL_MESSAGE})
    return HttpResponse(page, status=507)


class DiskFullMiddleware:
    """A page's view that failed on a full disk answers 507."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponse | None:
        if is_disk_full(exception):
            return disk_full_response(request)
        return None
