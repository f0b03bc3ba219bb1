"""The identical bundle uploaded twice (same bytes, same RFP, same vendor) is
answered with the bundle accepted the first time: no second bundle, deposit or
log entry, one ``bundle.resubmitted`` audit row. The API answers 200 with its
id (201 only for a new bundle); the upload page leads to it with a message.
A rejected upload is checked again (keys may have been registered since)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

import artifacts.services.ingest as ingest_module
from accounts.models import AuditEvent, Organisation
from artifacts.lib.archive import FileDigest
from artifacts.models import Blob, Bundle, Deposit, LogEntry
from artifacts.services.ingest import bundle_ingest_outcome
from procurement.models import Rfp
from tests.artifacts.ingest_support import (
    build_bundle,
    open_rfp,
    register_corpus_keys,
    storage_names,
    upload_rfp,  # noqa: F401 (fixture rfp)
)

pytestmark = pytest.mark.django_db


def _ingest(rfp: Rfp, org: Organisation, user: Any, path: Path, **kw: Any) -> Any:
    return bundle_ingest_outcome(
        rfp=rfp, organisation=org, uploaded_by=user, upload_path=path,
        filename=path.name, **kw,
    )  # fmt: skip


def _digest(path: Path) -> FileDigest:
    import hashlib

    data = path.read_bytes()
    return FileDigest(len(data), hashlib.sha256(data).hexdigest())


def _one_of_each() -> None:
    assert Bundle.objects.count() == 1
    assert Deposit.objects.count() == 1
    assert LogEntry.objects.count() == 1


@pytest.mark.parametrize("digest_known", [True, False])
def test_the_same_bytes_again_answer_with_the_accepted_bundle(
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    vendor_a_org: Organisation,
    digest_known: bool,
) -> None:
    path = build_bundle(tmp_path)
    first = _ingest(rfp, vendor_a_org, vendor_a, path)
    extra = {"archive_digest": _digest(path)} if digest_known else {}

    again = _ingest(rfp, vendor_a_org, vendor_a, path, **extra)

    assert (first.created, again.created) == (True, False)
    assert again.bundle == first.bundle
    _one_of_each()
    audit = AuditEvent.objects.get(action="bundle.resubmitted")
    assert audit.organisation == vendor_a_org
    assert audit.data["sha256"] == first.bundle.sha256


def test_an_identical_upload_committed_meanwhile_is_found_under_the_lock(
    tmp_path: Path,
    rfp: Rfp,
    vendor_a: Any,
    vendor_a_org: Organisation,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both uploads passed the early checks; the second finds the first's
    bundle when it records, keeps nothing and answers with it."""
    path = build_bundle(tmp_path)
    first = _ingest(rfp, vendor_a_org, vendor_a, path).bundle
    stored, real = storage_names(), ingest_module._accepted_before
    looks: list[int] = []

    def not_yet_then_real(*args: Any) -> Bundle | None:
        looks.append(1)
        return None if len(looks) == 1 else real(*args)

    monkeypatch.setattr(ingest_module, "_accepted_before", not_yet_then_real)

    again = _ingest(rfp, vendor_a_org, vendor_a, path)

    assert (again.created, again.bundle) == (False, first)
    assert len(looks) == 2
    _one_of_each()
    assert storage_names() == stored
    assert Blob.objects.count() == len(stored)


def test_a_rejected_upload_is_checked_again(
    tmp_path: Path, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = open_rfp(vendor_a_org)  # no key registered yet: rejected
    path = build_bundle(tmp_path)
    assert _ingest(rfp, vendor_a_org, vendor_a, path).bundle.status == "rejected"
    register_corpus_keys([vendor_a_org], vendor_a)

    again = _ingest(rfp, vendor_a_org, vendor_a, path)

    assert again.created
    assert again.bundle.status == Bundle.Status.ACCEPTED, again.bundle.problems
    assert Bundle.objects.count() == 2


def test_a_closed_rfp_refuses_even_the_same_bytes(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    path = build_bundle(tmp_path)
    _ingest(rfp, vendor_a_org, vendor_a, path)
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
    rfp.refresh_from_db()

    with pytest.raises(ingest_module.ApplicationError):
        _ingest(rfp, vendor_a_org, vendor_a, path, archive_digest=_digest(path))

    assert not AuditEvent.objects.filter(action="bundle.resubmitted").exists()


def _post(user: Any, rfp: Rfp, path: Path) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    with path.open("rb") as handle:
        return client.post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/",
            {"file": handle},
            format="multipart",
        )


def test_api_answers_200_with_the_existing_bundle(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    path = build_bundle(tmp_path)
    first = _post(vendor_a, rfp, path)

    again = _post(vendor_a, rfp, path)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["status"] == "accepted"
    _one_of_each()


def test_upload_page_leads_to_the_existing_bundle_with_a_message(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    path = build_bundle(tmp_path)
    client = client_for(vendor_a)
    url = f"/artifacts/rfps/{rfp.public_id}/bundles/upload/"
    with path.open("rb") as handle:
        client.post(url, {"file": handle})

    with path.open("rb") as handle:
        response = client.post(url, {"file": handle}, follow=True)

    bundle = Bundle.objects.get()
    assert response.redirect_chain[-1][0] == f"/artifacts/bundles/{bundle.public_id}/"
    assert "You uploaded these exact bytes before" in response.content.decode()
    _one_of_each()
