"""An addendum changes a published RFP's requirements document: it keeps the
old and new documents, shows the changed places on the page and in the API,
and names them in its audit row."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.lib import requirements as lib
from procurement.models import Rfp
from procurement.selectors.requirements import requirements_document
from procurement.services.addenda import rfp_amend
from procurement.services.requirements import rfp_set_requirements
from procurement.services.rfp_lifecycle import rfp_publish
from tests.procurement.factories_rfps import draft_rfp
from tests.procurement.test_requirements_lib import good

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(clock: Any, buyer: Any, buyer_org: Organisation, vendor_a_org: Any) -> Rfp:
    clock.travel_to(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    draft = draft_rfp(buyer_org, vendor_a_org)
    rfp_set_requirements(rfp=draft, document=good(), actor=buyer)
    return rfp_publish(rfp=draft, actor=None)


def _changed() -> dict[str, Any]:
    document = lib.canonical(good())
    document["workloads"][0]["concurrency"] = [8, 128]
    document["environment"]["pinned"].append("nic_firmware")
    return document


def test_an_addendum_changes_the_requirements(rfp: Rfp, buyer: Any) -> None:
    rfp_amend(
        rfp=rfp, changes={"requirements": _changed()}, reason="More users.", actor=buyer
    )

    rfp.refresh_from_db()
    assert requirements_document(rfp) == lib.canonical(_changed())


def test_the_addendum_records_old_and_new_and_the_paths(rfp: Rfp, buyer: Any) -> None:
    addendum = rfp_amend(
        rfp=rfp, changes={"requirements": _changed()}, reason="More users.", actor=buyer
    )

    old, new = addendum.changes["requirements"]
    assert old == lib.canonical(good())
    assert new == lib.canonical(_changed())
    event = AuditEvent.objects.get(action="addendum.issued")
    assert event.data["requirements_changed"] == [
        "workloads[chat-70b].concurrency",
        "environment.pinned",
    ]


def test_an_unchanged_document_changes_nothing(rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError) as refused:
        rfp_amend(
            rfp=rfp, changes={"requirements": good()}, reason="Same.", actor=buyer
        )

    assert refused.value.code == "nothing_changed"


def test_a_bad_document_is_refused_with_its_paths(rfp: Rfp, buyer: Any) -> None:
    bad = copy.deepcopy(good())
    bad["fabric"]["transports"] = ["carrier-pigeon"]

    with pytest.raises(ProcurementError) as refused:
        rfp_amend(rfp=rfp, changes={"requirements": bad}, reason="x", actor=buyer)

    paths = [p.path for p in refused.value.problems]
    assert paths == ["changes.requirements.fabric.transports[0]"]


def test_the_api_and_page_show_each_changed_path(
    rfp: Rfp, buyer: Any, vendor_a: Any, client_for: Any
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)
    url = f"/api/v1/rfps/{rfp.public_id}/addenda/"
    body = {"changes": {"requirements": _changed()}, "reason": "More users."}

    issued = api.post(url, body, format="json")
    api.force_authenticate(vendor_a)
    listed = api.get(url).json()["results"][0]
    page = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/clarifications/")

    assert issued.status_code == 201
    change = listed["changes"][0]
    assert change["field"] == "requirements.workloads[chat-70b].concurrency"
    assert (change["old"], change["new"]) == ([8, 64], [8, 128])
    html = page.content.decode()
    assert "Requirements: workloads[chat-70b].concurrency" in html
    assert "Requirements: environment.pinned" in html
