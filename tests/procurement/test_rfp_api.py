from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Notification, Organisation
from procurement.models import Rfp
from procurement.services.templates import rfp_template_save
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db

ORIGINAL_FIELDS = {
    "id",
    "reference",
    "title",
    "status",
    "submission_deadline",
    "buyer_organisation",
    "invited_vendors",
}


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _new(clock: Any, **fields: Any) -> dict[str, Any]:
    return {
        "reference": "RFP-API-1",
        "title": "KV-cache tiering",
        "submission_deadline": (clock.now() + timedelta(days=30)).isoformat(),
        **fields,
    }


# --- create -------------------------------------------------------------------------


def test_post_creates_a_prefilled_draft(buyer: Any, buyer_org: Any, clock: Any) -> None:
    response = _api(buyer).post("/api/v1/rfps/", _new(clock), format="json")

    body = response.json()
    assert response.status_code == 201
    assert body["status"] == "draft"
    assert body["buyer_organisation"]["slug"] == "northwind-ai"
    assert [a["kind"] for a in body["artifacts"] if a["mandatory"]] == [
        "workload",
        "environment",
        "harness",
        "trace",
        "cost_model",
        "report",
    ]
    assert {a["kind"] for a in body["artifacts"] if not a["mandatory"]} == {
        "container_image",
        "iac",
        "runbook",
        "sbom",
    }
    assert body["terms"]["dispute_window_days"] == 10
    assert body["terms"]["update_deposit_days"] == 30
    assert sum(c["weight"] for c in body["criteria"]) == 100
    assert body["terms"]["retest_vendor_funded"] is True


@pytest.mark.parametrize("persona", ["vendor_a", "evaluator", "auditor"])
def test_post_is_for_buyers_only(
    persona: str, request: pytest.FixtureRequest, clock: Any
) -> None:
    user = request.getfixturevalue(persona)

    response = _api(user).post("/api/v1/rfps/", _new(clock), format="json")

    assert response.status_code == 403
    assert not Rfp.objects.exists()


def test_post_explains_bad_input(buyer: Any, buyer_org: Any, clock: Any) -> None:
    data = _new(clock, reference="rfp 1", title="")

    response = _api(buyer).post("/api/v1/rfps/", data, format="json")

    assert response.status_code == 400
    assert {p["path"] for p in response.json()["problems"]} == {"reference", "title"}
    response = _api(buyer).post(
        "/api/v1/rfps/", _new(clock, reference="rfp 1"), format="json"
    )
    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "reference"
    assert not Rfp.objects.exists()


def test_post_refuses_a_title_of_two_lines_and_trims_one(
    buyer: Any, buyer_org: Any, clock: Any
) -> None:
    api = _api(buyer)

    refused = api.post("/api/v1/rfps/", _new(clock, title="KV\ncache"), format="json")
    taken = api.post("/api/v1/rfps/", _new(clock, title=" KV cache\n"), format="json")

    assert refused.status_code == 400
    assert [p["path"] for p in refused.json()["problems"]] == ["title"]
    assert taken.status_code == 201
    assert Rfp.objects.get().title == "KV cache"


def test_post_refuses_questions_after_submission(
    buyer: Any, buyer_org: Any, clock: Any
) -> None:
    late = (clock.now() + timedelta(days=31)).isoformat()

    response = _api(buyer).post(
        "/api/v1/rfps/", _new(clock, questions_deadline=late), format="json"
    )

    assert response.status_code == 400
    assert response.json()["problems"] == [
        {
            "code": "deadline_order",
            "message": "The questions deadline must come before the submission "
            "deadline.",
            "path": "questions_deadline",
        }
    ]


def test_post_starts_from_a_template(buyer: Any, buyer_org: Any, clock: Any) -> None:
    source = draft_rfp(buyer_org, min_bids=3)
    template = rfp_template_save(rfp=source, name="Tiering", actor=None)
    data = _new(clock, template=str(template.public_id))

    response = _api(buyer).post("/api/v1/rfps/", data, format="json")

    assert response.status_code == 201
    assert response.json()["min_bids"] == 3


# --- patch --------------------------------------------------------------------------


def test_patch_edits_a_draft_and_replaces_lists(buyer: Any, buyer_org: Any) -> None:
    rfp = draft_rfp(buyer_org)
    data = {
        "title": "Tiering v2",
        "retest_tolerance_pct": "7.50",
        "criteria": [{"name": "TCO", "weight": 100}],
    }

    response = _api(buyer).patch(f"/api/v1/rfps/{rfp.public_id}/", data, format="json")

    body = response.json()
    assert response.status_code == 200
    assert body["title"] == "Tiering v2"
    assert body["terms"]["retest_tolerance_pct"] == "7.50"
    assert body["criteria"] == [{"name": "TCO", "description": "", "weight": 100}]
    assert len(body["metrics"]) == 9


