"""Content-addressed blobs and bundle ingest on S3: django-storages and boto3
against moto's server on loopback (tests/s3/conftest.py), over real HTTP."""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Blob, Bundle
from artifacts.services.blob_sweep import blob_sweep
from artifacts.services.fixity.report import grace_period
from artifacts.services.ingest import BundleStorageError
from artifacts.storage.blobs import (
    blob_key,
    blob_open,
    blob_put,
    blob_write,
)
from procurement.models import Rfp
from tests.artifacts.corpus.build import (
    good_files,
    good_manifest,
    manifest_bytes,
    noise,
)
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    open_rfp,
    register_corpus_keys,
)
from tests.s3.conftest import S3Setup, s3_options

pytestmark = pytest.mark.django_db


def _file(tmp_path: Path, data: bytes, name: str = "data.bin") -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_blob_put_stores_the_bytes_under_the_content_key(
    s3_storage: S3Setup, tmp_path: Path
) -> None:
    path, digest = _file(tmp_path, b"fio trace bytes")

    blob = blob_put(path, digest, 15)

    assert s3_storage.object_keys() == [f"blobs/{digest[:2]}/{digest}"]
    assert s3_storage.read(blob.storage_key) == b"fio trace bytes"


def test_blob_put_of_the_same_bytes_twice_stores_them_once(
    s3_storage: S3Setup, tmp_path: Path
) -> None:
    first, digest = _file(tmp_path, b"same bytes", "a.json")
    second, _ = _file(tmp_path, b"same bytes", "b.json")

    one = blob_put(first, digest, 10)
    two = blob_put(second, digest, 10)

    assert one.pk == two.pk
    assert Blob.objects.count() == 1
    assert s3_storage.object_keys() == [blob_key(digest)]


def test_blob_open_reads_a_multipart_upload_back(
    s3_storage: S3Setup, tmp_path: Path
) -> None:
    data = os.urandom(12 * 1024 * 1024)  # above boto3's 8 MiB multipart threshold
    path, digest = _file(tmp_path, data)

    blob = blob_put(path, digest, len(data))

    with blob_open(blob) as stored:
        assert hashlib.sha256(stored.read()).hexdigest() == digest
    assert s3_storage.client.head_object(
        Bucket=s3_storage.bucket, Key=blob.storage_key
    )["ContentLength"] == len(data)


def _past_the_grace() -> datetime:
    return timezone.now() + grace_period() + timedelta(seconds=1)


def test_blob_sweep_deletes_what_no_row_refers_to_past_the_grace(
    s3_storage: S3Setup, tmp_path: Path
) -> None:
    path, digest = _file(tmp_path, b"written, never recorded")
    stored = blob_write(path, digest, 23)

    early = blob_sweep()
    late = blob_sweep(now=_past_the_grace())

    assert stored.written
    assert (early.deleted, early.recent) == ([], 1)
    assert late.deleted == [stored.key]
    assert s3_storage.object_keys() == []


def test_blob_sweep_keeps_a_recorded_blob(s3_storage: S3Setup, tmp_path: Path) -> None:
    path, digest = _file(tmp_path, b"recorded by another upload")
    blob = blob_put(path, digest, 26)

    report = blob_sweep(now=_past_the_grace())

    assert report.deleted == []
    assert s3_storage.object_keys() == [blob.storage_key]


def test_blob_sweep_leaves_object_locked_versions_alone(
    s3_storage: S3Setup, settings: Any
) -> None:
    options = s3_options(s3_storage.endpoint, s3_storage.locked_bucket)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
    }
    bucket, client = s3_storage.locked_bucket, s3_storage.client
    held, retained, free = (blob_key(_sha(b)) for b in (b"held", b"kept", b"free"))
    client.put_object(
        Bucket=bucket, Key=held, Body=b"held", ObjectLockLegalHoldStatus="ON"
    )
    until = timezone.now() + timedelta(days=30)
    client.put_object(
        Bucket=bucket, Key=retained, Body=b"kept",
        ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until,
    )  # fmt: skip
    client.put_object(Bucket=bucket, Key=free, Body=b"free")

    report = blob_sweep(now=_past_the_grace())

    assert (report.deleted, report.locked) == ([free], 2)
    assert s3_storage.object_keys(bucket) == sorted([held, retained])
    versions = client.list_object_versions(Bucket=bucket)["Versions"]
    assert sorted(v["Key"] for v in versions) == sorted([held, retained, free])


def test_blob_write_replaces_a_truncated_stray_object(
    s3_storage: S3Setup, tmp_path: Path
) -> None:
    path, digest = _file(tmp_path, b"the complete content")
    key = blob_key(digest)
    s3_storage.client.put_object(Bucket=s3_storage.bucket, Key=key, Body=b"the comp")

    stored = blob_write(path, digest, 20)

    assert stored.written
    assert s3_storage.object_keys() == [key]
    assert s3_storage.read(key) == b"the complete content"


