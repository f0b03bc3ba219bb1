"""The evidence package layout (docs/architecture.md) and the deposit record format,
shared by the server that writes them and the offline verifier that reads them.

A deposit's leaf in the transparency log is its record as canonical JSON: UTF-8,
keys sorted, separators ``,`` and ``:``, no insignificant whitespace::

    {"blobs": [{"role": "archive", "sha256": "…", "size": 123},
               {"path": "harness/run.sh", "role": "file", "sha256": "…", "size": 45}],
     "bundle": "<uuid>", "deposit": "<uuid>", "kind": "bundle",
     "manifest_sha256": "…", "organisation": "acme-flash",
     "retain_until": "2036-11-29T12:00:00.000000Z", "rfp": "RFP-DEMO-1",
     "schema": "reprogate.deposit/v1", "time": "2026-11-29T12:00:00.000000Z"}

Escrow events (legal hold, retention, evidence downloads) are logged as
``reprogate.escrow-event/v1`` records of the same encoding.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

EVIDENCE_SCHEMA: Final = "reprogate.evidence/v1"
DEPOSIT_SCHEMA: Final = "reprogate.deposit/v1"
EVENT_SCHEMA: Final = "reprogate.escrow-event/v1"

EVIDENCE_JSON: Final = "evidence.json"
CHECKPOINT: Final = "log/checkpoint"
LOG_KEY: Final = "log/key.pub"
BLOBS_DIR: Final = "blobs/"
ALLOWED_SIGNERS: Final = "keys/allowed_signers"
README: Final = "README.txt"

TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"


def format_time(moment: datetime) -> str:
    """``2026-11-29T12:00:00.000000Z``: UTC, microseconds, as the leaf says."""
    if moment.tzinfo is None:
        raise ValueError("a deposit time needs a time zone")
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def blob_name(sha256: str) -> str:
    return f"{BLOBS_DIR}{sha256}"
