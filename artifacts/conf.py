"""The artifacts app's settings, read when used (so tests can change them).

``config/settings.py`` declares each one, with its environment variable and its
default; this module is the app's only reader of ``django.conf.settings``. The
checks here repeat the start-up ones for values a test or another settings
module sets directly.

Bundles:

- ``BUNDLE_MAX_UPLOAD_BYTES`` (4 GiB): the largest archive an upload may send
  (413 above it);
- ``BUNDLE_MAX_MEMBER_BYTES`` (2 GiB), ``BUNDLE_MAX_MEMBERS`` (10,000),
  ``BUNDLE_MAX_TOTAL_BYTES`` (8 GiB), ``BUNDLE_MAX_COMPRESSION_RATIO`` (200): the
  archive reader's limits (``artifacts.lib.archive.ArchiveLimits``);
- ``BUNDLE_SPOOL_DIR`` (``FILE_UPLOAD_TEMP_DIR``, else the system's temporary
  directory): where a bundle's files wait for the verdict. On the same file
  system as ``MEDIA_ROOT``, accepted files are renamed into storage, not copied;
- ``BUNDLE_STORAGE_THREADS`` (1 for local file storage, else 4): blobs of one
  bundle written to storage at once. Threads hide S3 round trips; on local
  files they only contend for the GIL (measured: 2,000 small blobs took 0.3 s
  with one thread, 0.6-0.7 s with four);
- ``BUNDLE_ENVIRONMENT_MAX_BYTES`` (1 MiB): the largest environment manifest read
  for the completeness report;
- ``BUNDLE_REPORT_TRUST_ROOTS_FILE`` (none): a PEM file of the certificate roots
  whose signers a signed report PDF's check calls trusted (an untrusted signer
  is shown as such, never refused); ``BUNDLE_REPORT_MAX_BYTES`` (64 MiB): the
  largest report PDF checked; ``BUNDLE_REPORT_CHECK_SECONDS`` (30): how long one
  check (a child process, ``artifacts.lib.reports.bounded``) may take.

Uploads themselves stream to disk (``FILE_UPLOAD_MAX_MEMORY_SIZE``, 2.5 MB by
default, only decides when Django switches from memory to a temporary file;
the bundle upload view always writes to disk). ``DATA_UPLOAD_MAX_MEMORY_SIZE``
does not count file parts, so it needs no change.

Transparency log:

- ``REPROGATE_LOG_KEY_PATH`` (``$REPROGATE_KEYS_DIR/transparency-log.pem``, the
  keys directory being ``$REPROGATE_VAR_DIR/keys`` by default): the log's Ed25519
  key file (generated on first use, never once a checkpoint exists);
- ``REPROGATE_LOG_ORIGIN`` (``reprogate.local/log``): the log's name in its
  checkpoints and on its key;
- ``REPROGATE_LOG_MAX_LEAF_BYTES`` (16 MiB): the largest leaf ``log_append`` takes.

Escrow:

- ``ESCROW_RETENTION_YEARS`` (10): how long deposits are kept when the RFP's
  contract terms name no retention (``Rfp.escrow_retention_years`` empty);
- ``ESCROW_OBJECT_LOCK_MODE`` (``COMPLIANCE``): the S3 Object Lock retention
  mode of deposited blobs, ``COMPLIANCE`` (nobody, root included, may delete or
  shorten it) or ``GOVERNANCE`` (users with ``s3:BypassGovernanceRetention``
  may);
- ``ESCROW_OBJECT_LOCK`` (``auto``): ``auto`` locks deposited blobs whenever the
  S3 bucket has Object Lock enabled, ``off`` never does (a bucket without Object
  Lock, local files and in-memory storage are never locked);
- ``ESCROW_RELEASE_NOTICE_DAYS`` (14): how long the vendor may object to a
  release request;
- ``ESCROW_FIXITY_GRACE_SECONDS`` (3600): how old an object under ``blobs/`` with
  no ``Blob`` row must be to count as extra (an ingest writes its blobs before
  the transaction that records them).
"""

from __future__ import annotations

import calendar
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import FileSystemStorage, default_storage

from artifacts.lib.archive import ArchiveLimits
from artifacts.lib.reports.bounded import PdfLimits
from artifacts.lib.reports.pades import TrustRootsError, trust_roots
from artifacts.lib.transparency.note import NoteError, check_name


def bundle_max_upload_bytes() -> int:
    return int(settings.BUNDLE_MAX_UPLOAD_BYTES)


def bundle_archive_limits() -> ArchiveLimits:
    """The reader's limits (``artifacts.lib.archive.ArchiveLimits``) from settings."""
    return ArchiveLimits(
        max_member_bytes=int(settings.BUNDLE_MAX_MEMBER_BYTES),
        max_members=int(settings.BUNDLE_MAX_MEMBERS),
        max_total_bytes=int(settings.BUNDLE_MAX_TOTAL_BYTES),
        max_ratio=float(settings.BUNDLE_MAX_COMPRESSION_RATIO),
    )