def test_patch_of_a_published_rfp_is_a_conflict(
    buyer: Any, buyer_org: Any, vendor_a_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = _api(buyer).patch(
        f"/api/v1/rfps/{rfp.public_id}/", {"title": "x"}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "not_draft"


def test_patch_rejects_a_bad_row_all_or_nothing(buyer: Any, buyer_org: Any) -> None:
    rfp = draft_rfp(buyer_org)
    data = {"title": "Changed", "criteria": [{"name": "TCO", "weight": 101}]}

    response = _api(buyer).patch(f"/api/v1/rfps/{rfp.public_id}/", data, format="json")

    assert response.status_code == 400
    path = response.json()["problems"][0]["path"]
    assert path == "criteria[0].weight"  # list rows by index, as services do
    rfp.refresh_from_db()
    assert rfp.title == "KV-cache tiering"


def test_patch_is_refused_to_others(
    buyer_org: Any, vendor_a_org: Any, vendor_a: Any, evaluator: Any, outsider: Any
) -> None:
    draft = draft_rfp(buyer_org, vendor_a_org)
    published = published_rfp(buyer_org, vendor_a_org, reference="RFP-T-901")
    data = {"title": "x"}

    def patch(user: Any, rfp: Rfp) -> int:
        url = f"/api/v1/rfps/{rfp.public_id}/"
        return _api(user).patch(url, data, format="json").status_code

    assert patch(vendor_a, draft) == 404
    assert patch(vendor_a, published) == 403
    assert patch(evaluator, draft) == 403
    assert patch(outsider, published) == 404


# --- publish, cancel, invite --------------------------------------------------------


def test_publish_notifies_the_invited_vendors(
    buyer: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Any
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)

    response = _api(buyer).post(f"/api/v1/rfps/{rfp.public_id}/publish/")

    assert response.status_code == 200
    assert response.json()["status"] == "published"
    assert Notification.objects.filter(recipient=vendor_a).count() == 1


def test_publish_of_an_incomplete_draft_lists_the_problems(
    buyer: Any, buyer_org: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    response = _api(buyer).post(f"/api/v1/rfps/{rfp.public_id}/publish/")

    assert response.status_code == 400
    assert response.json()["code"] == "not_ready"
    assert [p["code"] for p in response.json()["problems"]] == ["no_vendors"]


def test_publish_twice_is_a_conflict(
    buyer: Any, buyer_org: Any, vendor_a_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = _api(buyer).post(f"/api/v1/rfps/{rfp.public_id}/publish/")

    assert response.status_code == 409


def test_cancel_needs_a_reason_and_refuses_final_states(
    buyer: Any, buyer_org: Any, vendor_a_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    url = f"/api/v1/rfps/{rfp.public_id}/cancel/"
    api = _api(buyer)

    missing = api.post(url, {}, format="json")
    done = api.post(url, {"reason": "Budget cut."}, format="json")
    again = api.post(url, {"reason": "Budget cut."}, format="json")

    assert missing.status_code == 400
    assert (done.status_code, done.json()["status"]) == (200, "cancelled")
    assert again.status_code == 409


def test_cancel_is_refused_to_a_vendor(
    vendor_a: Any, buyer_org: Any, vendor_a_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = _api(vendor_a).post(
        f"/api/v1/rfps/{rfp.public_id}/cancel/", {"reason": "x"}, format="json"
    )

    assert response.status_code == 403


def test_invite_by_slug(
    buyer: Any, buyer_org: Any, vendor_a_org: Any, vendor_b_org: Any
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    url = f"/api/v1/rfps/{rfp.public_id}/invitations/"

    response = _api(buyer).post(url, {"vendor": "bolt-storage"}, format="json")

    assert response.status_code == 201
    slugs = {v["slug"] for v in response.json()["invited_vendors"]}
    assert slugs == {"acme-flash", "bolt-storage"}


@pytest.mark.parametrize(
    ("slug", "code"), [("nobody", "does_not_exist"), ("northwind-ai", "does_not_exist")]
)
def test_invite_refuses_unknown_and_non_vendor_slugs(
    slug: str, code: str, buyer: Any, buyer_org: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    url = f"/api/v1/rfps/{rfp.public_id}/invitations/"

    response = _api(buyer).post(url, {"vendor": slug}, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0] == {
        "code": code,
        "message": f"Object with slug={slug} does not exist.",
        "path": "vendor",
    }


def test_inviting_twice_is_a_bad_request(
    buyer: Any, buyer_org: Any, vendor_a_org: Any
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    url = f"/api/v1/rfps/{rfp.public_id}/invitations/"

    response = _api(buyer).post(url, {"vendor": "acme-flash"}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "already_invited"


# --- reading ------------------------------------------------------------------------


def test_detail_keeps_the_original_fields_and_scopes_invitations(
    vendor_a: Any, buyer_org: Any, vendor_a_org: Any, vendor_b_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org, vendor_b_org)

    body = _api(vendor_a).get(f"/api/v1/rfps/{rfp.public_id}/").json()

    assert set(body) >= ORIGINAL_FIELDS | {"artifacts", "metrics", "criteria", "terms"}
    assert [v["slug"] for v in body["invited_vendors"]] == ["acme-flash"]
    assert body["artifacts"][0]["guidance"]


def test_list_filters_by_status(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Any
) -> None:
    draft_rfp(buyer_org, reference="RFP-DRAFT-1")
    published_rfp(buyer_org, vendor_a_org, reference="RFP-PUB-1")
    api = _api(buyer)

    drafts = api.get("/api/v1/rfps/", {"status": "draft"}).json()["results"]
    bad = api.get("/api/v1/rfps/", {"status": "nonsense"})

    assert [r["reference"] for r in drafts] == ["RFP-DRAFT-1"]
    assert set(drafts[0]) >= ORIGINAL_FIELDS | {"questions_deadline", "min_bids"}
    assert bad.status_code == 400


def test_an_uninvited_vendor_gets_404_everywhere(
    vendor_b: Any, buyer_org: Any, vendor_a_org: Any, vendor_b_org: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    api = _api(vendor_b)
    base = f"/api/v1/rfps/{rfp.public_id}/"

    assert api.get(base).status_code == 404
    assert api.patch(base, {"title": "x"}, format="json").status_code == 404
    assert api.post(base + "publish/").status_code == 404
    assert api.post(base + "cancel/", {"reason": "x"}, format="json").status_code == 404
    assert (
        api.post(base + "invitations/", {"vendor": "bolt-storage"}).status_code == 404
    )
    assert not rfp.invited_vendors.filter(slug="bolt-storage").exists()
