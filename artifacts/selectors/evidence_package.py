"""An evidence package's contents (docs/architecture.md), ready to stream: the small
files are made up front (their bytes are named in the download's log entry), the
blobs are read from storage by version id only while the zip is sent.

A blob that storage cannot give back (deleted or damaged behind escrow's back:
``manage.py escrow_verify`` reports it too) is left out with an error in the log,
so that the package stays a readable zip and the offline verifier names exactly
that blob as missing, instead of the download breaking off midway."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from artifacts.lib.canonical import canonical_json
from artifacts.lib.evidence.layout import (
    ALLOWED_SIGNERS,
    CHECKPOINT,
    EVIDENCE_JSON,
    EVIDENCE_SCHEMA,
    LOG_KEY,
    README,
    blob_name,
)
from artifacts.lib.evidence.zipstream import Member, bytes_member, stream_zip
from artifacts.models import Blob, Bundle, Deposit, EscrowEvent
from artifacts.storage.object_lock import deposit_blob_open

logger = logging.getLogger(__name__)


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def log_entry_json(index: int, leaf: bytes, proof: Sequence[bytes]) -> dict[str, Any]:
    return {
        "leaf_index": index,
        "leaf": _b64(leaf),
        "inclusion_proof": [_b64(h) for h in proof],
    }


def bundle_package_filename(bundle: Bundle) -> str:
    stem = f"{bundle.rfp.reference}-{bundle.organisation.slug}-{bundle.sha256[:12]}"
    return f"evidence-{stem}.zip"


@dataclass(frozen=True)
class EvidencePackage:
    subject: str  # what the package is of, for the log ("bundle <id>")
    filename: str
    deposits: list[Deposit]
    receipt: EscrowEvent
    origin: str
    checkpoint_size: int
    checkpoint_note: str
    verifier_key: str
    allowed_signers: bytes
    readme: bytes
    evidence_json: bytes
    blobs: list[Blob]  # each digest once, in the leaves' order
    # the files beyond the standard layout (bound by the receipt too)
    extra_files: tuple[tuple[str, bytes], ...] = ()

    def members(self) -> Iterator[Member]:
        yield bytes_member(EVIDENCE_JSON, self.evidence_json)
        yield bytes_member(CHECKPOINT, self.checkpoint_note.encode("utf-8"))
        yield bytes_member(LOG_KEY, key_file(self.verifier_key))
        yield bytes_member(ALLOWED_SIGNERS, self.allowed_signers)
        for name, data in self.extra_files:
            yield bytes_member(name, data)
        yield bytes_member(README, self.readme)
        for blob in self.blobs:
            try:
                handle = deposit_blob_open(blob)
            except Exception:
                logger.exception(
                    "evidence package of %s: blob %s cannot be read from "
                    "storage and is left out (run manage.py escrow_verify)",
                    self.subject,
                    blob.sha256,
                )
                continue
            yield Member(
                blob_name(blob.sha256),
                lambda handle=handle: handle,  # type: ignore[misc]
                blob.size,
                compress=False,  # archives are compressed already
            )

    def stream(self) -> Iterator[bytes]:
        return stream_zip(self.members())


def key_file(verifier_key: str) -> bytes:
    return (verifier_key.strip() + "\n").encode("ascii")


def evidence_document(
    *, origin: str, deposits: list[dict[str, Any]], download: dict[str, Any]
) -> bytes:
    return canonical_json(
        {
            "schema": EVIDENCE_SCHEMA,
            "origin": origin,
            "deposits": deposits,
            "checkpoint": CHECKPOINT,
            "download": download,
        }
    )
