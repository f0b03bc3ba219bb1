"""The gate plan API: list, the default draft, imports, edits of the draft only,
freeze, new version, export byte-exact; bad input named by its path; who may
read and write."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.lib.canonical import canonical_json
from artifacts.models import Bundle
from gates.models import GatePlan
from gates.services.plans import MAX_IMPORT_BYTES, plan_import
from procurement.models import Rfp
from tests.gates.api.support import api
from tests.gates.support import plan_document

pytestmark = pytest.mark.django_db
S = GatePlan.Status


def plans_url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/gate-plans/"


def plan_url(plan: GatePlan, action: str = "") -> str:
    return f"/api/v1/gate-plans/{plan.public_id}/{action}"


@pytest.fixture
def document(rfp: Rfp) -> dict[str, Any]:
    return plan_document(rfp.reference, "acme-flash")


@pytest.fixture
def draft(rfp: Rfp, vendor_a_org: Organisation, buyer: Any, frozen_plan: Any) -> Any:
    """Version 2, a draft beside the frozen version 1."""
    data = canonical_json(plan_document(rfp.reference, vendor_a_org.slug))
    return plan_import(rfp=rfp, vendor=vendor_a_org, data=data, actor=buyer)


# --- create and import ----------------------------------------------------------


def test_post_drafts_the_default_plan_from_the_accepted_bundle(
    rfp: Rfp, buyer: Any, gate_bundle: Bundle
) -> None:
    response = api(buyer).post(plans_url(rfp), {"vendor": "acme-flash"}, format="json")

    body = response.json()
    assert response.status_code == 201
    assert (body["status"], body["version"], body["vendor"]) == (
        "draft",
        1,
        "acme-flash",
    )
    assert body["bundle"] == str(gate_bundle.public_id)
    assert body["document"]["schema"] == "reprogate.gate-plan/v1"
    assert GatePlan.objects.get(public_id=body["id"]).sha256 == body["sha256"]


def test_post_imports_a_document_then_replaces_the_draft_with_the_next(
    rfp: Rfp, buyer: Any, document: dict[str, Any]
) -> None:
    first = api(buyer).post(
        plans_url(rfp), {"vendor": "acme-flash", "document": document}, format="json"
    )
    document["gates"][0]["criteria"][0]["claim"] = 150.0
    second = api(buyer).post(
        plans_url(rfp), {"vendor": "acme-flash", "document": document}, format="json"
    )

    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert second.json()["document"]["gates"][0]["criteria"][0]["claim"] == 150.0
    assert GatePlan.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({}, "vendor"),
        ({"vendor": "globex"}, "vendor"),  # not invited
        ({"vendor": "acme-flash", "document": [1, 2]}, "document"),
        ({"vendor": "acme-flash", "document": "{}"}, "document"),
    ],
)
def test_post_explains_bad_input(
    rfp: Rfp, buyer: Any, data: dict[str, Any], path: str
) -> None:
    response = api(buyer).post(plans_url(rfp), data, format="json")

    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == [path]
    assert not GatePlan.objects.exists()


def test_post_names_each_problem_of_the_document_by_its_path(
    rfp: Rfp, buyer: Any, document: dict[str, Any]
) -> None:
    document["gates"][0]["criteria"][0]["band"] = {"pct": 150}
    document["vendor"] = "bolt-storage"

    response = api(buyer).post(
        plans_url(rfp), {"vendor": "acme-flash", "document": document}, format="json"
    )

    paths = {p["path"] for p in response.json()["problems"]}
    assert response.status_code == 400
    assert paths == {"document.gates[0].criteria[0].band.pct", "document.vendor"}
    assert not GatePlan.objects.exists()


def test_post_refuses_json_that_is_not_json(rfp: Rfp, buyer: Any) -> None:
    body = '{"vendor": "acme-flash", "document": {"schema": NaN}}'

    response = api(buyer).post(plans_url(rfp), body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert not GatePlan.objects.exists()


def test_post_refuses_a_document_over_the_size_cap(
    rfp: Rfp, buyer: Any, document: dict[str, Any]
) -> None:
    document["padding"] = "x" * (MAX_IMPORT_BYTES + 1)
    data = {"vendor": "acme-flash", "document": document}

    response = api(buyer).post(plans_url(rfp), data, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "too_large"
    assert not GatePlan.objects.exists()


def test_post_refuses_a_second_draft(
    rfp: Rfp, buyer: Any, draft: Any, gate_bundle: Bundle
) -> None:
    response = api(buyer).post(plans_url(rfp), {"vendor": "acme-flash"}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "draft_exists"


def test_post_waits_for_the_bids_to_be_opened(rfp: Rfp, buyer: Any) -> None:
    response = api(buyer).post(plans_url(rfp), {"vendor": "acme-flash"}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "sealed"


@pytest.mark.parametrize(
    ("persona", "code"),
    [("evaluator", 403), ("vendor_a", 403), ("auditor", 403), ("outsider", 404)],
)
def test_post_is_for_the_buyer_only(
    persona: str,
    code: int,
    rfp: Rfp,
    document: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    user = request.getfixturevalue(persona)
    data = {"vendor": "acme-flash", "document": document}

    response = api(user).post(plans_url(rfp), data, format="json")

    assert response.status_code == code
    assert not GatePlan.objects.exists()


# --- reading ------------------------------------------------------------------------


def test_list_shows_the_buyer_every_version(rfp: Rfp, buyer: Any, draft: Any) -> None:
    body = api(buyer).get(plans_url(rfp)).json()

    assert body["count"] == 2
    assert [(p["version"], p["status"]) for p in body["results"]] == [
        (2, "draft"),
        (1, "frozen"),
    ]


def test_list_shows_a_vendor_its_frozen_plans_only(
    rfp: Rfp, draft: Any, vendor_a: Any, vendor_b: Any
) -> None:
    own = api(vendor_a).get(plans_url(rfp)).json()
    other = api(vendor_b).get(plans_url(rfp)).json()

    assert [p["status"] for p in own["results"]] == ["frozen"]
    assert (other["count"], other["results"]) == (0, [])


def test_detail_hides_drafts_and_other_vendors_plans(
    draft: Any, frozen_plan: Any, vendor_a: Any, vendor_b: Any, outsider: Any
) -> None:
    assert api(vendor_a).get(plan_url(frozen_plan)).status_code == 200
    assert api(vendor_a).get(plan_url(draft)).status_code == 404
    assert api(vendor_b).get(plan_url(frozen_plan)).status_code == 404
    assert api(outsider).get(plans_url(frozen_plan.rfp)).status_code == 404
    assert api().get(plan_url(frozen_plan)).status_code == 401


def test_export_is_the_stored_canonical_bytes(frozen_plan: Any, auditor: Any) -> None:
    response = api(auditor).get(plan_url(frozen_plan, "export/"))

    assert response.status_code == 200
    assert response.content == frozen_plan.document.encode("utf-8")
    assert hashlib.sha256(response.content).hexdigest() == frozen_plan.sha256
    assert "gate-plan-" in response["Content-Disposition"]


# --- editing the draft --------------------------------------------------------------


def test_patch_edits_the_draft(draft: Any, buyer: Any) -> None:
    document = copy.deepcopy(draft.plan)
    document["gates"][0]["criteria"][0]["min_runs"] = 5
    data = {
        "document": document,
        "lab_environment_accepted": True,
        "lab_environment_note": "The lab's kernel is the production kernel.",
        "max_extra_runs": 4,
    }

    response = api(buyer).patch(plan_url(draft), data, format="json")

    body = response.json()
    assert response.status_code == 200
    assert body["document"]["gates"][0]["criteria"][0]["min_runs"] == 5
    assert (body["lab_environment_accepted"], body["max_extra_runs"]) == (True, 4)
    assert body["sha256"] != draft.sha256


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"lab_environment_accepted": True}, "lab_environment_note"),
        ({"max_extra_runs": 51}, "max_extra_runs"),
        ({"max_extra_runs": -1}, "max_extra_runs"),
        ({"document": {"schema": "reprogate.gate-plan/v1"}}, "document.rfp"),
        ({"lab_environment_accepted": "maybe"}, "lab_environment_accepted"),
    ],
)
def test_patch_explains_bad_input(
    draft: Any, buyer: Any, data: dict[str, Any], path: str
) -> None:
    response = api(buyer).patch(plan_url(draft), data, format="json")

    assert response.status_code == 400
    assert path in [p["path"] for p in response.json()["problems"]]
    draft.refresh_from_db()
    assert (draft.lab_environment_accepted, draft.max_extra_runs) == (False, 0)


def test_patch_of_a_frozen_plan_is_a_conflict(frozen_plan: Any, buyer: Any) -> None:
    response = api(buyer).patch(
        plan_url(frozen_plan), {"max_extra_runs": 2}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "plan_frozen"


def test_patch_is_for_the_buyer_only(draft: Any, evaluator: Any) -> None:
    response = api(evaluator).patch(
        plan_url(draft), {"max_extra_runs": 2}, format="json"
    )

    assert response.status_code == 403


# --- freeze and new version -----------------------------------------------------------


def test_freeze_supersedes_the_previous_version(
    draft: Any, frozen_plan: Any, buyer: Any
) -> None:
    response = api(buyer).post(plan_url(draft, "freeze/"))

    frozen_plan.refresh_from_db()
    assert response.status_code == 200
    assert response.json()["status"] == "frozen"
    assert response.json()["supersedes"] == str(frozen_plan.public_id)
    assert frozen_plan.status == S.SUPERSEDED


def test_freeze_of_a_frozen_plan_is_a_conflict(frozen_plan: Any, buyer: Any) -> None:
    response = api(buyer).post(plan_url(frozen_plan, "freeze/"))

    assert response.status_code == 409


def test_new_version_drafts_a_copy(frozen_plan: Any, buyer: Any) -> None:
    response = api(buyer).post(plan_url(frozen_plan, "new-version/"))

    body = response.json()
    assert response.status_code == 201
    assert (body["version"], body["status"]) == (2, "draft")
    assert body["sha256"] == frozen_plan.sha256


def test_new_version_of_a_draft_is_a_conflict(draft: Any, buyer: Any) -> None:
    response = api(buyer).post(plan_url(draft, "new-version/"))

    assert response.status_code == 409


def test_list_filters_by_vendor_and_refuses_a_text_that_is_no_slug(
    rfp: Rfp, buyer: Any, draft: Any
) -> None:
    found = api(buyer).get(plans_url(rfp), {"vendor": "acme-flash"}).json()
    none = api(buyer).get(plans_url(rfp), {"vendor": "globex"}).json()
    refused = api(buyer).get(plans_url(rfp), {"vendor": "acme\x00flash"})

    assert {p["vendor"] for p in found["results"]} == {"acme-flash"}
    assert found["count"] == 2  # the draft and the frozen version
    assert none["results"] == []
    assert refused.status_code == 400
    assert [p["path"] for p in refused.json()["problems"]] == ["vendor"]
