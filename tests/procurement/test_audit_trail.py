"""The buyer's and the engaged auditors' trail holds the vendors' bid, bundle and
signing-key events of the buyer's RFPs: sealed before opening (time, kind,
commitment hash, nothing that tells the vendor), in full after. Another buyer
sees none of them, and a vendor never sees another vendor's."""

from __future__ import annotations

import csv
import importlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AuditEvent, Organisation, Role
from accounts.services.audit import audit_record
from artifacts.models import Bundle, SigningKey
from procurement.models import Bid, Rfp
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.artifacts.corpus.build import good_files, good_manifest, manifest_bytes
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.procurement.factories_bids import SECRETS, submit, tender
from tests.procurement.factories_bundles import accepted_bundle

pytestmark = pytest.mark.django_db

B_SECRETS = ("bolt-storage", "Bolt Storage", "vendor-b", "Quartz-7")
TRAILS = ["/accounts/audit/", "/rfps/{id}/audit/"]
READERS = ["buyer", "auditor"]


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    tmp_path: Path,
) -> Rfp:
    """Sealed: Acme registered a key, uploaded a bundle and bid; Bolt bid."""
    rfp = tender(buyer_org, vendor_a_org, vendor_b_org)
    accepted_bundle(rfp, vendor_a_org, tmp_path)
    submit(rfp, vendor_a, vendor_a_org)
    submit(rfp, vendor_b, vendor_b_org, cover_note="Quartz-7")
    return rfp


def _open(rfp: Rfp) -> None:
    opened = {"status": Rfp.Status.OPENED, "opened_at": timezone.now()}
    Rfp.objects.filter(pk=rfp.pk).update(**opened)


def _secrets() -> list[str]:
    """What names a vendor: names, users, the bundle's digest, the key."""
    bundle = Bundle.objects.get()
    key = SigningKey.objects.get()
    return [*SECRETS, *B_SECRETS, "up-acme", bundle.sha256, key.fingerprint]


def _leaks(text: str) -> list[str]:
    return [secret for secret in _secrets() if secret in text]


def _commitments() -> list[str]:
    return sorted(Bid.objects.values_list("commitment", flat=True))


def _page(client: Any, url: str, tab_of: Rfp, **params: str) -> str:
    response = client.get(url.format(id=tab_of.public_id), params)
    assert response.status_code == 200
    return response.content.decode()


