"""The gates app's settings, read when used (so tests can change them).

``config/settings.py`` declares each one, with its environment variable and its
default; this module is the app's only reader of ``django.conf.settings``.

Signed reports (docs/reports.md):

- ``REPROGATE_REPORT_KEYS_DIR`` (``$REPROGATE_KEYS_DIR/reports``): the
  installation's report CA, signing certificate and key, created on first use
  (never once a report is ready);
- ``REPROGATE_REPORT_SIGNER`` / ``REPROGATE_REPORT_SIGNER_KEY`` /
  ``REPROGATE_REPORT_SIGNER_PASSWORD``: the installation's own signer instead
  (PKCS#12, or a PEM chain and its PEM key);
- ``REPROGATE_REPORT_TSA_URL`` (empty): the RFC 3161 time-stamping authority;
- ``REPROGATE_REPORT_STATEMENT_KEY_PATH``
  (``$REPROGATE_KEYS_DIR/reports/statement.pem``): the Ed25519 key of the
  in-toto statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class ReportSettings:
    keys_dir: Path
    signer: Path | None
    signer_key: Path | None
    signer_password: str
    tsa_url: str
    statement_key_path: Path


def report_settings() -> ReportSettings:
    signer = settings.REPROGATE_REPORT_SIGNER
    signer_key = settings.REPROGATE_REPORT_SIGNER_KEY
    return ReportSettings(
        keys_dir=Path(settings.REPROGATE_REPORT_KEYS_DIR),
        signer=Path(signer) if signer else None,
        signer_key=Path(signer_key) if signer_key else None,
        signer_password=settings.REPROGATE_REPORT_SIGNER_PASSWORD,
        tsa_url=settings.REPROGATE_REPORT_TSA_URL,
        statement_key_path=Path(settings.REPROGATE_REPORT_STATEMENT_KEY_PATH),
    )


def report_warm_up_queue() -> str | None:
    """The queue whose workers warm the report renderers up as each process
    starts (the default one, where reports are rendered); None when
    ``REPROGATE_REPORT_WARM_UP`` is off."""
    if not settings.REPROGATE_REPORT_WARM_UP:
        return None
    return str(settings.CELERY_TASK_DEFAULT_QUEUE)
