from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.lib.defaults import (
    DEFAULT_ARTIFACTS,
    DEFAULT_CRITERIA,
    default_configuration,
)
from procurement.models import ArtifactKind, Rfp
from procurement.services.rfps import (
    RfpNotEditable,
    rfp_set_artifacts,
    rfp_set_criteria,
    rfp_set_metrics,
    rfp_update,
)
from procurement.views.markdown import render_markdown
from tests.procurement.factories_rfps import draft_rfp, published_rfp

pytestmark = pytest.mark.django_db

METRICS = {"ttft_ms", "tpot_ms", "itl_ms", "output_token_throughput_tps"} | {
    "read_clat_us",
    "gpu_util_pct",
    "ssd_write_amplification",
    "cache_hit_rate",
    "model_load_s",
}


def _formset(prefix: str, rows: list[dict[str, Any]], initial: int = 0) -> dict:
    """What a browser posts for a formset: management form plus one entry a cell."""
    data: dict[str, Any] = {
        f"{prefix}-TOTAL_FORMS": len(rows),
        f"{prefix}-INITIAL_FORMS": min(initial, len(rows)),
        f"{prefix}-MIN_NUM_FORMS": 0,
        f"{prefix}-MAX_NUM_FORMS": 1000,
    }
    for i, row in enumerate(rows):
        data.update({f"{prefix}-{i}-{k}": v for k, v in row.items() if v is not False})
    return data


def _edit(rfp: Rfp, step: str) -> str:
    return f"/rfps/{rfp.public_id}/edit/?step={step}"


# --- services -----------------------------------------------------------------------


def test_rfp_create_prefills_the_checklist_metrics_criteria_and_clauses(
    buyer_org: Organisation,
) -> None:
    rfp = draft_rfp(buyer_org)

    kinds = [a.kind for a in rfp.artifacts.all()]
    assert kinds == [k for k in ArtifactKind.values if k != ArtifactKind.OTHER]
    assert all(a.guidance for a in rfp.artifacts.all())
    assert [a.kind for a in rfp.artifacts.all() if not a.mandatory] == [
        "container_image", "iac", "runbook", "sbom"
    ]  # fmt: skip
    mandatory = [a.kind for a in rfp.artifacts.all() if a.mandatory]
    assert mandatory == [
        "workload",
        "environment",
        "harness",
        "trace",
        "cost_model",
        "report",
    ]
    assert set(rfp.metrics.values_list("name", flat=True)) == METRICS
    assert rfp.metrics.get(name="ttft_ms").stats == "p50,p95,p99,p99.9"
    assert sum(rfp.criteria.values_list("weight", flat=True)) == 100
    assert rfp.criteria.count() == 6
    assert "escrow" in rfp.escrow_clause
    assert "stop-loss" in rfp.acceptance_clause.lower()
    assert rfp.retest_vendor_funded
    assert "third-party" in rfp.audit_rights_clause
    assert AuditEvent.objects.filter(action="rfp.created").count() == 1


def test_default_criteria_are_the_six_of_the_issue() -> None:
    names = [c["name"] for c in DEFAULT_CRITERIA]

    assert names == [
        "Reproducibility completeness",
        "Hardware/software transparency",
        "Workload fidelity",
        "Metric coverage",
        "Gate-based acceptance readiness",
        "TCO",
    ]
    assert sum(c["weight"] for c in default_configuration()["criteria"]) == 100