def _export(client: Any, fmt: str, **params: str) -> str:
    response = client.get(f"/accounts/audit/export.{fmt}", params)
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("persona", READERS)
@pytest.mark.parametrize("trail", TRAILS)
def test_sealed_vendor_events_show_time_kind_and_commitment_only(
    rfp: Rfp, persona: str, trail: str, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    page = _page(client, trail, rfp)

    assert _leaks(page) == []
    assert page.count('badge-sealed" title="Sealed') >= 3  # bundle+deposit, bids
    assert "Bid submitted" in page
    assert "Bundle accepted" in page
    assert all(c in page for c in _commitments())
    assert "signing_key." not in page  # not even sealed before an opening


@pytest.mark.parametrize("persona", READERS)
@pytest.mark.parametrize("trail", TRAILS)
def test_opened_vendor_events_show_in_full(
    rfp: Rfp, persona: str, trail: str, request: Any, client_for: Any
) -> None:
    _open(rfp)
    client = client_for(request.getfixturevalue(persona))

    page = _page(client, trail, rfp)

    assert 'badge-sealed" title="Sealed' not in page
    assert ">vendor-a <" in page
    assert "(Acme Flash)" in page
    assert ">vendor-b <" in page
    assert Bundle.objects.get().sha256 in page
    assert "Signing key registered" in page
    assert SigningKey.objects.get().fingerprint in page


def _rejected_upload(rfp: Rfp, user: Any, org: Organisation, tmp_path: Path) -> Any:
    """A bundle whose harness is not the one its manifest lists."""
    files = good_files()
    manifest = good_manifest(files, rfp=rfp.reference, vendor=org.slug)
    files["harness/run.sh"] = b"#!/bin/sh\necho tampered\n"
    path = build_bundle(tmp_path / "bad", files, manifest=manifest_bytes(manifest))
    bundle = ingest(rfp, org, user, path)
    assert bundle.status == Bundle.Status.REJECTED
    return bundle


def test_a_rejected_upload_is_sealed_then_named(
    rfp: Rfp,
    buyer: Any,
    vendor_b: Any,
    vendor_b_org: Organisation,
    tmp_path: Path,
    client_for: Any,
) -> None:
    bad = _rejected_upload(rfp, vendor_b, vendor_b_org, tmp_path)
    client = client_for(buyer)

    sealed = json.loads(_export(client, "json", action="bundle.rejected"))
    _open(rfp)
    opened = json.loads(_export(client, "json", action="bundle.rejected"))

    assert [e["sealed"] for e in sealed["events"]] == [True]
    assert bad.sha256 not in json.dumps(sealed)
    assert sealed["events"][0]["details"] == {}
    assert opened["events"][0]["organisation"] == "Bolt Storage"
    assert opened["events"][0]["details"]["sha256"] == bad.sha256


@pytest.mark.parametrize("opened", [False, True])
def test_another_buyer_sees_no_vendor_event(
    rfp: Rfp, opened: bool, outsider: Any, client_for: Any
) -> None:
    if opened:
        _open(rfp)

    page = _page(client_for(outsider), "/accounts/audit/", rfp)
    export = _export(client_for(outsider), "json")

    assert json.loads(export)["events"] == []
    assert "bid." not in page
    assert _leaks(page) == []
    assert not [c for c in _commitments() if c in page]


@pytest.fixture
def bolt_admin(vendor_b_org: Organisation) -> Any:
    user = UserFactory.create(username="bolt-admin")
    MembershipFactory.create(user=user, organisation=vendor_b_org, role=Role.ADMIN)
    return user


@pytest.mark.parametrize("opened", [False, True])
def test_a_vendor_never_sees_another_vendors_events(
    rfp: Rfp, opened: bool, bolt_admin: Any, client_for: Any
) -> None:
    if opened:
        _open(rfp)
    client = client_for(bolt_admin)
    acme = Bid.objects.get(vendor_organisation__slug="acme-flash").commitment

    page = _page(client, "/accounts/audit/", rfp)
    export = _export(client, "csv")

    assert "<td>vendor-b</td>" in page  # its own trail, in full
    assert [s for s in (*SECRETS, "up-acme") if s in page + export] == []
    assert acme not in page + export
    assert "Bundle accepted" not in page


def test_rfp_filter_keeps_one_rfps_events(
    rfp: Rfp,
    buyer: Any,
    buyer_org: Organisation,
    vendor_b: Any,
    vendor_b_org: Organisation,
    client_for: Any,
) -> None:
    other = tender(buyer_org, vendor_b_org)
    later = submit(other, vendor_b, vendor_b_org).commitment
    client = client_for(buyer)

    page = _page(client, "/accounts/audit/", rfp, rfp=rfp.reference)
    rows = list(
        csv.DictReader(io.StringIO(_export(client, "csv", rfp=other.reference)))
    )

    assert f'<option value="{other.reference}">' in page
    assert all(c in page for c in _commitments() if c != later)
    assert later not in page
    assert {r["rfp"] for r in rows} == {other.reference}
    assert [r["details"] for r in rows if r["action"] == "bid.submitted"] == [
        json.dumps({"commitment": later})
    ]


def test_rfp_filter_shows_key_events_of_the_opened_rfps_vendors_only(
    rfp: Rfp, buyer: Any, buyer_org: Organisation, vendor_b_org: Any, client_for: Any
) -> None:
    other = tender(buyer_org, vendor_b_org)  # Acme is not invited
    _open(rfp)
    _open(other)
    client = client_for(buyer)

    mine = _page(client, "/accounts/audit/", rfp, rfp=rfp.reference)
    theirs = _page(client, "/accounts/audit/", rfp, rfp=other.reference)

    assert "Signing key registered" in mine
    assert "Signing key registered" not in theirs


def test_key_events_after_the_opening_wait_for_the_next_one(
    rfp: Rfp, buyer: Any, vendor_a: Any, vendor_a_org: Organisation, client_for: Any
) -> None:
    _open(rfp)
    with transaction.atomic():  # as a second key's registration would
        audit_record(
            actor=vendor_a,
            action="signing_key.revoked",
            organisation=vendor_a_org,
            data={"fingerprint": "SHA256:later"},
        )

    events = json.loads(_export(client_for(buyer), "json"))["events"]

    keys = [e["action"] for e in events if e["action"].startswith("signing_key.")]
    assert keys == ["signing_key.registered"]


def test_actor_filter_never_finds_a_sealed_row(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    client = client_for(buyer)

    sealed = _export(client, "json", actor="vendor-a")
    _open(rfp)
    opened = _export(client, "json", actor="vendor-a")

    assert json.loads(sealed)["events"] == []
    assert {e["action"] for e in json.loads(opened)["events"]} == {"bid.submitted"}


@pytest.mark.parametrize("persona", READERS)
def test_sealed_exports_carry_the_sealed_rows_only(
    rfp: Rfp, persona: str, request: Any, client_for: Any
) -> None:
    client = client_for(request.getfixturevalue(persona))

    text = _export(client, "csv", rfp=rfp.reference)
    document = json.loads(_export(client, "json", rfp=rfp.reference))

    rows = list(csv.DictReader(io.StringIO(text)))
    vendor_rows = [r for r in rows if r["action"].startswith(("bid.", "bundle."))]
    assert _leaks(text + json.dumps(document)) == []
    assert {r["sealed"] for r in vendor_rows} == {"yes"}
    assert {r["actor"] + r["organisation"] + r["target"] for r in vendor_rows} == {""}
    sealed = [e for e in document["events"] if e["sealed"]]
    assert sorted(e["details"]["commitment"] for e in sealed if e["details"]) == (
        _commitments()
    )


def test_opened_exports_name_the_vendors(
    rfp: Rfp, auditor: Any, client_for: Any
) -> None:
    _open(rfp)

    document = json.loads(_export(client_for(auditor), "json", rfp=rfp.reference))

    by_action = {e["action"]: e for e in document["events"]}
    assert by_action["bundle.accepted"]["organisation"] == "Acme Flash"
    assert by_action["bundle.accepted"]["details"]["sha256"] == (
        Bundle.objects.get().sha256
    )
    assert by_action["signing_key.registered"]["sealed"] is False


def _transitions(rfp: Rfp, actor: Any, n: int) -> None:
    for i in range(n):
        with transaction.atomic():
            audit_record(
                actor=actor,
                action="run.transitioned",
                organisation=rfp.buyer_organisation,
                data={"rfp": rfp.reference, "campaign": f"c-{n}-{i // 3}"},
            )


def test_rfp_tab_query_count_does_not_grow_with_the_rows(
    rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    client, url = client_for(buyer), f"/rfps/{rfp.public_id}/audit/"
    _transitions(rfp, buyer, 2)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    _transitions(rfp, buyer, 30)

    with CaptureQueriesContext(connection) as many:
        page = client.get(url).content.decode()

    assert "3 run transitions in campaign c-30-9" in page
    assert len(many) == len(few)


# --- which RFP an event is about --------------------------------------------------


def test_audit_record_names_the_rfp_from_data_target_or_argument(
    rfp: Rfp, buyer_org: Organisation
) -> None:
    bid = Bid.objects.filter(rfp=rfp).first()
    with transaction.atomic():
        named = audit_record(actor=None, action="x.a", data={"rfp": "RFP-NAMED"})
        itself = audit_record(actor=None, action="x.b", target=rfp)
        through = audit_record(actor=None, action="x.c", target=bid)
        given = audit_record(actor=None, action="x.d", rfp_reference="RFP-GIVEN")
        none = audit_record(actor=None, action="x.e", target=buyer_org)

    assert named.rfp_reference == "RFP-NAMED"
    assert itself.rfp_reference == rfp.reference
    assert through.rfp_reference == rfp.reference
    assert given.rfp_reference == "RFP-GIVEN"
    assert none.rfp_reference == ""


def test_migration_names_the_rfp_of_existing_events(buyer_org: Organisation) -> None:
    AuditEvent.objects.create(action="x.old", data={"rfp": "RFP-OLD"})
    AuditEvent.objects.create(action="x.none", data={"rfp": None})
    AuditEvent.objects.create(action="x.plain", data={})
    migration = importlib.import_module("accounts.migrations.0003_audit_rfp_reference")
    state = MigrationExecutor(connection).loader.project_state(
        ("accounts", "0003_audit_rfp_reference")
    )

    migration.name_the_rfp(state.apps, None)

    named = dict(AuditEvent.objects.values_list("action", "rfp_reference"))
    assert named == {"x.old": "RFP-OLD", "x.none": "", "x.plain": ""}
