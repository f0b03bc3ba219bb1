"""The award rests on reproduced claims: a vendor whose lab validation has not
passed wins only with a written reason, shown on the award page, to the
confirmer, in the audit rows and in the notices."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.models import AuditEvent, Notification, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import AwardRequest, Rfp
from procurement.services.award import award_confirm, award_request
from tests.gates.reproduced_support import (  # noqa: F401 (fixtures)
    OVERCLAIMING,
    Reproduce,
    evaluate_again,
    reproduce_fixture,
    two_vendors_fixture,
)
from tests.procurement.factories_evaluation import (
    CriterionFactory,
    opened_rfp,
    score_all,
)

pytestmark = pytest.mark.django_db

RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."
GATES_OVERRIDE = "The pilot contract covers a re-test before any rollout."


@pytest.fixture
def rfp(two_vendors: Rfp, evaluator: Any) -> Rfp:
    """Acme passed lab validation, Bolt failed it; every sheet is in."""
    CriterionFactory.create(rfp=two_vendors, name="Reproducibility", weight=100)
    score_all(two_vendors, evaluator, {"acme-flash": 6, "bolt-storage": 8})
    return two_vendors


def _request(rfp: Rfp, slug: str, actor: Any, **kwargs: Any) -> AwardRequest:
    bid = rfp.bids.get(vendor_organisation__slug=slug)
    return award_request(rfp=rfp, bid=bid, rationale=RATIONALE, actor=actor, **kwargs)


def test_award_to_a_failed_vendor_is_refused_without_a_reason(
    rfp: Rfp, buyer: Any
) -> None:
    with pytest.raises(ProcurementError) as refused:
        _request(rfp, "bolt-storage", buyer)

    assert refused.value.code == "lab_validation_not_passed"
    assert "verdict is FAIL" in refused.value.message
    [problem] = refused.value.problems
    assert problem.path == "gates_override_reason"
    assert not AwardRequest.objects.exists()


def test_a_token_reason_is_not_enough(rfp: Rfp, buyer: Any) -> None:
    with pytest.raises(ProcurementError, match="at least 20 characters"):
        _request(rfp, "bolt-storage", buyer, gates_override_reason="  because  ")


def test_award_to_a_vendor_not_yet_evaluated_needs_a_reason(
    reproduce: Reproduce,
    buyer: Any,
    evaluator: Any,
    vendor_a_org: Organisation,
    vendor_a: Any,
) -> None:
    rfp = reproduce((vendor_a_org, vendor_a, None))
    CriterionFactory.create(rfp=rfp)
    score_all(rfp, evaluator, 7)

    with pytest.raises(ProcurementError, match="has not evaluated it yet"):
        _request(rfp, "acme-flash", buyer)


def test_award_to_a_passed_vendor_needs_no_reason_and_keeps_none(
    rfp: Rfp, buyer: Any
) -> None:
    request = _request(rfp, "acme-flash", buyer, gates_override_reason=GATES_OVERRIDE)

    assert request.gates_override_reason == ""
    event = AuditEvent.objects.get(action="award.requested")
    assert event.data["lab_validation"] == "PASS"


def test_the_reason_is_kept_and_audited_through_the_confirmation(
    rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    _request(rfp, "bolt-storage", buyer, gates_override_reason=f" {GATES_OVERRIDE} ")

    award = award_confirm(rfp=rfp, actor=evaluator)

    assert award.request.gates_override_reason == GATES_OVERRIDE
    for action in ("award.requested", "award.created"):
        event = AuditEvent.objects.get(action=action)
        assert event.data["gates_override_reason"] == GATES_OVERRIDE
        assert event.data["lab_validation"] == "FAIL"


def test_the_reason_is_in_every_notice(
    rfp: Rfp, buyer: Any, evaluator: Any, vendor_a: Any, vendor_b: Any
) -> None:
    _request(rfp, "bolt-storage", buyer, gates_override_reason=GATES_OVERRIDE)
    award_confirm(rfp=rfp, actor=evaluator)

    request_note = Notification.objects.get(
        recipient=evaluator, subject__contains="Confirm"
    )
    awarded = Notification.objects.filter(subject__icontains="award")
    for note in (
        request_note,
        awarded.get(recipient=buyer),
        Notification.objects.get(recipient=vendor_b, subject__contains="your bid won"),
        awarded.get(recipient=vendor_a),
    ):
        assert GATES_OVERRIDE in note.body


def test_award_page_shows_each_vendors_lab_verdict_and_the_reason_field(
    client_for: Any, rfp: Rfp, buyer: Any
) -> None:
    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/award/").content.decode()

    start = html.index('data-testid="award-summary-bolt-storage"')
    bolt = html[start : html.index("</tr>", start)]
    assert ">FAIL</a>" in bolt
    assert 'data-testid="award-gates-override-input"' in html
    assert "Not passed: Bolt Storage." in html


def test_award_page_post_without_reason_is_refused(
    client_for: Any, rfp: Rfp, buyer: Any
) -> None:
    bid = rfp.bids.get(vendor_organisation__slug="bolt-storage")
    data = {"bid": str(bid.public_id), "rationale": RATIONALE}

    response = client_for(buyer).post(f"/rfps/{rfp.public_id}/award/", data)

    assert response.status_code == 400
    assert "has not passed lab validation" in response.content.decode()
    assert not AwardRequest.objects.exists()


def test_the_confirm_step_and_the_award_show_the_reason(
    client_for: Any, rfp: Rfp, buyer: Any, evaluator: Any
) -> None:
    _request(rfp, "bolt-storage", buyer, gates_override_reason=GATES_OVERRIDE)
    url = f"/rfps/{rfp.public_id}/award/"

    pending = client_for(evaluator).get(url).content.decode()
    award_confirm(rfp=rfp, actor=evaluator)
    done = client_for(buyer).get(url).content.decode()

    assert 'data-testid="award-pending-gates-override"' in pending
    assert GATES_OVERRIDE in pending
    assert 'data-testid="award-gates-override"' in done
    assert GATES_OVERRIDE in done


def test_api_refuses_then_accepts_with_the_reason(
    client_for: Any, rfp: Rfp, buyer: Any
) -> None:
    bid = rfp.bids.get(vendor_organisation__slug="bolt-storage")
    url = f"/api/v1/rfps/{rfp.public_id}/award/request/"
    body = {"bid": str(bid.public_id), "rationale": RATIONALE}
    client = client_for(buyer)

    refused = client.post(url, body, content_type="application/json")
    accepted = client.post(
        url,
        body | {"gates_override_reason": GATES_OVERRIDE},
        content_type="application/json",
    )

    assert refused.status_code == 400
    assert json.loads(refused.content)["code"] == "lab_validation_not_passed"
    assert accepted.status_code == 201
    assert json.loads(accepted.content)["gates_override_reason"] == GATES_OVERRIDE


def test_an_rfp_without_gate_plans_is_awarded_on_claims(
    buyer_org: Organisation, buyer: Any, evaluator: Any, vendor_b_org: Organisation
) -> None:
    rfp = opened_rfp(buyer_org, [vendor_b_org])
    score_all(rfp, evaluator, 7)

    request = _request(rfp, "bolt-storage", buyer)

    assert request.gates_override_reason == ""
    assert (
        AuditEvent.objects.get(action="award.requested").data["lab_validation"] is None
    )


def test_confirm_is_refused_when_the_verdict_fell_after_the_request(
    rfp: Rfp, buyer: Any, evaluator: Any, buyer_org: Organisation, labops: Any
) -> None:
    _request(rfp, "acme-flash", buyer)
    evaluate_again(rfp, "acme-flash", buyer_org, labops, OVERCLAIMING)

    with pytest.raises(ProcurementError, match=r"verdict is FAIL.*Decline"):
        award_confirm(rfp=rfp, actor=evaluator)

    rfp.refresh_from_db()
    assert rfp.status == Rfp.Status.OPENED


def test_api_pending_request_lists_each_vendors_lab_verdict(
    client_for: Any, rfp: Rfp, buyer: Any
) -> None:
    _request(rfp, "acme-flash", buyer)

    body = client_for(buyer).get(f"/api/v1/rfps/{rfp.public_id}/award/request/").json()

    ranking = body["ranking"]
    verdicts = {r["bid"]["vendor"]["slug"]: r["lab_validation"] for r in ranking}
    assert verdicts == {"acme-flash": "PASS", "bolt-storage": "FAIL"}
