"""Log lines as JSON objects, one a line, for production's log collectors
(``REPROGATE_LOG_FORMAT=json``, the default with DEBUG off outside the embedded
default).

Each line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``; the
``request_id`` of the request being served
(``accounts.views.middleware.RequestIdMiddleware``
sets it, and echoes it as ``X-Request-ID``); ``exception`` with the traceback when
one was logged; and, in a Celery worker, ``task_id`` and ``task_name``. gunicorn's
access lines (``deploy/gunicorn.conf.py``) come out the same way, with the request's
fields (``method``, ``path``, ``status``...) and the request id the response carried.

Django-free: gunicorn's master process imports it before any Django setting exists.
"""

from __future__ import annotations

import json
import logging
import logging.config
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from accounts.lib.context import REQUEST_ID_META, request_id_var

FORMATS = ("json", "plain")
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# gunicorn's access line: the atoms kept as fields (gunicorn.glogging.Logger.atoms).
# "{x-request-id}o" is the response's header, so the id is there after the
# middleware reset its context variable.
ACCESS_FIELDS = {
    "remote": "h",
    "method": "m",
    "path": "U",
    "query": "q",
    "protocol": "H",
    "status": "s",
    "bytes": "B",
    "duration_ms": "M",
    "referer": "f",
    "user_agent": "a",
    "request_id": "{x-request-id}o",
}
# Log lines bound their own size: a message or traceback past this is cut.
MAX_FIELD_CHARS = 64_000


def _current_task() -> tuple[str, str]:
    """The id and name of the Celery task this thread runs, if any."""
    if "celery" not in sys.modules:
        return "", ""
    from celery._state import get_current_task

    task = get_current_task()
    if task is None or task.request.id is None:
        return "", ""
    return str(task.request.id), str(task.name or "")


def _request_id_of(record: logging.LogRecord) -> str:
    """The id ``RequestIdMiddleware`` gave the record's request (django.request
    logs 4xx and 5xx responses after the middleware has returned)."""
    meta = getattr(getattr(record, "request", None), "META", None)
    value = meta.get(REQUEST_ID_META, "") if isinstance(meta, Mapping) else ""
    return value if isinstance(value, str) else ""


def _cut(text: str) -> str:
    if len(text) <= MAX_FIELD_CHARS:
        return text
    return text[:MAX_FIELD_CHARS] + f"... [{len(text) - MAX_FIELD_CHARS} chars cut]"


class ClientErrorFilter(logging.Filter):
    """Drops the traceback of a line about a client's error (a 4xx: a 403 for a
    refused permission, a 400 for a body Django could not parse). Django logs
    these with the exception that made them; the refusal is the whole story,
    and a traceback per refused request buries the server errors' ones. A 5xx
    keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == "gunicorn.access" and isinstance(record.args, Mapping):
            return self._dumps(self._access_line(record))
        line: dict[str, Any] = {
            "time": self._utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": _cut(record.getMessage()),
            "request_id": request_id_var.get() or _request_id_of(record),
        }
        status = getattr(record, "status_code", None)  # django.request's lines
        if isinstance(status, int):
            line["status"] = status
        task_id, task_name = _current_task()
        if not task_id and record.name.startswith("celery."):
            # The worker's main process logs "received" lines for a task it
            # does not run itself: the id and name are the line's arguments.
            args = record.args if isinstance(record.args, Mapping) else {}
            task_id, task_name = str(args.get("id", "")), str(args.get("name", ""))
        if task_id:
            line["task_id"], line["task_name"] = task_id, task_name
        if record.exc_info:
            line["exception"] = _cut(self.formatException(record.exc_info))
        elif record.exc_text:
            line["exception"] = _cut(record.exc_text)
        if record.stack_info:
            line["stack"] = _cut(self.formatStack(record.stack_info))
        return self._dumps(line)

    def _access_line(self, record: logging.LogRecord) -> dict[str, Any]:
        atoms: Mapping[str, Any] = record.args  # type: ignore[assignment]
        line: dict[str, Any] = {
            "time": self._utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": _cut(record.getMessage()),
        }
        for field, atom in ACCESS_FIELDS.items():
            value = atoms.get(atom, "-")
            if isinstance(value, str):  # gunicorn's SafeAtoms escape quotes
                value = value.replace('\\"', '"')
            line[field] = "" if value == "-" and field != "bytes" else value
        for field in ("status", "bytes", "duration_ms"):
            try:
                line[field] = int(line[field])
            except (TypeError, ValueError):
                line[field] = None
        return line

    @staticmethod
    def _utc(created: float) -> str:
        moment = datetime.fromtimestamp(created, tz=UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    @staticmethod
    def _dumps(line: dict[str, Any]) -> str:
        return json.dumps(line, ensure_ascii=False, default=str)


def logging_configure(config: dict[str, Any]) -> None:
    """Django's LOGGING_CONFIG: the LOGGING dict, and Python's warnings (a
    deprecation, a missing static folder) as log lines too, so that in JSON
    every line a process writes is an object."""
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def worker_logging_setup(**kwargs: Any) -> None:
    """Celery's ``setup_logging`` receiver (``config.celery``): a worker logs
    through the settings' LOGGING, as the web processes do, instead of Celery's
    own handlers and format."""
    from django.conf import settings

    logging_configure(settings.LOGGING)
    # ``celery worker -l debug`` still makes it more talkative (never less).
    loglevel = kwargs.get("loglevel")
    root = logging.getLogger()
    if isinstance(loglevel, int) and loglevel < root.level:
        root.setLevel(loglevel)


def logging_filters() -> dict[str, dict[str, Any]]:
    """The filters a LOGGING dict names: ``client_errors`` (``ClientErrorFilter``)."""
    return {"client_errors": {"()": f"{__name__}.ClientErrorFilter"}}


def logging_formatters() -> dict[str, dict[str, Any]]:
    """The formatters a LOGGING dict names ``json`` and ``plain``."""
    return {
        "json": {"()": f"{__name__}.JsonFormatter"},
        "plain": {"format": PLAIN_FORMAT},
    }


def gunicorn_logconfig(log_format: str) -> dict[str, Any]:
    """gunicorn's ``logconfig_dict``: its error and access logs on stderr and
    stdout, as JSON lines or plain text."""
    if log_format not in FORMATS:
        raise ValueError(
            f"REPROGATE_LOG_FORMAT={log_format!r}: use one of {', '.join(FORMATS)}."
        )
    formatter = log_format
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            **logging_formatters(),
            # plain access lines: gunicorn's own access_log_format, as it is
            "plain_access": {"format": "%(message)s"},
        },
        "handlers": {
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": formatter,
                "stream": "ext://sys.stderr",
            },
            "access_console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if log_format == "json" else "plain_access",
                "stream": "ext://sys.stdout",
            },
        },
        "loggers": {
            "gunicorn.error": {
                "level": "INFO",
                "handlers": ["error_console"],
                "propagate": False,
            },
            "gunicorn.access": {
                "level": "INFO",
                "handlers": ["access_console"],
                "propagate": False,
            },
        },
        "root": {"level": "INFO", "handlers": ["error_console"]},
    }
