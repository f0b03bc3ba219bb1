"""``bundle_ingest``: accepted bundles and their blobs, deduplication, storage
failures midway, request refusals, key states at upload time, DSSE."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from accounts.exceptions import ApplicationError
from accounts.models import AuditEvent, Organisation
from accounts.selectors import clock
from artifacts.models import Blob, Bundle, BundleFile
from artifacts.selectors.bundles import (
    bundle_latest_accepted_by_organisation,
    bundle_list_accepted_for,
)
from artifacts.services import ingest as ingest_module
from artifacts.services.blob_sweep import blob_sweep
from artifacts.services.fixity.report import grace_period
from artifacts.services.ingest import BundleStorageError
from artifacts.services.keys import signing_key_register, signing_key_revoke
from artifacts.storage.blobs import BlobWrite, blob_key, blob_open, blob_record_many
from artifacts.storage.bulk import LARGE_WRITE_CACHE_KIB
from procurement.models import Rfp
from tests.artifacts.corpus.build import (
    CORPUS_KEYS,
    good_files,
    good_manifest,
    manifest_bytes,
    noise,
)
from tests.artifacts.ingest_support import (
    FailingStorage,
    build_bundle,
    ingest,
    open_rfp,
    register_corpus_keys,
    sqlite_cache_size,
    storage_names,
    use_failing_storage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(vendor_a: Any, vendor_a_org: Organisation, vendor_b_org: Organisation) -> Rfp:
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    return open_rfp(vendor_a_org, vendor_b_org)


def _upload(rfp: Rfp, org: Organisation, user: Any, path: Path) -> Bundle:
    return ingest(rfp, org, user, path)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- accepted -----------------------------------------------------------------------


def test_accepted_bundle_records_files_blobs_signature_and_audit(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    path = build_bundle(tmp_path)

    bundle = _upload(rfp, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.ACCEPTED
    assert bundle.sha256 == _sha(path.read_bytes())
    assert bundle.size == path.stat().st_size
    assert bundle.signature_kind == "sshsig"
    assert bundle.signing_key.comment == "corpus-vendor_a"
    assert sorted(f.path for f in bundle.files.all()) == sorted(good_files())
    assert bundle.manifest["vendor"] == "acme-flash"
    assert bundle.completeness["schema"] == "reprogate.completeness/v1"
    event = AuditEvent.objects.get(action="bundle.accepted")
    assert event.organisation == vendor_a_org
    assert event.data["files"] == len(good_files())


def test_the_accept_transaction_writes_with_a_large_page_cache_on_sqlite(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Its thousands of rows stay in memory until the commit; the connection
    has SQLite's default again after it (``artifacts.storage.bulk``)."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite only: PostgreSQL has no per-connection page cache")
    seen: list[int] = []

    def record_many(stored: list[BlobWrite]) -> Any:
        seen.append(sqlite_cache_size())
        return blob_record_many(stored)

    monkeypatch.setattr(ingest_module, "blob_record_many", record_many)

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    assert bundle.status == Bundle.Status.ACCEPTED
    assert seen == [-LARGE_WRITE_CACHE_KIB]
    assert sqlite_cache_size() == -2000


def test_accepted_files_read_back_with_their_digests(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    files = good_files() | {"traces/big.bin": noise(3 << 20)}

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    for item in bundle.files.select_related("blob"):
        with blob_open(item.blob) as handle:
            data = handle.read()
        assert _sha(data) == item.sha256 == _sha(files[item.path])
        assert item.blob.storage_key == blob_key(item.sha256)
    with blob_open(bundle.archive_blob) as handle:
        assert _sha(handle.read()) == bundle.sha256


def test_storage_holds_only_content_keys_never_vendor_names(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    files = good_files() | {"reports/Résumé (final).md": b"# final\n"}

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    digests = {f.sha256 for f in bundle.files.all()} | {bundle.sha256}
    assert storage_names() == sorted(blob_key(sha) for sha in digests)
    assert Blob.objects.count() == len(digests)


def test_the_same_file_in_two_bundles_is_stored_once(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    shared = noise(100_000, "shared")
    first = build_bundle(tmp_path / "1", good_files() | {"traces/t.bin": shared})
    second = build_bundle(tmp_path / "2", {**good_files(), "traces/u.bin": shared})

    one = _upload(rfp, vendor_a_org, vendor_a, first)
    two = _upload(rfp, vendor_a_org, vendor_a, second)

    assert Blob.objects.filter(sha256=_sha(shared)).count() == 1
    blob_of = {
        f.path: f.blob_id for f in BundleFile.objects.all() if f.sha256 == _sha(shared)
    }
    assert len(set(blob_of.values())) == 1
    assert one.archive_blob_id != two.archive_blob_id
    assert len(storage_names()) == Blob.objects.count()


def test_two_identical_files_in_one_bundle_share_a_blob(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    files = good_files() | {"traces/a.json": b"{}\n", "traces/b.json": b"{}\n"}

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    a, b = (bundle.files.get(path=p) for p in ("traces/a.json", "traces/b.json"))
    assert a.blob_id == b.blob_id


def test_the_uploaded_file_and_the_spool_are_left_clean(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, settings: Any
) -> None:
    settings.BUNDLE_SPOOL_DIR = str(tmp_path / "spool")
    (tmp_path / "spool").mkdir()
    path = build_bundle(tmp_path / "in")
    before = path.read_bytes()

    _upload(rfp, vendor_a_org, vendor_a, path)

    assert path.read_bytes() == before
    assert list((tmp_path / "spool").iterdir()) == []


# --- storage failure midway: nothing recorded, the blobs left to the sweep -------


def _swept() -> list[str]:
    """What the storage holds once the sweep ran past the grace period."""
    blob_sweep(now=timezone.now() + grace_period() + timedelta(seconds=1))
    return storage_names()


def _bundle_keys(path: Path, files: dict[str, bytes]) -> set[str]:
    return {blob_key(_sha(data)) for data in [path.read_bytes(), *files.values()]}


@pytest.mark.parametrize("threads", [1, 4])  # one after the other, or in parallel
@pytest.mark.parametrize("fail_on", [1, 3, 7])
def test_storage_failure_midway_records_nothing_and_leaves_blobs_to_the_sweep(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    settings: Any, fail_on: int, threads: int,
) -> None:  # fmt: skip
    use_failing_storage(settings, fail_on)
    settings.BUNDLE_STORAGE_THREADS = threads
    path = build_bundle(tmp_path)

    with pytest.raises(BundleStorageError):
        _upload(rfp, vendor_a_org, vendor_a, path)

    assert set(storage_names()) <= _bundle_keys(path, good_files())
    assert len(storage_names()) <= fail_on - 1
    assert not Bundle.objects.exists()
    assert not Blob.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="bundle.").exists()
    assert _swept() == []


def test_storage_failure_keeps_blobs_of_earlier_bundles(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, settings: Any
) -> None:
    use_failing_storage(settings, fail_on=1000)
    first = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path / "1"))
    kept = storage_names()
    files = good_files() | {"traces/new.bin": noise(5000, "new")}
    storage = cast(FailingStorage, default_storage)
    storage.fail_on = storage.saves + 2  # the new file, then boom

    with pytest.raises(BundleStorageError):
        _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path / "2", files))

    assert set(kept) < set(storage_names())  # the new file, left to the sweep
    assert list(Bundle.objects.all()) == [first]
    assert _swept() == kept


def test_a_failure_inside_the_transaction_leaves_the_blobs_to_the_sweep(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    def broken_audit(**kwargs: Any) -> None:
        raise RuntimeError("audit trail unavailable")

    monkeypatch.setattr("artifacts.services.escrow.audit_record", broken_audit)
    path = build_bundle(tmp_path)

    with pytest.raises(RuntimeError, match="audit trail"):
        _upload(rfp, vendor_a_org, vendor_a, path)

    assert set(storage_names()) == _bundle_keys(path, good_files())
    assert not Bundle.objects.exists()
    assert not Blob.objects.exists()
    assert _swept() == []


# --- two uploads of the same bytes, one failing ------------------------------------


def test_a_failed_ingest_deletes_no_bytes_another_upload_found_stored(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Another upload of the same bytes finds this ingest's blobs stored (so it
    does not write them) while this one is failing, and records them after."""
    found: list[BlobWrite] = []

    def broken_audit(**kwargs: Any) -> None:
        for key in storage_names():  # the other upload finds the bytes stored
            digest, size = key.rsplit("/", 1)[-1], default_storage.size(key)
            found.append(BlobWrite(digest, size, key, written=False))
        raise RuntimeError("audit trail unavailable")

    monkeypatch.setattr("artifacts.services.escrow.audit_record", broken_audit)
    with pytest.raises(RuntimeError, match="audit trail"):
        _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    with transaction.atomic():  # the other upload records what it found
        rows = blob_record_many(found)

    assert len(rows) == len(found) == len(good_files()) + 1
    for blob in rows.values():
        with blob_open(blob) as stored:
            assert _sha(stored.read()) == blob.sha256
    assert _swept() == sorted(item.key for item in found)  # recorded: kept


