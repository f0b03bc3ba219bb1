"""An award to a vendor whose fidelity matrix shows a contradicted mandatory
requirement needs a written reason, kept on the request and in the trail."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.lib.fidelity import Declared
from procurement.models import Rfp
from procurement.selectors.fidelity_sources import declared_source
from procurement.services.award import award_confirm, award_request
from tests.procurement.factories_evaluation import bid_of, opened_rfp, score_all

pytestmark = pytest.mark.django_db

RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."
REASON = "The appliance is the only offer our datacentre can host this year."


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    evaluator: Any,
) -> Iterator[Rfp]:
    """Opened, requiring kv-cache-tiering; bolt's bundle declares local-nvme."""
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])
    Rfp.objects.filter(pk=rfp.pk).update(
        requirements={"approaches": ["kv-cache-tiering"]}
    )
    rfp.refresh_from_db()
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    approaches = {vendor_a_org.pk: "kv-cache-tiering", vendor_b_org.pk: "local-nvme"}

    def declared(
        rfp: Rfp,
        organisation_ids: Collection[int],
        named: Mapping[int, str] | None = None,
    ) -> dict[int, Declared]:
        return {
            i: Declared(manifest={"approach": approaches[i]}) for i in organisation_ids
        }

    with declared_source.swapped(declared):
        yield rfp


def test_a_contradicted_mandatory_requirement_needs_a_reason(
    buyer: Any, rfp: Rfp, vendor_b_org: Organisation
) -> None:
    with pytest.raises(ProcurementError) as refused:
        award_request(
            rfp=rfp, bid=bid_of(rfp, vendor_b_org), rationale=RATIONALE, actor=buyer
        )

    assert refused.value.code == "fidelity_contradicted"
    assert [p.path for p in refused.value.problems] == ["fidelity_override_reason"]
    assert "approaches" in refused.value.message


def test_with_a_reason_the_award_goes_ahead_and_keeps_it(
    buyer: Any, evaluator: Any, rfp: Rfp, vendor_b_org: Organisation
) -> None:
    request = award_request(
        rfp=rfp,
        bid=bid_of(rfp, vendor_b_org),
        rationale=RATIONALE,
        fidelity_override_reason=REASON,
        actor=buyer,
    )
    award = award_confirm(rfp=rfp, actor=evaluator)

    assert request.fidelity_override_reason == REASON
    assert award.request.fidelity_override_reason == REASON
    event = AuditEvent.objects.get(action="award.requested")
    assert event.data["fidelity_contradicted"] == ["approaches"]


def test_a_vendor_that_meets_the_requirements_needs_no_reason(
    buyer: Any, rfp: Rfp, vendor_a_org: Organisation
) -> None:
    request = award_request(
        rfp=rfp,
        bid=bid_of(rfp, vendor_a_org),
        rationale=RATIONALE,
        fidelity_override_reason=REASON,
        actor=buyer,
    )

    assert request.fidelity_override_reason == ""


def test_the_award_page_asks_for_the_reason(
    client_for: Any, buyer: Any, rfp: Rfp, vendor_b_org: Organisation
) -> None:
    url = f"/rfps/{rfp.public_id}/award/"
    data = {"bid": str(bid_of(rfp, vendor_b_org).public_id), "rationale": RATIONALE}

    page = client_for(buyer).get(url).content.decode()
    refused = client_for(buyer).post(url, data)

    assert 'data-testid="award-fidelity-override-input"' in page
    assert "Contradicted: Bolt Storage." in page
    assert refused.status_code == 400


def test_the_api_names_the_missing_reason(
    buyer: Any, rfp: Rfp, vendor_b_org: Organisation
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)
    url = f"/api/v1/rfps/{rfp.public_id}/award/request/"
    bid = str(bid_of(rfp, vendor_b_org).public_id)

    refused = api.post(url, {"bid": bid, "rationale": RATIONALE}, format="json")
    accepted = api.post(
        url,
        {"bid": bid, "rationale": RATIONALE, "fidelity_override_reason": REASON},
        format="json",
    )

    assert refused.status_code == 400
    assert refused.json()["code"] == "fidelity_contradicted"
    assert refused.json()["problems"][0]["path"] == "fidelity_override_reason"
    assert accepted.status_code == 201
    assert accepted.json()["fidelity_override_reason"] == REASON