def test_blob_put_works_on_an_object_lock_bucket(
    s3_storage: S3Setup, settings: Any, tmp_path: Path
) -> None:
    options = s3_options(s3_storage.endpoint, s3_storage.locked_bucket)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
    }
    path, digest = _file(tmp_path, b"escrowed bytes")

    blob = blob_put(path, digest, 14)

    head = s3_storage.client.head_object(
        Bucket=s3_storage.locked_bucket, Key=blob.storage_key
    )
    assert head["VersionId"]  # Object Lock buckets are versioned
    assert s3_storage.object_keys() == []
    assert s3_storage.object_keys(s3_storage.locked_bucket) == [blob.storage_key]


# --- bundle ingest on S3 --------------------------------------------------------------


@pytest.fixture
def rfp(vendor_a: Any, vendor_a_org: Organisation) -> Rfp:
    register_corpus_keys([vendor_a_org], vendor_a)
    return open_rfp(vendor_a_org)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_accepted_bundle_stores_content_keys_only(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    files = good_files() | {"reports/Résumé (final).md": b"# final\n"}
    path = build_bundle(tmp_path, files)

    bundle = ingest(rfp, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.ACCEPTED
    digests = {_sha(data) for data in files.values()} | {_sha(path.read_bytes())}
    keys = s3_storage.object_keys()
    assert keys == sorted(blob_key(sha) for sha in digests)
    names = {part for name in files for part in name.split("/")} | {"manifest.json"}
    assert not any(part in names for key in keys for part in key.split("/"))


def test_the_same_file_in_two_bundles_is_stored_once_in_the_bucket(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    shared = noise(100_000, "shared")
    first = build_bundle(tmp_path / "1", good_files() | {"traces/t.bin": shared})
    second = build_bundle(tmp_path / "2", good_files() | {"traces/u.bin": shared})

    ingest(rfp, vendor_a_org, vendor_a, first)
    ingest(rfp, vendor_a_org, vendor_a, second)

    keys = s3_storage.object_keys()
    assert keys.count(blob_key(_sha(shared))) == 1
    assert len(keys) == len(set(keys)) == Blob.objects.count() == len(good_files()) + 3
    assert s3_storage.read(blob_key(_sha(shared))) == shared


def test_accepted_files_stream_back_from_the_bucket(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    files = good_files() | {"traces/big.bin": noise(9 << 20, "big")}  # multipart
    bundle = ingest(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    item = bundle.files.select_related("blob").get(path="traces/big.bin")
    with blob_open(item.blob) as handle:
        hasher = hashlib.sha256()
        for chunk in handle.chunks(64 * 1024):
            hasher.update(chunk)

    assert hasher.hexdigest() == item.sha256 == _sha(files["traces/big.bin"])


def test_rejected_ingest_leaves_the_bucket_empty(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    files = good_files()
    manifest = manifest_bytes(good_manifest(files))
    tampered = files | {"traces/fio-randread.json": b'{"jobs": [{"iops": 9e9}]}\n'}

    bundle = ingest(
        rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, tampered, manifest=manifest)
    )

    assert bundle.status == Bundle.Status.REJECTED
    assert "digest_mismatch" in {p["code"] for p in bundle.problems}
    assert s3_storage.object_keys() == []
    assert not Blob.objects.exists()


def test_an_unreachable_bucket_fails_the_ingest_and_records_nothing(
    s3_storage: S3Setup, settings: Any, tmp_path: Path, rfp: Rfp, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    options = s3_options(s3_storage.endpoint, "no-such-bucket")
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
    }

    with pytest.raises(BundleStorageError):
        ingest(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    assert not Bundle.objects.exists()
    assert not Blob.objects.exists()
    assert s3_storage.object_keys() == []


# --- through the API: upload, then download -----------------------------------------


def _upload(user: Any, rfp: Rfp, path: Path) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    with path.open("rb") as handle:
        return client.post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/",
            {"file": handle},
            format="multipart",
        )


def test_api_upload_stores_on_s3_and_the_download_streams_the_archive(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    files = good_files() | {"traces/big.bin": noise(9 << 20, "api")}
    path = build_bundle(tmp_path, files)
    uploaded = _upload(vendor_a, rfp, path)
    assert uploaded.status_code == 201, uploaded.content
    client = APIClient()
    client.force_authenticate(vendor_a)

    response = client.get(uploaded.json()["download_url"])

    assert response.status_code == 200
    assert response.streaming
    assert response.getvalue() == path.read_bytes()
    assert s3_storage.read(blob_key(_sha(path.read_bytes()))) == path.read_bytes()
    assert all(key.startswith("blobs/") for key in s3_storage.object_keys())


def test_api_upload_of_a_rejected_bundle_leaves_the_bucket_empty(
    s3_storage: S3Setup, tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    response = _upload(vendor_a, rfp, build_bundle(tmp_path, key="stranger"))

    assert response.status_code == 422
    assert "signature_key_not_allowed" in {
        p["code"] for p in response.json()["problems"]
    }
    assert s3_storage.object_keys() == []