def test_rfp_update_changes_a_draft_and_names_the_fields(
    buyer_org: Organisation, buyer: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    rfp_update(rfp=rfp, fields={"title": "New title", "min_bids": 3}, actor=buyer)

    rfp.refresh_from_db()
    assert (rfp.title, rfp.min_bids) == ("New title", 3)
    event = AuditEvent.objects.get(action="rfp.updated")
    assert event.data == {"rfp": rfp.reference, "fields": ["min_bids", "title"]}


def test_rfp_update_refuses_a_published_rfp(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    with pytest.raises(RfpNotEditable, match="addendum"):
        rfp_update(rfp=rfp, fields={"title": "Changed"}, actor=None)

    rfp.refresh_from_db()
    assert rfp.title == "KV-cache tiering"


def test_rfp_update_rejects_questions_after_submission(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)
    late = rfp.submission_deadline + timedelta(days=1)

    with pytest.raises(ProcurementError):
        rfp_update(rfp=rfp, fields={"questions_deadline": late}, actor=None)

    assert not AuditEvent.objects.filter(action="rfp.updated").exists()


def test_rfp_set_criteria_replaces_the_rows_in_order(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "TCO", "weight": 60}, {"name": "Evidence", "weight": 40}]

    rfp_set_criteria(rfp=rfp, criteria=rows, actor=None)

    assert list(rfp.criteria.values_list("name", "weight", "position")) == [
        ("TCO", 60, 0),
        ("Evidence", 40, 1),
    ]
    assert AuditEvent.objects.get(action="rfp.criteria_changed").data["count"] == 2


def test_rfp_set_metrics_refuses_a_name_twice(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "ttft_ms"}, {"name": "ttft_ms", "stats": "p99"}]

    with pytest.raises(ProcurementError, match="twice"):
        rfp_set_metrics(rfp=rfp, metrics=rows, actor=None)

    assert rfp.metrics.count() == len(default_configuration()["metrics"])


def test_rfp_set_artifacts_names_the_bad_row(buyer_org: Organisation) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"kind": "report", "title": "Report"}, {"kind": "poem", "title": "x"}]

    with pytest.raises(ProcurementError) as refused:
        rfp_set_artifacts(rfp=rfp, artifacts=rows, actor=None)

    assert [p.path for p in refused.value.problems] == ["artifacts[1].kind"]
    assert rfp.artifacts.count() == len(DEFAULT_ARTIFACTS)


def test_render_markdown_keeps_formatting_and_drops_scripts() -> None:
    html = render_markdown(
        "**bold** <script>alert(1)</script> [x](javascript:alert(1)) "
        '<img src=x onerror="alert(1)"> [ok](https://example.com)'
    )

    assert "<strong>bold</strong>" in html
    assert "script" not in html
    assert "javascript:" not in html
    assert "onerror" not in html
    assert 'href="https://example.com"' in html


# --- new RFP page -------------------------------------------------------------------


