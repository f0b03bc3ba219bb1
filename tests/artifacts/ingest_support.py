"""Shared pieces of the ingest tests: the RFP the corpus is uploaded to, the
corpus keys registered as ``CORPUS_KEYS`` says, and what the storage holds."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import InMemoryStorage, default_storage
from django.db import connection

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.lib.signatures import dsse
from artifacts.lib.signatures.sshkeys import load_private_key
from artifacts.models import Bundle
from artifacts.services.ingest import bundle_ingest
from artifacts.services.keys import signing_key_register, signing_key_revoke
from procurement.models import Rfp
from tests.artifacts.corpus.build import (
    CORPUS_KEYS,
    UPLOAD_RFP,
    Entry,
    corpus_key,
    good_files,
    good_manifest,
    manifest_bytes,
    sign,
    write_tar,
)
from tests.procurement.factories import RfpFactory


def open_rfp(
    *vendors: Organisation,
    reference: str = UPLOAD_RFP,
    buyer: Organisation | None = None,
) -> Rfp:
    """A published RFP taking bids for two weeks, ``vendors`` invited."""
    extra = {"buyer_organisation": buyer} if buyer is not None else {}
    return RfpFactory.create(
        published=True, reference=reference, invited=list(vendors), **extra
    )


@pytest.fixture(name="rfp")
def upload_rfp(
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer_org: Organisation,
) -> Rfp:
    """The ``rfp`` fixture of the tests that ingest corpus bundles: an open RFP of
    ``buyer_org`` inviting both vendors, every corpus key registered. A test module
    takes it by importing ``upload_rfp``."""
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    return open_rfp(vendor_a_org, vendor_b_org, buyer=buyer_org)


def register_corpus_keys(organisations: list[Organisation], actor: Any) -> None:
    """Register each corpus key to its organisation; revoke or expire it as told."""
    by_slug = {org.slug: org for org in organisations}
    now = clock.now()
    for key in CORPUS_KEYS.values():
        organisation = by_slug.get(key.organisation or "")
        if organisation is None:
            continue
        window: dict[str, Any] = {"valid_from": now - timedelta(days=30)}
        if key.state == "expired":
            window["valid_until"] = now - timedelta(days=1)
        registered = signing_key_register(
            organisation=organisation,
            public_key_line=key.public_line,
            actor=actor,
            **window,
        )
        if key.state == "revoked":
            signing_key_revoke(key=registered, actor=actor)


def ingest(rfp: Rfp, organisation: Organisation, user: Any, path: Path) -> Bundle:
    return bundle_ingest(
        rfp=rfp,
        organisation=organisation,
        uploaded_by=user,
        upload_path=path,
        filename=path.name,
    )


def storage_names(directory: str = "") -> list[str]:
    """Every file in the default storage, recursively."""
    folders, files = default_storage.listdir(directory)
    names = [f"{directory}/{name}".lstrip("/") for name in files]
    for folder in folders:
        names += storage_names(f"{directory}/{folder}".lstrip("/"))
    return sorted(names)


class FailingStorage(InMemoryStorage):
    """Saves ``fail_on - 1`` files, then raises on every save (a storage outage
    midway through an ingest)."""

    def __init__(self, *, fail_on: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_on, self.saves = fail_on, 0

    def _save(self, name: str, content: Any) -> str:
        self.saves += 1
        if self.saves >= self.fail_on:
            raise OSError(f"storage unavailable (save #{self.saves})")
        return super()._save(name, content)  # type: ignore[misc]  # private: unstubbed


def use_failing_storage(settings: Any, fail_on: int) -> None:
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "tests.artifacts.ingest_support.FailingStorage",
            "OPTIONS": {"fail_on": fail_on},
        },
    }


def build_bundle(
    directory: Path,
    files: dict[str, bytes] | None = None,
    *,
    key: str = "vendor_a",
    signature: str = "sshsig",
    manifest: bytes | None = None,
    name: str = "bundle.tar.gz",
) -> Path:
    """A tar.gz bundle of ``files`` (the corpus's good files by default), signed
    with a corpus key as SSHSIG, DSSE or both."""
    directory.mkdir(parents=True, exist_ok=True)
    files = good_files() if files is None else files
    manifest = manifest or manifest_bytes(good_manifest(files))
    entries = [Entry("manifest.json", manifest)]
    if signature in ("sshsig", "both"):
        entries.append(Entry("manifest.json.sig", sign(manifest, directory, key=key)))
    if signature in ("dsse", "both"):
        private = load_private_key(corpus_key(key).private_openssh())
        entries.append(Entry("manifest.json.dsse", dsse.sign(manifest, private)))
    entries += [Entry(path, data) for path, data in sorted(files.items())]
    return write_tar(directory / name, entries)


def sqlite_cache_size() -> int:
    """The default connection's ``PRAGMA cache_size`` (SQLite only; negative:
    KiB, as ``artifacts.storage.bulk.large_write_cache`` sets it)."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        return int(cursor.fetchone()[0])
