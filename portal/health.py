"""Probes for /healthz: database, broker and storage, each with a short timeout."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection

from config.celery import app as celery_app

Probe = Callable[[], str]
logger = logging.getLogger(__name__)
BROKER_TIMEOUT = 2.0


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


def check_broker() -> str:
    url = celery_app.conf.broker_url  # reading the config makes the broker folders
    if url.startswith("filesystem://"):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        for key in ("data_folder_in", "control_folder"):
            folder = Path(options[key])
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise RuntimeError(f"broker folder {folder} is missing or not writable")
        return "filesystem"
    # Timeouts for this probe's own connection only: a broker that accepts the
    # connection but never answers must not hang /healthz.
    with celery_app.connection_for_write(
        connect_timeout=BROKER_TIMEOUT,
        transport_options={
            "socket_connect_timeout": BROKER_TIMEOUT,
            "socket_timeout": BROKER_TIMEOUT,
        },
    ) as conn:
        conn.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT)
    return url.partition("://")[0]


def check_storage() -> str:
    location = getattr(default_storage, "location", None)
    if isinstance(location, str | Path) and not getattr(
        default_storage, "bucket_name", None
    ):
        folder = Path(location)
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise RuntimeError(f"media folder {folder} is not writable")
        return "filesystem"
    default_storage.exists(
        "healthz-probe"
    )  # a HEAD request: reachability and credentials
    return type(default_storage).__name__


PROBES: dict[str, Probe] = {
    "database": check_database,
    "broker": check_broker,
    "storage": check_storage,
}


def run_probes() -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name, probe in PROBES.items():
        started = time.monotonic()
        try:
            detail = probe()
        except Exception as exc:
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            results[name] = {"ok": True, "backend": detail}
        results[name]["ms"] = round((time.monotonic() - started) * 1000, 1)
    return results
