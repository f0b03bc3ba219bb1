"""Start-up checks of the installation's keys (``manage.py check --deploy``).

The keys live in files (``REPROGATE_KEYS_DIR``), the checkpoints and reports they
signed in the database. A container recreated without its keys directory would,
on first use, make new keys that contradict everything already signed; the
services refuse to (they make a key only while nothing was signed with it), and
these checks say so before the first request:

- ``reprogate.E001``: checkpoints exist but the log's key file is missing;
- ``reprogate.E002``: signed reports exist but the report signer's files are;
- ``reprogate.E003``: signed reports exist but the statement key is missing;
- ``reprogate.W001``: the keys directory cannot be written (no key can be made);
- ``reprogate.W002``: a private key file others may read or write;
- ``reprogate.E004``: a working directory the settings name (``BUNDLE_SPOOL_DIR``,
  ``FILE_UPLOAD_TEMP_DIR``, ``RUNNER_WORK_DIR``) is not a directory this process
  can write: every upload or run would fail (a warning, W014, in the embedded
  default or with ``DJANGO_DEBUG`` on).

E001-E003 are warnings (W011-W013) with ``DJANGO_DEBUG`` on or in the embedded
default, where keys are still made on first use. They read the database: as a
deployment check (``check --deploy``), and with ``--database`` or from
``migrate`` as an ordinary one; an absent or unmigrated database says nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks
from django.db import DatabaseError, connections

RESTORE = (
    "Restore the keys directory (REPROGATE_KEYS_DIR) from the backup taken with "
    "this database, then run manage.py backup_check: docs/operations.md, "
    '"Backup and restore". Never let a new key be made: it would contradict '
    "what the old one signed."
)
TAG = "reprogate_keys"


def _keys_dir() -> Path:
    return Path(settings.REPROGATE_KEYS_DIR)


def _local() -> bool:
    return bool(settings.DEBUG or getattr(settings, "REPROGATE_EMBEDDED", False))


def _problem(number: int, message: str) -> checks.CheckMessage:
    """An error in production, a warning where keys are made on first use."""
    if _local():
        return checks.Warning(message, hint=RESTORE, id=f"reprogate.W0{10 + number}")
    return checks.Error(message, hint=RESTORE, id=f"reprogate.E00{number}")


def _report_signer_files() -> list[Path]:
    """The files the report signer is read from (the installation's own, or
    the local one in the report keys directory)."""
    from gates.conf import report_settings
    from gates.lib.signing.pki import CA_FILE, KEY_FILE, SIGNER_FILE

    conf = report_settings()
    if conf.signer is not None:
        return [conf.signer] + ([conf.signer_key] if conf.signer_key else [])
    return [conf.keys_dir / name for name in (KEY_FILE, SIGNER_FILE, CA_FILE)]


def _signed_so_far() -> tuple[int, int] | None:
    """(checkpoints, ready reports) in the default database; None if it cannot be
    read or is not migrated."""
    from artifacts.models import Checkpoint
    from gates.models import Report

    try:
        connection = connections["default"]
        with connection.cursor() as cursor:
            tables = set(connection.introspection.table_names(cursor))
        if not {Checkpoint._meta.db_table, Report._meta.db_table} <= tables:
            return None
        ready = Report.objects.filter(status=Report.Status.READY).count()
        return Checkpoint.objects.count(), ready
    except DatabaseError:
        return None


def keys_missing() -> list[checks.CheckMessage]:
    """E001-E003: a key is missing though the database holds what it signed."""
    from artifacts.conf import log_key_path
    from gates.conf import report_settings

    signed = _signed_so_far()
    if signed is None:
        return []
    checkpoints, reports = signed
    found: list[checks.CheckMessage] = []
    log_key = log_key_path()
    if checkpoints and not log_key.exists():
        found.append(_problem(1, (
            f"The transparency log's key file {log_key} is missing, but the database "
            f"holds {checkpoints} checkpoint(s) it signed: no new checkpoint can be "
            "signed."
        )))  # fmt: skip
    if reports:
        missing = [path for path in _report_signer_files() if not path.exists()]
        if missing:
            names = ", ".join(str(path) for path in missing)
            found.append(_problem(2, (
                f"The report signer's files are missing ({names}), but the database "
                f"holds {reports} signed report(s): no new report can be signed."
            )))  # fmt: skip
        statement = report_settings().statement_key_path
        if not statement.exists():
            found.append(_problem(3, (
                f"The report statement key {statement} is missing, but the database "
                f"holds {reports} signed report(s) whose statements it signed."
            )))  # fmt: skip
    return found


def _writable(folder: Path) -> bool:
    """``folder`` can be written, or made where it does not exist yet."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def _private_key_files() -> Iterable[Path]:
    from artifacts.conf import log_key_path
    from gates.conf import report_settings

    conf = report_settings()
    yield log_key_path()
    yield conf.statement_key_path
    if conf.signer is None:
        from gates.lib.signing.pki import KEY_FILE

        yield conf.keys_dir / KEY_FILE
    else:
        yield conf.signer  # a PKCS#12 file holds the key
        if conf.signer_key is not None:
            yield conf.signer_key


def key_files_exposed() -> list[checks.CheckMessage]:
    """W001 and W002: the keys directory cannot be written; a key file is open."""
    found: list[checks.CheckMessage] = []
    keys_dir = _keys_dir()
    if not _writable(keys_dir):
        found.append(checks.Warning(
            f"The keys directory {keys_dir} (REPROGATE_KEYS_DIR) cannot be written "
            "by this process: keys that do not exist yet cannot be made.",
            hint="Make it a directory this process owns, mode 0700.",
            id="reprogate.W001",
        ))  # fmt: skip
    for path in dict.fromkeys(_private_key_files()):
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and mode & 0o077:
            found.append(checks.Warning(
                f"The key file {path} may be read or written by others "
                f"(mode {stat.S_IMODE(mode):o}); it is refused when used.",
                hint=f"chmod 600 {path}",
                id="reprogate.W002",
            ))  # fmt: skip
    return found


WORKING_DIRECTORIES = ("BUNDLE_SPOOL_DIR", "FILE_UPLOAD_TEMP_DIR", "RUNNER_WORK_DIR")


def working_directories_missing() -> list[checks.CheckMessage]:
    """E004: a configured working directory that is missing or not writable."""
    found: list[checks.CheckMessage] = []
    for name in WORKING_DIRECTORIES:
        value = str(getattr(settings, name, "") or "")
        if not value:
            continue
        folder = Path(value)
        if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK):
            continue
        what = "cannot be written" if folder.is_dir() else "does not exist"
        message = f"{name}={value} {what}: uploads and runs that need it would fail."
        hint = f"Create it for this process's user (mkdir -p {value}), or unset {name}."
        if _local():
            found.append(checks.Warning(message, hint=hint, id="reprogate.W014"))
        else:
            found.append(checks.Error(message, hint=hint, id="reprogate.E004"))
    return found


@checks.register(TAG)
def working_directories_check(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    return working_directories_missing()


@checks.register(TAG)
def keys_files_check(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    return key_files_exposed()


@checks.register(TAG, checks.Tags.database)
def keys_on_database_check(
    app_configs: Sequence[Any] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    """The database's side, where the caller names the database (``migrate``,
    ``check --database default``)."""
    if not databases or "default" not in databases:
        return []
    return keys_missing()


@checks.register(TAG, deploy=True)
def keys_deploy_check(
    app_configs: Sequence[Any] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    """``check --deploy`` without ``--database``: the database's side too (with
    ``--database`` the check above says it)."""
    if databases:
        return []
    return keys_missing()
