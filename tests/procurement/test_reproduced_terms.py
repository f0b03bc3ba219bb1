"""The re-test contract terms ``retest_deadline_days`` (1-365, default 30) and
``retest_max_attempts`` (1-10, default 2): editor, API, addenda, RFP page."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.exceptions import ProcurementError
from procurement.models import Rfp
from procurement.services.addenda import rfp_amend
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db

TERMS = {
    "escrow_clause": "Escrow everything.",
    "acceptance_clause": "Gates.",
    "retest_clause": "Re-test.",
    "retest_tolerance_pct": "10",
    "audit_rights_clause": "Audit.",
    "standstill_days": 10,
    "escrow_retention_years": 7,
}


TEXTS = (
    "description",
    "workload_requirements",
    "escrow_clause",
    "acceptance_clause",
    "retest_clause",
    "audit_rights_clause",
)


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _terms_step(rfp: Rfp) -> str:
    return f"/rfps/{rfp.public_id}/edit/?step=terms"


def test_new_rfps_have_the_default_terms(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)

    assert (rfp.retest_deadline_days, rfp.retest_max_attempts) == (30, 2)


def test_editor_terms_step_saves_the_retest_terms(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    data = TERMS | {"retest_deadline_days": 45, "retest_max_attempts": 3}

    response = client_for(buyer).post(_terms_step(rfp), data)

    assert response.status_code == 302
    rfp.refresh_from_db()
    assert (rfp.retest_deadline_days, rfp.retest_max_attempts) == (45, 3)


def test_editor_terms_step_shows_the_current_values(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    Rfp.objects.filter(pk=rfp.pk).update(retest_deadline_days=21)

    html = client_for(buyer).get(_terms_step(rfp)).content.decode()

    assert 'name="retest_deadline_days"' in html
    assert 'value="21"' in html
    assert 'name="retest_max_attempts"' in html


@pytest.mark.parametrize(
    "bad",
    [
        {"retest_deadline_days": 0},
        {"retest_deadline_days": 366},
        {"retest_max_attempts": 0},
        {"retest_max_attempts": 11},
        {"retest_deadline_days": "soon"},
    ],
)
def test_editor_refuses_terms_out_of_range(
    buyer: Any, buyer_org: Organisation, client_for: Any, bad: dict[str, Any]
) -> None:
    rfp = draft_rfp(buyer_org)

    response = client_for(buyer).post(_terms_step(rfp), TERMS | bad)

    assert response.status_code == 200  # the step again, not the next one
    assert 'class="field-error"' in response.content.decode()
    rfp.refresh_from_db()
    assert (rfp.retest_deadline_days, rfp.retest_max_attempts) == (30, 2)


def test_api_reads_and_writes_the_retest_terms(
    buyer: Any, buyer_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org)
    url = f"/api/v1/rfps/{rfp.public_id}/"
    data = {"retest_deadline_days": 60, "retest_max_attempts": 4}

    patched = _api(buyer).patch(url, data, format="json")
    read = _api(buyer).get(url)

    assert patched.status_code == 200
    for body in (patched.json(), read.json()):
        assert body["terms"]["retest_deadline_days"] == 60
        assert body["terms"]["retest_max_attempts"] == 4


@pytest.mark.parametrize(
    "bad",
    [
        {"retest_deadline_days": 0},
        {"retest_deadline_days": 400},
        {"retest_max_attempts": 11},
        {"retest_max_attempts": "two"},
    ],
)
def test_api_refuses_terms_out_of_range(
    buyer: Any, buyer_org: Organisation, bad: dict[str, Any]
) -> None:
    rfp = draft_rfp(buyer_org)

    response = _api(buyer).patch(f"/api/v1/rfps/{rfp.public_id}/", bad, format="json")

    assert response.status_code == 400
    assert set(response.json()["problems"][0]["path"].split(".")) & set(bad)


def test_addendum_changes_the_retest_terms_with_a_labelled_diff(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    payload = {
        "changes": {"retest_deadline_days": 14, "retest_max_attempts": 1},
        "reason": "Shorter pilot window.",
    }

    response = _api(buyer).post(
        f"/api/v1/rfps/{rfp.public_id}/addenda/", payload, format="json"
    )

    assert response.status_code == 201
    assert {
        (c["field"], c["label"], c["old"], c["new"]) for c in response.json()["changes"]
    } == {
        ("retest_deadline_days", "Re-test deadline (days)", 30, 14),
        ("retest_max_attempts", "Re-test attempts", 2, 1),
    }
    rfp.refresh_from_db()
    assert (rfp.retest_deadline_days, rfp.retest_max_attempts) == (14, 1)


def test_addendum_refuses_out_of_range_terms(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    with pytest.raises(ProcurementError):
        rfp_amend(
            rfp=rfp,
            changes={"retest_max_attempts": 50},
            reason="Many.",
            actor=buyer,
        )

    rfp.refresh_from_db()
    assert rfp.retest_max_attempts == 2


def test_addendum_form_keeps_terms_left_empty(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    from procurement.forms.clarifications import AddendumForm

    rfp = published_rfp(buyer_org, vendor_a_org)
    data = {
        "title": rfp.title,
        "submission_deadline": f"{rfp.submission_deadline:%Y-%m-%dT%H:%M}",
        "min_bids": str(rfp.min_bids),
        "retest_tolerance_pct": str(rfp.retest_tolerance_pct),
        "retest_vendor_funded": "on",
        "retest_max_attempts": "5",
        "reason": "More attempts.",
    }
    for name in TEXTS:
        data[name] = getattr(rfp, name)
    if rfp.escrow_retention_years is not None:
        data["escrow_retention_years"] = str(rfp.escrow_retention_years)
    if rfp.questions_deadline is not None:
        data["questions_deadline"] = f"{rfp.questions_deadline:%Y-%m-%dT%H:%M}"

    form = AddendumForm(data, rfp=rfp)

    assert form.is_valid(), form.errors
    assert form.changes() == {"retest_max_attempts": 5}


def test_rfp_page_shows_the_retest_terms(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    Rfp.objects.filter(pk=rfp.pk).update(retest_deadline_days=1, retest_max_attempts=3)

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert "deadline 1 day after a failed gate" in html
    assert "3 attempts" in html
