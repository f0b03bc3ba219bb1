"""An RFP with ``bid_requires_bundle`` takes a bid only with an accepted bundle
that covers every mandatory artifact, content checks passing: refused with the
kinds named (service, API, page), and the vendor sees the gaps before submitting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp
from procurement.services.bids import bid_reconfirm, bids_require_reconfirmation
from tests.artifacts.corpus.build import good_files
from tests.procurement.factories_bids import COVER_NOTE, submit, tender
from tests.procurement.factories_bundles import accepted_bundle
from tests.procurement.factories_evaluation import (
    RequiredArtifactFactory,
    bid_of,
    opened_rfp,
)

pytestmark = pytest.mark.django_db

RUNBOOK = b"# Operating the cache tier\n\n" + b"Drain a target before upgrading. " * 10
SBOM = json.dumps(
    {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "components": [{"name": "kvsim", "licenses": [{"license": {"id": "MIT"}}]}],
    }
).encode()
COMPLETE = {**good_files(), "runbooks/ops.md": RUNBOOK, "sbom/bom.json": SBOM}
# the runbook fails its check, the sbom is missing
INCOMPLETE = {**good_files(), "runbooks/ops.md": b"todo"}


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    rfp = tender(buyer_org, vendor_a_org, vendor_b_org, bid_requires_bundle=True)
    for kind in ("workload", "runbook", "sbom"):
        RequiredArtifactFactory.create(rfp=rfp, kind=kind, title=f"The {kind}")
    RequiredArtifactFactory.create(
        rfp=rfp, kind="iac", title="The iac", mandatory=False
    )
    return rfp


def _bundle(
    rfp: Rfp, org: Organisation, tmp_path: Path, files: dict[str, bytes]
) -> Bundle:
    return accepted_bundle(rfp, org, tmp_path, files=files)


def test_bid_without_any_bundle_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    with pytest.raises(ProcurementError) as refused:
        submit(rfp, vendor_a, vendor_a_org)

    assert refused.value.code == "bundle_required"
    assert not Bid.objects.exists()


def test_bid_naming_an_incomplete_bundle_is_refused_naming_the_kinds(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)

    with pytest.raises(ProcurementError) as refused:
        submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))

    assert refused.value.code == "bundle_incomplete"
    assert "runbook, sbom" in refused.value.message
    problems = {(p.code, p.path) for p in refused.value.problems}
    assert problems == {
        ("bundle_kind_failing", "bundle"),
        ("bundle_kind_missing", "bundle"),
    }
    assert not Bid.objects.exists()


def test_bid_naming_a_complete_bundle_is_taken(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)
    complete = _bundle(rfp, vendor_a_org, tmp_path, COMPLETE)

    submit(rfp, vendor_a, vendor_a_org, bundle=str(complete.public_id))

    assert str(Bid.objects.get().bundle_public_id) == str(complete.public_id)


def test_without_the_condition_an_incomplete_bundle_still_bids(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(bid_requires_bundle=False)
    bundle = _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)

    submit(
        Rfp.objects.get(pk=rfp.pk), vendor_a, vendor_a_org, bundle=str(bundle.public_id)
    )

    assert Bid.objects.get().status == Bid.Status.SUBMITTED


def test_api_refuses_with_the_missing_kinds(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)
    api = APIClient()
    api.force_authenticate(vendor_a)

    response = api.post(
        f"/api/v1/rfps/{rfp.public_id}/bid/",
        {"bundle": str(bundle.public_id)},
        format="json",
    )

    body = response.json()
    assert response.status_code == 400, body
    assert body["code"] == "bundle_incomplete"
    messages = " ".join(p["message"] for p in body["problems"])
    assert "(runbook)" in messages
    assert "(sbom)" in messages
    assert not Bid.objects.exists()


def test_page_shows_the_chosen_bundles_gaps_before_submitting(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path, client_for: Any
) -> None:
    _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)

    page = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bid/").content.decode()

    assert 'data-testid="bundle-condition-unmet"' in page
    assert "The runbook (<code>runbook</code>: content check failed)" in page
    assert "The sbom (<code>sbom</code>)" in page
    assert (
        "The workload (<code>workload</code>"
        not in page.split("bundle-condition-unmet")[1].split("</div>")[0]
    )


def test_page_shows_the_condition_met_for_a_complete_bundle(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path, client_for: Any
) -> None:
    _bundle(rfp, vendor_a_org, tmp_path, COMPLETE)

    page = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/bid/").content.decode()

    assert 'data-testid="bundle-condition-met"' in page
    assert 'data-testid="bundle-condition-unmet"' not in page


def test_page_refuses_and_keeps_what_the_vendor_typed(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path, client_for: Any
) -> None:
    _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)
    client = client_for(vendor_a)
    form = client.get(f"/rfps/{rfp.public_id}/bid/").context["form"]
    data = {k: v for k, v in form.initial.items() if k != "remove_documents"}
    data["cover_note"] = COVER_NOTE

    response = client.post(f"/rfps/{rfp.public_id}/bid/", data)

    assert response.status_code == 200
    errors = " ".join(response.context["form"].errors["bundle"])
    assert "(runbook)" in errors
    assert "(sbom)" in errors
    assert COVER_NOTE in response.content.decode()
    assert not Bid.objects.exists()


def test_reconfirming_under_a_stricter_checklist_is_refused(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = _bundle(rfp, vendor_a_org, tmp_path, COMPLETE)
    submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))
    rfp.artifacts.filter(kind="iac").update(mandatory=True)  # as an addendum would
    bids_require_reconfirmation(rfp=rfp, actor=None)

    with pytest.raises(ProcurementError) as refused:
        bid_reconfirm(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    assert refused.value.code == "bundle_incomplete"
    assert [p.code for p in refused.value.problems] == ["bundle_kind_missing"]
    assert Bid.objects.get().status == Bid.Status.NEEDS_RECONFIRMATION


def test_buyer_sees_a_failing_mandatory_kind_in_the_comparison(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    buyer: Any,
    tmp_path: Path,
    client_for: Any,
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_a_org])
    RequiredArtifactFactory.create(rfp=rfp, kind="runbook", title="The runbook")
    bid_of(rfp, vendor_a_org)
    _bundle(rfp, vendor_a_org, tmp_path, INCOMPLETE)

    page = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison/").content.decode()

    cell = page[page.index('data-testid="failing-artifacts"') :]
    assert "<code" in cell
    assert ">runbook</code>" in cell[: cell.index("</span>")]
