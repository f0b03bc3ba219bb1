"""Probes for /healthz: database, broker and storage, each with a short timeout, the
free space of the disks the server writes to, and the embedded runtime's processes
(config/supervise.py's status file)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from celery import current_app as celery_app
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from sqlalchemy.engine import make_url

from accounts.lib.runtime import STATUS_FILE

Probe = Callable[[], "str | dict[str, object]"]
logger = logging.getLogger(__name__)
BROKER_TIMEOUT = 2.0


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


def check_broker() -> str:
    url = celery_app.conf.broker_url
    if url.startswith("sqla+sqlite:"):
        return _check_sqlite_broker(url.removeprefix("sqla+"))
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


def _check_sqlite_broker(url: str) -> str:
    """The embedded broker's file: its folder writable, the database readable
    (a read never waits for a writer in WAL mode; the timeout bounds the rest)."""
    database = make_url(url).database or ""
    folder = Path(database).parent
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK):
        raise RuntimeError(f"broker folder {folder} is not writable")
    with contextlib.closing(
        sqlite3.connect(f"file:{database}?mode=rwc", uri=True, timeout=BROKER_TIMEOUT)
    ) as conn:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return "sqlite"


def check_processes() -> dict[str, object]:
    """The embedded runtime's processes, as config/supervise.py last wrote them:
    a worker or beat that is down (being restarted) fails this check. Without a
    live supervisor (production, or runserver alone) there is nothing to report."""
    path = Path(settings.VAR_DIR) / STATUS_FILE
    try:
        status = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"ok": True, "backend": "none"}
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"{path.name} is not readable: {exc}") from None
    if not _pid_alive(status.get("supervisor_pid")):
        return {"ok": True, "backend": "none"}
    programs = {
        name: {
            "state": entry.get("state"),
            "pid": entry.get("pid"),
            "restarts": entry.get("restarts", 0),
            "last_exit": entry.get("last_exit"),
            **(
                {"restart_in_s": entry["restart_in_s"]}
                if "restart_in_s" in entry
                else {}
            ),
        }
        for name, entry in (status.get("programs") or {}).items()
    }
    down = sorted(
        name for name, entry in programs.items() if entry["state"] != "running"
    )
    result: dict[str, object] = {
        "ok": not down,
        "backend": "supervisor",
        "programs": programs,
    }
    if down:
        result["error"] = f"not running: {', '.join(down)}"
    return result


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


DISK_PROBE_BYTES = 4096
MiB = 1024 * 1024


def _written_folders() -> list[Path]:
    """The folders the server writes to on this machine: the var directory, the
    SQLite database's and local media files' (one per file system)."""
    folders = [Path(settings.VAR_DIR)]
    if connection.vendor == "sqlite" and not connection.is_in_memory_db():  # type: ignore[attr-defined]
        folders.append(Path(connection.settings_dict["NAME"]).parent)
    location = getattr(default_storage, "location", None)
    if isinstance(location, str | Path) and not getattr(
        default_storage, "bucket_name", None
    ):
        folders.append(Path(location))
    seen: dict[int, Path] = {}
    for folder in folders:
        with contextlib.suppress(OSError):
            seen.setdefault(folder.stat().st_dev, folder)
    return list(seen.values())


def check_disk() -> dict[str, object]:
    """Each written file system has ``REPROGATE_MIN_FREE_DISK_MB`` free, and a small
    file can be written there (a full disk answers writes with 507 meanwhile)."""
    minimum = int(settings.REPROGATE_MIN_FREE_DISK_MB)
    problems: list[str] = []
    free_mib: list[int] = []
    for folder in _written_folders():
        free = shutil.disk_usage(folder).free // MiB
        free_mib.append(free)
        if free < minimum:
            problems.append(f"disk full: {free} MiB free under {folder}")
        elif (failure := _write_probe(folder)) is not None:
            problems.append(f"disk full: writing under {folder} failed: {failure}")
    result: dict[str, object] = {
        "ok": not problems,
        "free_mib": min(free_mib, default=None),
        "min_free_mib": minimum,
    }
    if problems:
        result["error"] = "; ".join(problems)
    return result


def _write_probe(folder: Path) -> str | None:
    """Write and remove a small file in ``folder``: the error if the disk is full
    (a folder this process may not write to, e.g. a read-only volume, passes: the
    storage check says whether the media folder is writable)."""
    probe = folder / f".healthz-disk-probe-{os.getpid()}"
    try:
        with probe.open("wb") as handle:
            handle.write(b"\0" * DISK_PROBE_BYTES)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            return None  # read-only or not ours: not this check's business
        return error.strerror or str(error)
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return None


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
    "disk": check_disk,
    "processes": check_processes,
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
            if isinstance(detail, dict):
                results[name] = {"ok": bool(detail.get("ok", True)), **detail}
            else:
                results[name] = {"ok": True, "backend": detail}
        results[name]["ms"] = round((time.monotonic() - started) * 1000, 1)
    return results
