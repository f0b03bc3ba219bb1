"""Escrow fixtures: the log's key in a temporary file, an RFP with the corpus
keys registered, and a real bundle ingested, which deposits it
(``deposit_bundle`` inside the accept transaction)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle, Deposit
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, good_manifest, manifest_bytes
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    upload_rfp,  # noqa: F401 (fixture rfp)
)


@pytest.fixture(autouse=True)
def _log_key(settings: Any, tmp_path: Path) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    settings.REPROGATE_LOG_ORIGIN = "escrow.test/log"


def blobs_on_disk(settings: Any, tmp_path: Path) -> Path:
    """Blobs on disk under ``tmp_path/media``, as the embedded default stores
    them; returns the folder."""
    media = tmp_path / "media"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": str(media)},
        },
    }
    return media


def ingest_and_deposit(
    directory: Path,
    rfp: Rfp,
    organisation: Organisation,
    user: Any,
    *,
    key: str = "vendor_a",
    extra_files: dict[str, bytes] | None = None,
) -> Deposit:
    """Ingest a real bundle of ``organisation`` for ``rfp`` (the corpus's good
    files plus ``extra_files``, signed with corpus ``key``): its deposit."""
    files = {**good_files(), **(extra_files or {})}
    manifest = good_manifest(files, rfp=rfp.reference, vendor=organisation.slug)
    path = build_bundle(directory, files, key=key, manifest=manifest_bytes(manifest))
    bundle = ingest(rfp, organisation, user, path)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return Deposit.objects.get(bundle=bundle)


@pytest.fixture
def deposit(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> Deposit:
    return ingest_and_deposit(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)


def open_bids(rfp: Rfp) -> Rfp:
    """The RFP past its deadline with its bids opened (state set directly)."""
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)
    rfp.refresh_from_db()
    return rfp