def bundle_spool_dir() -> str | None:
    """A local directory for files waiting for the verdict (None: the system's)."""
    spool = settings.BUNDLE_SPOOL_DIR or settings.FILE_UPLOAD_TEMP_DIR
    return str(spool or "") or None


def bundle_environment_max_bytes() -> int:
    return int(settings.BUNDLE_ENVIRONMENT_MAX_BYTES)


def bundle_report_trust_roots_pem() -> bytes:
    """The PEM of the roots trusted for report signers (b"" for none); a file
    that cannot be read or holds no certificate is a configuration error."""
    configured = str(settings.BUNDLE_REPORT_TRUST_ROOTS_FILE or "")
    if not configured:
        return b""
    try:
        pem = Path(configured).read_bytes()
        if not trust_roots(pem):
            raise TrustRootsError("the file holds no certificate")
    except (OSError, TrustRootsError) as error:
        raise ImproperlyConfigured(
            f"BUNDLE_REPORT_TRUST_ROOTS_FILE {configured}: {error}"
        ) from None
    return pem


def bundle_report_limits() -> PdfLimits:
    return PdfLimits(
        max_bytes=int(settings.BUNDLE_REPORT_MAX_BYTES),
        timeout_seconds=float(settings.BUNDLE_REPORT_CHECK_SECONDS),
    )


def bundle_storage_is_local() -> bool:
    """Blobs go to local files (``FileSystemStorage``)."""
    return isinstance(default_storage, FileSystemStorage)


def bundle_storage_threads() -> int:
    configured = settings.BUNDLE_STORAGE_THREADS
    if configured is None:
        return 1 if bundle_storage_is_local() else 4
    return max(1, int(configured))


# --- transparency log -----------------------------------------------------------------


def log_key_path() -> Path:
    configured = settings.REPROGATE_LOG_KEY_PATH
    if configured:
        return Path(configured)
    keys_dir = getattr(settings, "REPROGATE_KEYS_DIR", None)
    if not keys_dir:
        keys_dir = Path(settings.VAR_DIR) / "keys"
    return Path(keys_dir) / "transparency-log.pem"


def log_origin() -> str:
    """The log's origin, checked against the C2SP rules (no space, no "+")."""
    origin = str(settings.REPROGATE_LOG_ORIGIN)
    try:
        check_name(origin, "REPROGATE_LOG_ORIGIN")
    except NoteError as error:
        raise ImproperlyConfigured(str(error)) from None
    return origin


def log_max_leaf_bytes() -> int:
    return int(settings.REPROGATE_LOG_MAX_LEAF_BYTES)


# --- escrow ---------------------------------------------------------------------------
LOCK_MODES: Final = ("COMPLIANCE", "GOVERNANCE")


def escrow_retention_years(rfp: Any) -> int:
    """Years to keep the RFP's deposits: its contract terms, else the setting."""
    years = getattr(rfp, "escrow_retention_years", None)
    years = int(settings.ESCROW_RETENTION_YEARS if years is None else years)
    if years < 1:
        raise ImproperlyConfigured("Escrow retention must be at least one year.")
    return years


def add_years(moment: datetime, years: int) -> datetime:
    """The same day and time ``years`` later (29 February becomes 28)."""
    year = moment.year + years
    day = min(moment.day, calendar.monthrange(year, moment.month)[1])
    return moment.replace(year=year, day=day)


def escrow_retain_until(rfp: Any, deposited_at: datetime) -> datetime:
    return add_years(deposited_at, escrow_retention_years(rfp))


def object_lock_mode() -> str:
    mode = str(settings.ESCROW_OBJECT_LOCK_MODE)
    if mode.upper() not in LOCK_MODES:
        raise ImproperlyConfigured(
            f"ESCROW_OBJECT_LOCK_MODE must be COMPLIANCE or GOVERNANCE, not {mode!r}."
        )
    return mode.upper()


def object_lock_enabled_setting() -> bool:
    value = str(settings.ESCROW_OBJECT_LOCK).lower()
    if value not in ("auto", "off"):
        raise ImproperlyConfigured(
            f"ESCROW_OBJECT_LOCK must be 'auto' or 'off', not {value!r}."
        )
    return value == "auto"


def escrow_release_notice_days() -> int:
    days = int(settings.ESCROW_RELEASE_NOTICE_DAYS)
    if days < 0:
        raise ImproperlyConfigured("ESCROW_RELEASE_NOTICE_DAYS cannot be negative.")
    return days


def escrow_fixity_grace_seconds() -> int:
    return int(settings.ESCROW_FIXITY_GRACE_SECONDS)


def blob_sweep_every_hours() -> int:
    return int(settings.BLOB_SWEEP_EVERY_HOURS)