def test_an_accepted_ingest_writes_back_bytes_swept_after_it_found_them(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A failed upload left a file's bytes without a row; the sweep removes them
    after this ingest found them there (and did not write them)."""
    files = good_files() | {"traces/shared.bin": noise(7000, "shared")}
    key = blob_key(_sha(files["traces/shared.bin"]))
    default_storage.save(key, ContentFile(files["traces/shared.bin"]))  # no row
    real_record = ingest_module._record_accepted

    def recorded_then_removed(*args: Any, **kwargs: Any) -> Bundle:
        bundle = real_record(*args, **kwargs)
        default_storage.delete(key)  # the sweep, which looked before the commit
        return bundle

    monkeypatch.setattr(ingest_module, "_record_accepted", recorded_then_removed)

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    with default_storage.open(key) as stored:
        assert stored.read() == files["traces/shared.bin"]


def test_an_ingest_past_half_the_grace_writes_back_its_own_blobs_swept(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    settings: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Blobs this ingest wrote, swept before their rows were committed: possible
    once the ingest took half the grace period (here 0 s: always)."""
    settings.ESCROW_FIXITY_GRACE_SECONDS = 0
    path = build_bundle(tmp_path)
    key = blob_key(_sha(path.read_bytes()))
    real_record = ingest_module._record_accepted

    def recorded_then_removed(*args: Any, **kwargs: Any) -> Bundle:
        bundle = real_record(*args, **kwargs)
        default_storage.delete(key)  # the archive, written by this ingest
        return bundle

    monkeypatch.setattr(ingest_module, "_record_accepted", recorded_then_removed)

    bundle = _upload(rfp, vendor_a_org, vendor_a, path)

    with blob_open(bundle.archive_blob) as stored:
        assert stored.read() == path.read_bytes()


# --- refusals of the request: no row at all ---------------------------------------


def _refused(rfp: Rfp, org: Organisation, user: Any, path: Path) -> str:
    with pytest.raises(ApplicationError) as refused:
        _upload(rfp, org, user, path)
    assert not Bundle.objects.exists()
    return refused.value.code


def test_an_organisation_not_invited_is_refused(
    tmp_path: Path, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = open_rfp()

    assert _refused(rfp, vendor_a_org, vendor_a, tmp_path / "x") == "not_invited"


@pytest.mark.parametrize("status", ["draft", "closed", "opened", "cancelled"])
def test_an_rfp_not_published_is_refused(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, status: str
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=status)
    rfp.refresh_from_db()

    code = _refused(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    assert code == "rfp_not_published"


def test_an_upload_after_the_deadline_is_refused(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, clock: Any
) -> None:
    clock.travel_to(rfp.submission_deadline)

    code = _refused(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    assert code == "deadline_passed"


# --- keys as they stood at upload time ----------------------------------------------


def test_a_key_valid_only_from_later_is_not_yet_valid(
    tmp_path: Path, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    signing_key_register(
        organisation=vendor_a_org,
        public_key_line=CORPUS_KEYS["vendor_a"].public_line,
        valid_from=clock.now() + timedelta(days=1),
        actor=vendor_a,
    )
    rfp = open_rfp(vendor_a_org)

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    assert [p["code"] for p in bundle.problems] == ["signature_key_not_yet_valid"]


def test_a_key_revoked_after_the_upload_does_not_change_the_verdict(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path))

    signing_key_revoke(key=bundle.signing_key, actor=vendor_a)

    bundle.refresh_from_db()
    assert bundle.status == Bundle.Status.ACCEPTED


# --- DSSE -------------------------------------------------------------------------


def test_a_dsse_signed_bundle_is_accepted(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    path = build_bundle(tmp_path, signature="dsse")

    bundle = _upload(rfp, vendor_a_org, vendor_a, path)

    assert bundle.problems == []
    assert bundle.signature_kind == "dsse"
    assert bundle.signing_key.comment == "corpus-vendor_a"


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("vendor_a_revoked", "signature_key_revoked"),
        ("vendor_a_expired", "signature_key_expired"),
        ("vendor_b", "dsse_signature_invalid"),
        ("stranger", "dsse_signature_invalid"),
    ],
)
def test_a_dsse_envelope_by_a_refused_key_says_why(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    key: str, code: str,
) -> None:  # fmt: skip
    path = build_bundle(tmp_path, key=key, signature="dsse")

    bundle = _upload(rfp, vendor_a_org, vendor_a, path)

    assert [p["code"] for p in bundle.problems] == [code]
    assert storage_names() == []


def test_both_signatures_must_verify(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    good = build_bundle(tmp_path / "good", signature="both")
    bad = build_bundle(tmp_path / "bad", signature="both", key="vendor_a_revoked")

    accepted = _upload(rfp, vendor_a_org, vendor_a, good)
    rejected = _upload(rfp, vendor_a_org, vendor_a, bad)

    assert accepted.status == Bundle.Status.ACCEPTED
    assert accepted.signature_kind == "sshsig"
    assert [p["path"] for p in rejected.problems] == [
        "manifest.json.sig",
        "manifest.json.dsse",
    ]


# --- limits of the record ---------------------------------------------------------


def test_a_path_too_long_to_store_is_a_problem(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    long_path = "traces/" + "/".join(["d" * 99] * 6) + ".json"
    files = good_files() | {long_path: b"{}\n"}

    bundle = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files))

    assert [p["code"] for p in bundle.problems] == ["path_invalid"]
    assert not BundleFile.objects.exists()


def test_thousands_of_problems_are_stored_truncated(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    manifest = manifest_bytes(good_manifest(good_files()))
    extra = {f"spam/{i:04d}": b"" for i in range(800)}
    path = build_bundle(tmp_path, good_files() | extra, manifest=manifest)

    bundle = _upload(rfp, vendor_a_org, vendor_a, path)

    assert len(bundle.problems) == 501
    assert bundle.problems[-1]["code"] == "problems_truncated"
    assert "300 more problems" in bundle.problems[-1]["message"]


# --- selectors for the bid page and the evaluation ---------------------------------


def test_latest_accepted_bundle_per_vendor_feeds_the_evaluation(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation,
    vendor_b: Any, vendor_b_org: Organisation,
) -> None:  # fmt: skip
    older = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path / "1"))
    second = good_files() | {"notes/v2.txt": b"second version\n"}  # other bytes
    newer = _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path / "2", second))
    _upload(rfp, vendor_a_org, vendor_a, build_bundle(tmp_path / "3", key="stranger"))
    bolt = build_bundle(tmp_path / "4", key="vendor_b")
    _upload(rfp, vendor_b_org, vendor_b, bolt)  # rejected: names acme-flash

    latest = bundle_latest_accepted_by_organisation(rfp)

    assert latest == {vendor_a_org.pk: newer}
    assert list(bundle_list_accepted_for(rfp, vendor_a_org)) == [newer, older]
