"""Artifacts services: every write of signing keys and bundles goes through one."""

from __future__ import annotations

from artifacts.services.bundle_signature import bundle_check_signature
from artifacts.services.downloads import bundle_record_download
from artifacts.services.ingest import (
    BundleStorageError,
    IngestOutcome,
    bundle_ingest,
    bundle_ingest_outcome,
    bundle_refuse_upload,
    bundle_upload_closed_for,
)
from artifacts.services.keys import (
    allowed_signers_text,
    signing_key_register,
    signing_key_revoke,
)

__all__ = [
    "BundleStorageError",
    "IngestOutcome",
    "allowed_signers_text",
    "bundle_check_signature",
    "bundle_ingest",
    "bundle_ingest_outcome",
    "bundle_record_download",
    "bundle_refuse_upload",
    "bundle_upload_closed_for",
    "signing_key_register",
    "signing_key_revoke",
]