def test_new_rfp_page_creates_a_prefilled_draft(
    buyer: Any, buyer_org: Organisation, client_for: Any, clock: Any
) -> None:
    deadline = (clock.now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M")

    response = client_for(buyer).post(
        "/rfps/new/",
        {
            "buyer_organisation": buyer_org.pk,
            "reference": "RFP-2026-07",
            "title": "KV-cache tiering",
            "submission_deadline": deadline,
        },
    )

    rfp = Rfp.objects.get(reference="RFP-2026-07")
    assert response.status_code == 302
    assert response["Location"] == _edit(rfp, "basics")
    assert rfp.status == Rfp.Status.DRAFT
    assert rfp.artifacts.count() == len(DEFAULT_ARTIFACTS)


def test_new_rfp_page_explains_bad_input(
    buyer: Any, buyer_org: Organisation, client_for: Any, clock: Any
) -> None:
    past = (clock.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")

    response = client_for(buyer).post(
        "/rfps/new/",
        {"reference": "rfp 7", "title": "x", "submission_deadline": past},
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "Use capital letters, digits and dashes" in html
    assert "must be in the future" in html
    assert not Rfp.objects.exists()


@pytest.mark.parametrize("persona", ["evaluator", "vendor_a", "auditor"])
def test_new_rfp_page_is_for_buyers_only(
    persona: str, request: pytest.FixtureRequest, client_for: Any
) -> None:
    user = request.getfixturevalue(persona)

    assert client_for(user).get("/rfps/new/").status_code == 403


# --- the guided editor --------------------------------------------------------------


def test_editor_basics_step_saves_and_goes_to_the_next_step(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    data = {
        "reference": rfp.reference,
        "title": "Tiering v2",
        "description": "# Scope",
        "submission_deadline": rfp.submission_deadline.strftime("%Y-%m-%dT%H:%M"),
        "min_bids": 2,
        "addendum_extension_days": 4,
    }

    response = client_for(buyer).post(_edit(rfp, "basics"), data)

    assert response.status_code == 302
    assert response["Location"] == _edit(rfp, "artifacts")
    rfp.refresh_from_db()
    assert (rfp.title, rfp.min_bids, rfp.questions_deadline) == ("Tiering v2", 2, None)


def test_editor_basics_step_refuses_questions_after_submission(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    data = {
        "reference": rfp.reference,
        "title": rfp.title,
        "questions_deadline": "2099-01-02T00:00",
        "submission_deadline": "2099-01-01T00:00",
        "min_bids": 1,
        "addendum_extension_days": 4,
    }

    response = client_for(buyer).post(_edit(rfp, "basics"), data)

    assert response.status_code == 200
    assert "must come before the submission deadline" in response.content.decode()
    rfp.refresh_from_db()
    assert rfp.submission_deadline.year != 2099


def test_editor_criteria_step_shows_the_weight_error_and_saves_nothing(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "TCO", "weight": 50}, {"name": "Evidence", "weight": 30}]

    response = client_for(buyer).post(
        _edit(rfp, "criteria"), _formset("criteria", rows)
    )

    assert response.status_code == 200
    assert "add up to 80; they must add up to 100" in response.content.decode()
    assert rfp.criteria.count() == 6


def test_editor_criteria_step_saves_weights_summing_to_100(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "TCO", "weight": 70}, {"name": "Evidence", "weight": 30}]
    rows.append({"name": "", "weight": ""})  # the blank extra row

    response = client_for(buyer).post(
        _edit(rfp, "criteria"), _formset("criteria", rows)
    )

    assert response["Location"] == _edit(rfp, "terms")
    assert list(rfp.criteria.values_list("name", flat=True)) == ["TCO", "Evidence"]


def test_editor_artifacts_step_removes_ticked_rows_and_can_stay(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [
        {"kind": a.kind, "title": a.title, "mandatory": a.mandatory}
        for a in rfp.artifacts.all()
    ]
    rows[0]["DELETE"] = "on"
    rows[1]["mandatory"] = False
    data = {**_formset("artifacts", rows, initial=len(rows)), "stay": ""}

    response = client_for(buyer).post(_edit(rfp, "artifacts"), data)

    assert response["Location"] == _edit(rfp, "artifacts")
    assert rfp.artifacts.count() == len(DEFAULT_ARTIFACTS) - 1
    assert not rfp.artifacts.get(kind="environment").mandatory


def test_editor_workloads_step_saves_workloads_and_metrics(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "ttft_ms", "stats": "p50,p99", "description": "TTFT"}]
    data = {
        "workload_requirements": "480B MoE",
        **_formset("metrics", rows),
        **_formset("workloads", []),
        **_formset("accelerators", []),
    }

    response = client_for(buyer).post(_edit(rfp, "workloads"), data)

    assert response["Location"] == _edit(rfp, "criteria")
    rfp.refresh_from_db()
    assert rfp.workload_requirements == "480B MoE"
    assert list(rfp.metrics.values_list("name", "stats")) == [("ttft_ms", "p50,p99")]


def test_editor_workloads_step_rejects_a_bad_metric_name(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rows = [{"name": "TTFT ms", "stats": "p50 p99"}]
    data = {"workload_requirements": "", **_formset("metrics", rows)}

    response = client_for(buyer).post(_edit(rfp, "workloads"), data)

    html = response.content.decode()
    assert "Use lower_snake_case." in html
    assert "Comma-separated statistics" in html
    assert rfp.metrics.count() == 9


def test_editor_terms_step_saves_the_clauses(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    data = {
        "escrow_clause": "Escrow everything.",
        "acceptance_clause": "Gates.",
        "retest_clause": "Re-test.",
        "retest_tolerance_pct": "5.5",
        "audit_rights_clause": "Audit.",
        "standstill_days": 7,
        "escrow_retention_years": 12,
    }

    response = client_for(buyer).post(_edit(rfp, "terms"), data)

    assert response["Location"] == _edit(rfp, "invitations")
    rfp.refresh_from_db()
    assert rfp.escrow_retention_years == 12
    assert (rfp.escrow_clause, str(rfp.retest_tolerance_pct)) == (
        "Escrow everything.",
        "5.50",
    )
    assert not rfp.retest_vendor_funded


def test_editor_invitations_step_invites_and_removes_a_vendor(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    client = client_for(buyer)

    client.post(_edit(rfp, "invitations"), {"vendor": "acme-flash", "stay": ""})
    invited = list(rfp.invited_vendors.values_list("slug", flat=True))
    client.post(f"/rfps/{rfp.public_id}/invitations/acme-flash/remove/")

    assert invited == ["acme-flash"]
    assert not rfp.invited_vendors.exists()


def test_editor_review_step_lists_what_blocks_publishing(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    html = client_for(buyer).get(_edit(rfp, "review")).content.decode()

    assert 'data-testid="publish-problems"' in html
    assert "Invite at least one vendor." in html


def test_editor_of_a_published_rfp_points_to_addenda(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation, client_for: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = client_for(buyer).post(_edit(rfp, "basics"), {"title": "Changed"})

    html = response.content.decode()
    assert 'data-testid="edit-locked"' in html
    assert f"/rfps/{rfp.public_id}/clarifications/" in html
    rfp.refresh_from_db()
    assert rfp.title == "KV-cache tiering"


def test_editor_refuses_other_roles(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    evaluator: Any,
    vendor_a: Any,
    outsider: Any,
    client_for: Any,
) -> None:
    draft = draft_rfp(buyer_org, vendor_a_org)
    published = published_rfp(buyer_org, vendor_a_org, reference="RFP-T-901")

    assert client_for(evaluator).get(_edit(draft, "basics")).status_code == 403
    assert client_for(vendor_a).get(_edit(draft, "basics")).status_code == 404
    assert client_for(vendor_a).get(_edit(published, "basics")).status_code == 403
    assert client_for(outsider).get(_edit(published, "basics")).status_code == 404


def test_editor_unknown_step_is_404(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    assert client_for(buyer).get(_edit(rfp, "nonsense")).status_code == 404


# --- overview and list --------------------------------------------------------------


def test_overview_renders_the_description_safely(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    description = "## Scope\n\n<script>alert(1)</script>"
    rfp = draft_rfp(
        buyer_org, configuration={**default_configuration(), "description": description}
    )

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert "<h2>Scope</h2>" in html
    assert "alert(1)" not in html


def test_overview_shows_checklist_metrics_criteria_and_terms(
    vendor_a: Any, buyer_org: Organisation, vendor_a_org: Any, client_for: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    html = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert 'data-testid="artifact-environment"' in html
    assert "mandatory" in html
    assert 'data-testid="metric-read_clat_us"' in html
    assert "Gate-based acceptance readiness" in html
    assert 'data-testid="weight-total"><strong>100%' in html
    assert "Tolerance band" in html
    assert 'data-testid="rfp-actions"' not in html
    assert "frozen at award" not in html


def test_overview_shows_terms_frozen_at_award(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Any, client_for: Any, clock: Any
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)
    Rfp.objects.filter(pk=rfp.pk).update(terms_frozen_at=clock.now())

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert 'data-testid="terms-frozen"' in html


def test_overview_offers_the_buyer_edit_publish_cancel_and_template(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Any, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()

    for testid in ("rfp-edit", "rfp-publish", "cancel-form", "template-save-form"):
        assert f'data-testid="{testid}"' in html


def test_rfp_list_filters_by_status_and_offers_new_rfp(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Any, client_for: Any
) -> None:
    draft_rfp(buyer_org, reference="RFP-DRAFT-1")
    published_rfp(buyer_org, vendor_a_org, reference="RFP-PUB-1")

    html = client_for(buyer).get("/rfps/", {"status": "draft"}).content.decode()

    assert "RFP-DRAFT-1" in html
    assert "RFP-PUB-1" not in html
    assert 'data-testid="rfp-new"' in html


def test_rfp_list_hides_new_rfp_from_vendors_and_explains_emptiness(
    vendor_a: Any, client_for: Any
) -> None:
    html = client_for(vendor_a).get("/rfps/").content.decode()

    assert 'data-testid="rfp-new"' not in html
    assert "vendors see the RFPs they are invited to" in html
