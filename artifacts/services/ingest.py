"""Bundle ingest: verify an uploaded archive and keep it (accepted) or keep only
the record of why not (rejected).

One pass over the archive (``inspect_bundle``) checks every entry, hashes every
file and copies each file's bytes into a local *spool* directory as it streams;
meanwhile a thread hashes the archive itself. Then the signature is checked
against the uploading organisation's keys as they stood when the upload arrived.

- Any problem: the spool is deleted, nothing was written to storage, and a
  rejected ``Bundle`` keeps every problem (``bundle.rejected`` audit event).
- No problem: the spooled files and the archive go to content-addressed storage
  (``artifacts.storage.blobs``) *before* the transaction, so slow storage never holds
  the database's write lock; then one transaction records the blobs, the bundle
  and its files with the ``bundle.accepted`` event, and deposits the bundle in
  escrow (``deposit_bundle``: a transparency-log entry, S3 Object Lock). If
  storage or the transaction fails midway, nothing is recorded; the blobs this
  ingest wrote stay where they are (another upload of the same bytes may have
  found them stored and be recording them) until the sweep (``blob_sweep``)
  deletes them, once no row refers to them past the grace period.

Refusals of the request itself (RFP not open for bids, organisation not invited)
raise ``ApplicationError`` before any work and leave no row. Nobody on the buyer
side is told anything: bundles are sealed like bids.

The RFP's buyer organisation may upload bundles of its own harness, signed with
its own keys: the baseline its lab runs on current infrastructure
(``is_baseline_upload``). They are no bid: taken whenever the RFP is not
cancelled, seen by the buyer side and never by a vendor.

The same bytes uploaded again by the same organisation to the same RFP, once
accepted, are answered with the accepted bundle (``IngestOutcome.created``
False): no second bundle, deposit or log entry, only a ``bundle.resubmitted``
audit row in the organisation's trail (who tried when). Checked before the scan
when the upload's digest is known, after it otherwise, and once more under the
RFP's lock when recording, so two identical uploads at once give one bundle.
A rejected upload is never answered this way: keys may have changed since.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from django.contrib.auth.models import User
from django.db import transaction

from accounts.exceptions import ApplicationError
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.conf import (
    bundle_archive_limits,
    bundle_environment_max_bytes,
    bundle_spool_dir,
    bundle_storage_is_local,
)
from artifacts.lib.archive import FileDigest
from artifacts.lib.completeness import (
    RequiredArtifact,
    RequiredMetric,
    completeness_report,
    environment_paths,
    stats_of,
)
from artifacts.lib.content import content_report
from artifacts.lib.manifest import (
    RESERVED_PATHS,
    BundleInspection,
    Manifest,
    inspect_bundle,
)
from artifacts.lib.manifest.vocabulary import (
    environment_manifest_path,
    environment_problems,
)
from artifacts.lib.problems import BundleProblem, ProblemList
from artifacts.lib.spool import MEMORY_BUDGET, Spool, Spooled
from artifacts.models import Bundle, BundleFile
from artifacts.selectors.retest_window import retest_window
from artifacts.selectors.updates import (
    accepted_bundle_with,
    update_problems,
    update_window,
)
from artifacts.services.bundle_signature import SignatureCheck, bundle_check_signature
from artifacts.services.escrow import deposit_bundle
from artifacts.services.ingest_storage import (
    BundleSpoolFullError,
    BundleStorageError,
    blob_jobs,
    blob_write_again,
    blobs_may_be_swept_since,
    blobs_store,
)
from artifacts.services.report_signatures import bundle_check_reports
from artifacts.services.update_hooks import update_accepted_run
from artifacts.storage.blobs import BlobWrite, blob_ensure, blob_record_many
from artifacts.storage.bulk import insert_rows, large_write_cache
from artifacts.storage.object_lock import EscrowStorageError
from procurement.models import Rfp
from procurement.selectors.rfps import SubmissionsClosed, rfp_submissions_closed
from procurement.services.bid_inputs import document_name

MAX_STORED_PROBLEMS: Final = 500
MAX_BUNDLE_PATH: Final = BundleFile._meta.get_field("path").max_length or 500


def _file_digest(path: str | os.PathLike[str]) -> FileDigest:
    with open(path, "rb") as handle:
        sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
        return FileDigest(handle.tell(), sha256)


# --- verification --------------------------------------------------------------------


@dataclass(frozen=True)
class _Verdict:
    archive: FileDigest
    inspection: BundleInspection
    signature: SignatureCheck
    problems: list[BundleProblem]

    @property
    def manifest(self) -> Manifest | None:
        return self.inspection.manifest


def _path_length_problems(inspection: BundleInspection) -> list[BundleProblem]:
    manifest = inspection.manifest
    return [
        BundleProblem(
            "path_invalid",
            f"The path is over {MAX_BUNDLE_PATH} characters, the most a stored "
            "bundle file may have.",
            item.path[:200],
        )
        for item in (manifest.files if manifest else ())
        if len(item.path) > MAX_BUNDLE_PATH
    ]


def _scan(
    rfp: Rfp, organisation: Organisation, path: str, spool: Spool,
    archive: FileDigest | None,
) -> tuple[BundleInspection, FileDigest]:  # fmt: skip
    """One pass over the archive into the spool; meanwhile (unless the caller
    hashed it while receiving it) a thread hashes the archive itself."""
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            digest = pool.submit(_file_digest, path) if archive is None else None
            inspection = inspect_bundle(
                path,
                bundle_archive_limits(),
                rfp=rfp.reference,
                vendor=organisation.slug,
                sink=spool.sink,
            )
            spool.flush()
            return inspection, archive or digest.result()  # type: ignore[union-attr]
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise BundleSpoolFullError(f"The spool is full: {error}") from error
        raise BundleStorageError(
            f"Reading or spooling the upload failed: {error}"
        ) from error


def _environment_problems(
    inspection: BundleInspection, spool: Spool
) -> list[BundleProblem]:
    """The structured fields of the environment manifest, checked (§3.6)."""
    files = inspection.result.files if inspection.result else ()
    path = environment_manifest_path([(f.path, f.kind) for f in files])
    if path is None:
        return []
    found = environment_problems(path, _read_small(spool.files.get(path)))
    return [BundleProblem("environment_schema", msg, at) for at, msg in found]


def _verify(
    *, rfp: Rfp, organisation: Organisation, upload_path: str, spool: Spool,
    at: datetime, archive: FileDigest | None,
) -> _Verdict:  # fmt: skip
    inspection, archive = _scan(rfp, organisation, upload_path, spool, archive)
    signature = bundle_check_signature(
        organisation=organisation, inspection=inspection, at=at
    )
    problems = ProblemList()
    problems.extend(inspection.problems)
    problems.extend(signature.problems)
    problems.extend(_path_length_problems(inspection))
    if inspection.manifest is not None:
        problems.extend(_update_problems(rfp, organisation, inspection.manifest, at))
    problems.extend(_environment_problems(inspection, spool))
    return _Verdict(archive, inspection, signature, problems.as_list())


def _update_problems(
    rfp: Rfp, organisation: Organisation, manifest: Manifest, at: datetime
) -> list[BundleProblem]:
    """An update bundle's ``supersedes`` where it was uploaded; after the
    award a bundle that is no update needs another way in (a re-test owed)."""
    other_window = rfp_submissions_closed(rfp, at) is None or bool(
        retest_window(rfp, organisation)
    )
    return update_problems(rfp, organisation, manifest, other_window=other_window)


# --- records -------------------------------------------------------------------------


def _stored_problems(problems: list[BundleProblem]) -> list[dict[str, str]]:
    kept = [p.as_dict() for p in problems[:MAX_STORED_PROBLEMS]]
    if len(problems) > MAX_STORED_PROBLEMS:
        more = len(problems) - MAX_STORED_PROBLEMS
        message = f"{more} more problems were found and are not listed."
        kept.append({"code": "problems_truncated", "message": message})
    return kept


def _manifest_fields(verdict: _Verdict) -> dict[str, Any]:
    raw = verdict.inspection.manifest_bytes
    return {
        "manifest": json.loads(raw) if raw is not None and verdict.manifest else None,
        "manifest_sha256": hashlib.sha256(raw).hexdigest() if raw is not None else "",
        "signature_kind": verdict.signature.kind,
        "signing_key": verdict.signature.key,
        "sha256": verdict.archive.sha256,
        "size": verdict.archive.size,
    }


def _audit_data(rfp: Rfp, bundle: Bundle, **extra: Any) -> dict[str, Any]:
    key = bundle.signing_key
    return {
        "rfp": rfp.reference,
        "sha256": bundle.sha256,
        "size": bundle.size,
        "signing_key": key.fingerprint if key else None,
        **extra,
    }


@transaction.atomic
def _record_rejected(
    *, rfp: Rfp, organisation: Organisation, uploaded_by: User,
    filename: str, verdict: _Verdict,
) -> Bundle:  # fmt: skip
    bundle = Bundle.objects.create(
        rfp=rfp,
        organisation=organisation,
        uploaded_by=uploaded_by,
        status=Bundle.Status.REJECTED,
        filename=filename,
        problems=_stored_problems(verdict.problems),
        **_manifest_fields(verdict),
    )
    codes = sorted({p.code for p in verdict.problems})
    audit_record(
        actor=uploaded_by,
        action="bundle.rejected",
        target=bundle,
        organisation=organisation,
        data=_audit_data(rfp, bundle, codes=codes),
    )
    return bundle


def _read_small(spooled: Spooled | None) -> bytes | None:
    if spooled is None or spooled.digest.size > bundle_environment_max_bytes():
        return None
    return spooled.read()


def _read(spool: Spool, path: str) -> bytes | None:
    """A spooled file's bytes for the content checks (which cap by listed size)."""
    spooled = spool.files.get(path)
    return spooled.read() if spooled is not None else None


