from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.lib.defaults import DEFAULT_ARTIFACTS
from procurement.models import Rfp, RfpTemplate
from procurement.services.rfps import rfp_set_criteria, rfp_update
from procurement.services.templates import (
    rfp_create_from_template,
    rfp_snapshot,
    rfp_template_save,
)
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db

CRITERIA = [{"name": "Evidence", "weight": 55}, {"name": "TCO", "weight": 45}]


@pytest.fixture
def template(buyer_org: Organisation, vendor_a_org: Organisation) -> RfpTemplate:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    rfp_set_criteria(rfp=rfp, criteria=CRITERIA, actor=None)
    rfp_update(rfp=rfp, fields={"min_bids": 1, "description": "Scope."}, actor=None)
    return rfp_template_save(rfp=rfp, name="Storage tender", actor=None)


def _deadline(clock: Any) -> str:
    return (clock.now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M")


def test_a_template_holds_the_configuration_only(template: RfpTemplate) -> None:
    data = template.data

    assert [c["name"] for c in data["criteria"]] == ["Evidence", "TCO"]
    assert data["description"] == "Scope."
    assert len(data["artifacts"]) == len(DEFAULT_ARTIFACTS)
    assert data["terms"]["retest_tolerance_pct"] == "10.00"
    for one_tender_only in ("reference", "title", "submission_deadline"):
        assert one_tender_only not in data
    assert "invited_vendors" not in data
    assert AuditEvent.objects.filter(action="rfp_template.created").count() == 1


def test_new_from_template_is_a_draft_configured_like_the_template(
    template: RfpTemplate, buyer: Any, clock: Any
) -> None:
    rfp = rfp_create_from_template(
        template=template,
        reference="RFP-NEXT-1",
        title="Second round",
        submission_deadline=clock.now() + timedelta(days=30),
        actor=buyer,
    )

    assert rfp.status == Rfp.Status.DRAFT
    assert rfp.buyer_organisation == template.buyer_organisation
    assert not rfp.invited_vendors.exists()
    snapshot = rfp_snapshot(rfp)
    assert snapshot == template.data


def test_template_names_are_unique_within_an_organisation(
    template: RfpTemplate, buyer_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org, reference="RFP-T-901")

    with pytest.raises(ProcurementError, match="already has a template"):
        rfp_template_save(rfp=rfp, name="storage TENDER", actor=None)

    assert RfpTemplate.objects.count() == 1


def test_another_organisation_may_reuse_a_name(template: RfpTemplate) -> None:
    other = Organisation.objects.create(slug="globex", name="Globex", kind="buyer")
    rfp = draft_rfp(other, reference="RFP-G-1")

    rfp_template_save(rfp=rfp, name="Storage tender", actor=None)

    assert RfpTemplate.objects.filter(name="Storage tender").count() == 2


def test_a_template_needs_a_name(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)

    with pytest.raises(ProcurementError, match="template"):
        rfp_template_save(rfp=rfp, name="  ", actor=None)


# --- pages --------------------------------------------------------------------------


def test_save_as_template_button_works_on_a_published_rfp(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation, client_for: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = client_for(buyer).post(
        f"/rfps/{rfp.public_id}/save-as-template/", {"name": "Tiering"}, follow=True
    )

    assert "Saved as template “Tiering”." in response.content.decode()
    assert RfpTemplate.objects.get().buyer_organisation == buyer_org


def test_save_as_template_is_refused_to_others(
    evaluator: Any,
    vendor_a: Any,
    outsider: Any,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    client_for: Any,
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    url = f"/rfps/{rfp.public_id}/save-as-template/"

    assert client_for(evaluator).post(url, {"name": "x"}).status_code == 403
    assert client_for(vendor_a).post(url, {"name": "x"}).status_code == 403
    assert client_for(outsider).post(url, {"name": "x"}).status_code == 404
    assert not RfpTemplate.objects.exists()


def test_template_list_shows_the_organisations_templates(
    template: RfpTemplate, buyer: Any, outsider: Any, client_for: Any
) -> None:
    own = client_for(buyer).get("/rfps/templates/").content.decode()
    other = client_for(outsider).get("/rfps/templates/").content.decode()

    assert "Storage tender" in own
    assert f"/rfps/new/?template={template.public_id}" in own
    assert "Storage tender" not in other
    assert 'data-testid="template-list-empty"' in other


@pytest.mark.parametrize("persona", ["vendor_a", "evaluator", "auditor"])
def test_template_list_is_for_buyers_only(
    persona: str, request: pytest.FixtureRequest, client_for: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert client_for(user).get("/rfps/templates/").status_code == 403


def test_new_rfp_page_starts_from_a_template(
    template: RfpTemplate,
    buyer: Any,
    buyer_org: Organisation,
    client_for: Any,
    clock: Any,
) -> None:
    page = client_for(buyer).get(f"/rfps/new/?template={template.public_id}")
    response = client_for(buyer).post(
        "/rfps/new/",
        {
            "buyer_organisation": buyer_org.pk,
            "template": str(template.public_id),
            "reference": "RFP-FROM-T",
            "title": "From the template",
            "submission_deadline": _deadline(clock),
        },
    )

    assert f'value="{template.public_id}" selected' in page.content.decode()
    assert response.status_code == 302
    rfp = Rfp.objects.get(reference="RFP-FROM-T")
    assert list(rfp.criteria.values_list("name", flat=True)) == ["Evidence", "TCO"]


def test_new_rfp_page_refuses_another_organisations_template(
    template: RfpTemplate, outsider: Any, client_for: Any, clock: Any
) -> None:
    response = client_for(outsider).post(
        "/rfps/new/",
        {
            "template": str(template.public_id),
            "reference": "RFP-STEAL-1",
            "title": "x",
            "submission_deadline": _deadline(clock),
        },
    )

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not Rfp.objects.filter(reference="RFP-STEAL-1").exists()


def test_deleting_a_template_is_for_its_organisation(
    template: RfpTemplate, buyer: Any, outsider: Any, client_for: Any
) -> None:
    url = f"/rfps/templates/{template.public_id}/delete/"

    refused = client_for(outsider).post(url)
    deleted = client_for(buyer).post(url)

    assert refused.status_code == 404
    assert deleted.status_code == 302
    assert not RfpTemplate.objects.exists()
    assert AuditEvent.objects.filter(action="rfp_template.deleted").count() == 1
