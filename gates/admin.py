"""Read-only admin of the gates: plans, evaluations and their criteria, the gate
campaigns, decisions, re-test obligations and signed reports can be looked at,
never added, changed or deleted. Their services are the only writers (a plan is
frozen, a decision seconded, an obligation answered through them, each with its
audit row), and an evaluation is a deposited, logged record."""

from __future__ import annotations

from django.contrib import admin

from artifacts.admin import ReadOnlyAdmin
from gates.models import (
    CriterionResult,
    Decision,
    Dispute,
    Evaluation,
    GateCampaign,
    GatePlan,
    Report,
    RetestObligation,
)


@admin.register(GatePlan)
class GatePlanAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "vendor_organisation", "version", "status", "frozen_at"]
    list_filter = ["status"]
    list_select_related = ["rfp", "vendor_organisation"]
    search_fields = ["rfp__reference", "vendor_organisation__slug", "sha256"]
    fields = (
        "public_id",
        "rfp",
        "vendor_organisation",
        "bundle",
        "version",
        "status",
        "sha256",
        "lab_environment_accepted",
        "lab_environment_note",
        "max_extra_runs",
        "created_by",
        "created_at",
        "frozen_by",
        "frozen_at",
        "supersedes",
        "document",
    )
    readonly_fields = fields


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = [
        "public_id",
        "rfp",
        "vendor_organisation",
        "gate",
        "verdict",
        "evaluated_at",
    ]
    list_filter = ["verdict", "gate"]
    list_select_related = ["rfp", "vendor_organisation"]
    search_fields = ["rfp__reference", "vendor_organisation__slug", "public_id"]
    fields = (
        "public_id",
        "rfp",
        "vendor_organisation",
        "plan",
        "gate",
        "campaign",
        "verdict",
        "score_pct",
        "max_drift",
        "stop_loss_triggered",
        "more_runs_needed",
        "obligation",
        "deposit",
        "evaluated_by",
        "evaluated_at",
        "plan_sha256",
        "results_sha256",
        "evaluation_sha256",
        "plan_document",
        "results_document",
        "evaluation_document",
    )
    readonly_fields = fields


@admin.register(CriterionResult)
class CriterionResultAdmin(ReadOnlyAdmin):
    list_display = ["evaluation", "position", "criterion", "verdict", "estimate"]
    list_filter = ["verdict", "blocking"]
    list_select_related = ["evaluation"]
    search_fields = ["criterion", "metric", "evaluation__public_id"]
    fields = (
        "evaluation",
        "position",
        "criterion",
        "metric",
        "stat",
        "scenario",
        "direction",
        "blocking",
        "verdict",
        "reason",
        "claim",
        "limit",
        "estimate",
        "ci_low",
        "ci_high",
        "cv_pct",
        "runs",
        "more_runs_needed",
    )
    readonly_fields = fields


@admin.register(GateCampaign)
class GateCampaignAdmin(ReadOnlyAdmin):
    list_display = ["campaign", "plan", "gate", "automatic", "requested_at"]
    list_filter = ["gate", "automatic"]
    list_select_related = ["campaign", "plan"]
    fields = (
        "plan",
        "gate",
        "campaign",
        "after",
        "extra_runs",
        "automatic",
        "requested_by",
        "requested_at",
        "evaluation",
    )
    readonly_fields = fields


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["plan", "gate", "kind", "status", "decided_by", "decided_at"]
    list_filter = ["kind", "status"]
    list_select_related = ["plan", "decided_by"]
    search_fields = ["plan__rfp__reference", "plan__vendor_organisation__slug"]
    fields = (
        "public_id",
        "plan",
        "gate",
        "evaluation",
        "kind",
        "status",
        "rationale",
        "decided_by",
        "decided_at",
        "second_by",
        "second_at",
        "second_note",
        "withdrawn_by",
        "withdrawn_at",
        "log_index",
    )
    readonly_fields = fields


@admin.register(RetestObligation)
class RetestObligationAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "vendor_organisation", "gate", "status", "deadline"]
    list_filter = ["status"]
    list_select_related = ["rfp", "vendor_organisation"]
    search_fields = ["rfp__reference", "vendor_organisation__slug"]
    fields = (
        "public_id",
        "rfp",
        "vendor_organisation",
        "plan",
        "gate",
        "evaluation",
        "criteria",
        "reason",
        "status",
        "deadline",
        "max_attempts",
        "attempts_used",
        "cost_bearer",
        "bundle",
        "campaign",
        "requested_by",
        "requested_at",
        "closed_at",
        "breached_at",
        "created_at",
    )
    readonly_fields = fields


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):
    list_display = ["rfp", "vendor_organisation", "gate", "status", "opened_at"]
    list_filter = ["status"]
    list_select_related = ["rfp", "vendor_organisation"]
    search_fields = ["rfp__reference", "vendor_organisation__slug"]
    fields = (
        "public_id",
        "rfp",
        "vendor_organisation",
        "plan",
        "gate",
        "evaluation",
        "reason",
        "bundle",
        "status",
        "opened_by",
        "opened_at",
        "decided_by",
        "decided_at",
        "decision_reason",
        "retest",
        "log_index",
    )
    readonly_fields = fields


@admin.register(Report)
class ReportAdmin(ReadOnlyAdmin):
    list_display = ["kind", "rfp", "vendor_organisation", "status", "requested_at"]
    list_filter = ["kind", "status"]
    list_select_related = ["rfp", "vendor_organisation"]
    search_fields = ["rfp__reference", "vendor_organisation__slug", "pdf_sha256"]
    fields = (
        "public_id",
        "kind",
        "evaluation",
        "decision",
        "rfp",
        "vendor_organisation",
        "status",
        "progress_pct",
        "progress_step",
        "error",
        "attempts",
        "claimed_at",
        "pdf_sha256",
        "statement_sha256",
        "pages",
        "timestamped",
        "signer_fingerprint",
        "deposit",
        "requested_by",
        "requested_at",
        "finished_at",
    )
    readonly_fields = fields
