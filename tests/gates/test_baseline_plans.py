"""Plans with criteria held to the buyer's baseline: the API refuses a bad one
with every problem at its path, the plan page states the rule as the limit, and
the editor shows, keeps and edits a baseline criterion."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import Organisation
from gates.models import GatePlan
from gates.services.plans import plan_new_version
from procurement.models import Rfp
from tests.gates.api.support import api
from tests.gates.engine.support import criterion
from tests.gates.support import make_frozen_plan, plan_document
from tests.gates.test_plan_views import fields, plan_url

pytestmark = pytest.mark.django_db

RELATIVE = criterion(
    id="ttft-vs-current", scenario="cold-c1", claim=None, band=None,
    baseline={"scenario": "warm-c1", "pct": 10},
)  # fmt: skip


def _document(rfp: Rfp, *criteria: dict[str, Any]) -> dict[str, Any]:
    return plan_document(rfp.reference, "acme-flash", criteria=list(criteria))


@pytest.fixture
def baseline_draft(rfp: Rfp, vendor_a_org: Organisation, buyer: Any) -> GatePlan:
    frozen = make_frozen_plan(rfp, vendor_a_org, buyer, _document(rfp, RELATIVE))
    return plan_new_version(plan=frozen, actor=buyer)


def test_api_names_each_bad_baseline_field_by_its_path(rfp: Rfp, buyer: Any) -> None:
    bad = RELATIVE | {"claim": 180.0, "baseline": {"scenario": "", "pct": 150}}
    body = {"vendor": "acme-flash", "document": _document(rfp, bad)}

    response = api(buyer).post(
        f"/api/v1/rfps/{rfp.public_id}/gate-plans/", body, format="json"
    )

    assert response.status_code == 400
    paths = {p["path"] for p in response.json()["problems"]}
    at = "document.gates[0].criteria[0]"
    assert {f"{at}.claim", f"{at}.baseline.scenario", f"{at}.baseline.pct"} <= paths
    assert not GatePlan.objects.exists()


def test_api_takes_a_plan_held_to_the_baseline(rfp: Rfp, buyer: Any) -> None:
    body = {"vendor": "acme-flash", "document": _document(rfp, RELATIVE)}

    response = api(buyer).post(
        f"/api/v1/rfps/{rfp.public_id}/gate-plans/", body, format="json"
    )

    assert response.status_code == 201, response.content
    plan = GatePlan.objects.get()
    assert plan.plan["gates"][0]["criteria"][0]["baseline"] == RELATIVE["baseline"]


def test_plan_page_states_the_baseline_rule_as_the_limit(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, client_for: Any
) -> None:
    make_frozen_plan(rfp, vendor_a_org, buyer, _document(rfp, RELATIVE))

    body = client_for(buyer).get(plan_url(rfp, vendor_a_org)).content.decode()

    assert "up to the baseline median of warm-c1 +10 %" in body


def test_editor_round_trip_keeps_a_baseline_criterion(
    rfp: Rfp, vendor_a_org: Organisation, baseline_draft: GatePlan, client_for: Any
) -> None:
    editor: Client = client_for(baseline_draft.created_by)
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    assert (form["g-0-c-0-limit_kind"], form["g-0-c-0-baseline_scenario"]) == (
        "baseline",
        "warm-c1",
    )
    assert response.status_code == 302
    saved = GatePlan.objects.get(pk=baseline_draft.pk)
    assert saved.document == baseline_draft.document


def test_editor_turns_a_claim_into_a_baseline_and_names_its_problems(
    rfp: Rfp, vendor_a_org: Organisation, baseline_draft: GatePlan, client_for: Any
) -> None:
    editor: Client = client_for(baseline_draft.created_by)
    url = plan_url(rfp, vendor_a_org, "gates:plan_edit")
    form = fields(editor.get(url))
    form.update({"g-1-c-0-baseline_scenario": "", "g-1-c-0-band": "250"})

    refused = editor.post(url, form)
    form.update({"g-1-c-0-baseline_scenario": "cold-c1", "g-1-c-0-band": "5"})
    editor.post(url, form)

    body = refused.content.decode()
    assert refused.status_code == 400
    assert "must be a non-empty string" in body
    assert "must be between 0 and 100" in body
    saved = GatePlan.objects.get(pk=baseline_draft.pk).plan["gates"][1]["criteria"][0]
    assert saved["baseline"] == {"scenario": "cold-c1", "pct": 5}