def _completeness(
    rfp: Rfp, manifest: Manifest, spool: Spool, signed: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    return completeness_report(
        manifest=manifest,
        required_artifacts=[
            RequiredArtifact(a.kind, a.title, a.mandatory) for a in rfp.artifacts.all()
        ],
        required_metrics=[
            RequiredMetric(m.name, stats_of(m.stats)) for m in rfp.metrics.all()
        ],
        environment={
            path: _read_small(spool.files.get(path))
            for path in environment_paths(manifest)
        },
        content=content_report(manifest.files, lambda path: _read(spool, path)),
        signed=signed,
    )


def _lock_published(job: _Accepted) -> Rfp:
    """The RFP may have been closed or cancelled while the bundle was checked:
    the upload rule again, as of when the upload arrived (a bundle received
    before the deadline is taken although checking it ends after)."""
    rfp = Rfp.objects.select_for_update().get(pk=job.rfp.pk)
    closed = bundle_upload_closed(rfp, job.organisation, now=job.received_at)
    if closed is not None:
        raise ApplicationError(closed.message, code=closed.code)
    return rfp


@dataclass(frozen=True)
class _Accepted:
    rfp: Rfp
    organisation: Organisation
    uploaded_by: User
    filename: str
    verdict: _Verdict
    completeness: dict[str, Any]
    received_at: datetime


@dataclass(frozen=True)
class IngestOutcome:
    bundle: Bundle
    created: bool  # False: the same bytes were accepted before (``bundle``)


class _AcceptedBefore(Exception):
    def __init__(self, bundle: Bundle) -> None:
        super().__init__(str(bundle))
        self.bundle = bundle


def _accepted_before(
    rfp: Rfp, organisation: Organisation, sha256: str
) -> Bundle | None:
    return Bundle.objects.filter(
        rfp=rfp, organisation=organisation, sha256=sha256,
        status=Bundle.Status.ACCEPTED,
    ).order_by("created_at").first()  # fmt: skip


@transaction.atomic
def _record_resubmitted(
    bundle: Bundle, uploaded_by: User, filename: str
) -> IngestOutcome:
    audit_record(
        actor=uploaded_by,
        action="bundle.resubmitted",
        target=bundle,
        organisation=bundle.organisation,
        data=_audit_data(bundle.rfp, bundle, filename=filename),
    )
    return IngestOutcome(bundle, created=False)


@transaction.atomic
def _record_accepted(job: _Accepted, stored: list[BlobWrite]) -> Bundle:
    rfp, manifest = _lock_published(job), job.verdict.manifest
    assert manifest is not None  # noqa: S101 - accepted bundles have one
    earlier = _accepted_before(rfp, job.organisation, job.verdict.archive.sha256)
    if earlier is not None:  # an identical upload committed meanwhile
        raise _AcceptedBefore(earlier)
    blobs = blob_record_many(stored)
    superseded = (
        accepted_bundle_with(rfp, job.organisation, manifest.supersedes)
        if manifest.supersedes
        else None
    )
    bundle = Bundle.objects.create(
        rfp=rfp,
        organisation=job.organisation,
        uploaded_by=job.uploaded_by,
        status=Bundle.Status.ACCEPTED,
        filename=job.filename,
        archive_blob=blobs[job.verdict.archive.sha256],
        completeness=job.completeness,
        supersedes=superseded,
        **_manifest_fields(job.verdict),
    )
    insert_rows(
        BundleFile,
        ("bundle", "path", "kind", "size", "sha256", "blob"),
        ((bundle.pk, f.path, f.kind, f.size, f.sha256, blobs[f.sha256].pk)
         for f in manifest.files),
    )  # fmt: skip
    # last: it appends to the log, which serialises every deposit; its audit
    # row is the acceptance's one ``bundle.accepted`` row, naming the deposit
    files = [(f.path, blobs[f.sha256]) for f in manifest.files]
    accepted = _audit_data(rfp, bundle, files=len(manifest.files))
    if superseded is not None:
        accepted["supersedes"] = superseded.sha256
    deposit_bundle(bundle=bundle, actor=job.uploaded_by, files=files, accepted=accepted)
    if superseded is not None:  # re-open what the update calls into question
        update_accepted_run(bundle=bundle, superseded=superseded, actor=job.uploaded_by)
    return bundle


def _keep(job: _Accepted, spool: Spool, upload: _Upload) -> Bundle:
    manifest = job.verdict.manifest
    assert manifest is not None  # noqa: S101 - accepted bundles have one
    jobs = blob_jobs(manifest, spool, job.verdict.archive, upload.path, upload.consume)
    started = time.monotonic()
    # A failure leaves the blobs written for the sweep (another upload may use them).
    recorded, fresh = blobs_store(jobs)
    try:
        with large_write_cache(BundleFile):
            bundle = _record_accepted(job, recorded + fresh)
    except EscrowStorageError as error:
        raise BundleStorageError(f"Escrowing the bundle failed: {error}") from error
    # Bytes found stored without a row may have been swept since (the spool still
    # has them); so may bytes written here, if this took half the grace or more.
    written_too = blobs_may_be_swept_since(started)
    blob_ensure(fresh, blob_write_again(jobs), written_too=written_too)
    return bundle


# --- the service ---------------------------------------------------------------------


def is_baseline_upload(rfp: Rfp, organisation: Organisation) -> bool:
    """The RFP's buyer uploads a bundle of its own harness: the baseline its lab
    runs on current infrastructure (no bid; see ``bundle_upload_closed``)."""
    return organisation.pk == rfp.buyer_organisation_id


def bundle_refuse_upload(*, rfp: Rfp, organisation: Organisation) -> None:
    """Raise ``ApplicationError`` unless ``organisation`` may upload to ``rfp`` now."""
    baseline = is_baseline_upload(rfp, organisation)
    if not baseline and not rfp.invited_vendors.filter(pk=organisation.pk).exists():
        raise ApplicationError(
            f"{organisation} is not invited to {rfp.reference}.", code="not_invited"
        )
    closed = bundle_upload_closed(rfp, organisation)  # the upload pages' rule too
    if closed is not None:
        raise ApplicationError(closed.message, code=closed.code)


def bundle_upload_closed(
    rfp: Rfp, organisation: Organisation, now: datetime | None = None
) -> SubmissionsClosed | None:
    """Why ``organisation`` cannot upload to ``rfp`` at ``now`` (default: the
    clock now), None when it can: while the RFP takes submissions
    (``rfp_submissions_closed``), or, unless it was cancelled, with an open
    re-test to answer (``retest_window``) or, for the awarded vendor, an update
    to deposit (``update_window``: the manifest must then say what it updates).
    The buyer's own baseline bundles are not bids: they are taken whenever the
    RFP is not cancelled."""
    closed = rfp_submissions_closed(rfp, now)
    if closed is None:
        return None
    if is_baseline_upload(rfp, organisation):
        return closed if rfp.status_now == Rfp.Status.CANCELLED else None
    if rfp.status_now == Rfp.Status.CANCELLED:
        return closed
    if retest_window(rfp, organisation) or update_window(rfp, organisation):
        return None
    return closed


@dataclass(frozen=True)
class _Upload:
    path: str
    consume: bool  # storage may move the file instead of copying it


def bundle_ingest(
    *,
    rfp: Rfp,
    organisation: Organisation,
    uploaded_by: User,
    upload_path: str | os.PathLike[str],
    filename: str,
    archive_digest: FileDigest | None = None,
    consume_upload: bool = False,
) -> Bundle:
    """The recorded bundle (``bundle_ingest_outcome``'s)."""
    return bundle_ingest_outcome(
        rfp=rfp, organisation=organisation, uploaded_by=uploaded_by,
        upload_path=upload_path, filename=filename, archive_digest=archive_digest,
        consume_upload=consume_upload,
    ).bundle  # fmt: skip


def bundle_ingest_outcome(
    *,
    rfp: Rfp,
    organisation: Organisation,
    uploaded_by: User,
    upload_path: str | os.PathLike[str],
    filename: str,
    archive_digest: FileDigest | None = None,
    consume_upload: bool = False,
) -> IngestOutcome:
    """Verify the archive at ``upload_path`` and record the verdict (see the
    module docstring). ``archive_digest``: the archive's size and SHA-256 if the
    caller computed them while receiving it (else computed here, during the
    scan). ``consume_upload``: the file is a temporary upload that an accepted
    bundle's storage may move instead of copying (else it is only read)."""
    received_at = clock.now()
    bundle_refuse_upload(rfp=rfp, organisation=organisation)
    name = document_name(filename)
    if archive_digest is not None and (
        earlier := _accepted_before(rfp, organisation, archive_digest.sha256)
    ):
        return _record_resubmitted(earlier, uploaded_by, name)
    try:
        bundle = _ingest(
            rfp, organisation, uploaded_by, name, received_at,
            _Upload(os.fspath(upload_path), consume_upload), archive_digest,
        )  # fmt: skip
    except _AcceptedBefore as found:
        return _record_resubmitted(found.bundle, uploaded_by, name)
    return IngestOutcome(bundle, created=True)


def _ingest(
    rfp: Rfp, organisation: Organisation, uploaded_by: User,
    name: str, received_at: datetime, upload: _Upload,
    archive_digest: FileDigest | None,
) -> Bundle:  # fmt: skip
    # Local storage links spool files into place: every file goes to the spool,
    # created by its writer thread while the scan goes on (measured at 1 GiB with
    # 2,000 small files: ratio 0.27-0.34 this way, 0.20-0.25 keeping them in memory).
    memory = 0 if bundle_storage_is_local() else MEMORY_BUDGET
    with Spool(bundle_spool_dir(), skip=RESERVED_PATHS, memory_budget=memory) as spool:
        verdict = _verify(
            rfp=rfp, organisation=organisation, upload_path=upload.path, spool=spool,
            at=received_at, archive=archive_digest,
        )  # fmt: skip
        if verdict.problems or verdict.manifest is None:
            return _record_rejected(
                rfp=rfp, organisation=organisation, uploaded_by=uploaded_by,
                filename=name, verdict=verdict,
            )  # fmt: skip
        earlier = _accepted_before(rfp, organisation, verdict.archive.sha256)
        if earlier is not None:
            raise _AcceptedBefore(earlier)
        signed = bundle_check_reports(
            organisation=organisation, manifest=verdict.manifest, spool=spool,
            at=received_at,
        )  # fmt: skip
        completeness = _completeness(rfp, verdict.manifest, spool, signed)
        job = _Accepted(
            rfp, organisation, uploaded_by, name, verdict, completeness, received_at
        )
        return _keep(job, spool, upload)
