"""The gates API: gate board, evaluations, plans, decisions, disputes,
re-test obligations, signed reports and evaluation evidence packages."""

from __future__ import annotations

from django.urls import path

from gates.api.board import GateBoardApi
from gates.api.campaigns import GateCampaignStartApi
from gates.api.decisions import (
    DecisionRecordApi,
    DecisionSecondApi,
    DecisionWithdrawApi,
)
from gates.api.disputes import (
    DisputeDetailApi,
    DisputeListApi,
    DisputeOpenApi,
    DisputeRejectApi,
    DisputeUpholdApi,
    DisputeWithdrawApi,
)
from gates.api.evaluations import (
    EvaluationDetailApi,
    EvaluationMoreRunsApi,
    GateEvaluateApi,
)
from gates.api.evidence import EvaluationEvidenceApi
from gates.api.obligations import (
    ObligationDetailApi,
    ObligationListApi,
    ObligationRequestApi,
)
from gates.api.plans import (
    PlanDetailApi,
    PlanExportApi,
    PlanFreezeApi,
    PlanListApi,
    PlanNewVersionApi,
)
from gates.api.reports import (
    DecisionCertificateApi,
    DecisionCertificatePdfApi,
    DecisionCertificateStatementApi,
    EvaluationReportApi,
    EvaluationReportPdfApi,
    EvaluationReportStatementApi,
    ReportKeyApi,
)

urlpatterns = [
    # board.py
    path("rfps/<uuid:rfp_id>/gate-board/", GateBoardApi.as_view(), name="gate-board"),
    # evaluations.py
    path(
        "evaluations/<uuid:evaluation_id>/",
        EvaluationDetailApi.as_view(),
        name="gate-evaluation-detail",
    ),
    path(
        "evaluations/<uuid:evaluation_id>/more-runs/",
        EvaluationMoreRunsApi.as_view(),
        name="gate-evaluation-more-runs",
    ),
    path(
        "gate-plans/<uuid:plan_id>/gates/<str:gate>/evaluate/",
        GateEvaluateApi.as_view(),
        name="gate-evaluate",
    ),
    # plans.py
    path("rfps/<uuid:rfp_id>/gate-plans/", PlanListApi.as_view(), name="gate-plans"),
    path("gate-plans/<uuid:plan_id>/", PlanDetailApi.as_view(), name="gate-plan"),
    path(
        "gate-plans/<uuid:plan_id>/freeze/",
        PlanFreezeApi.as_view(),
        name="gate-plan-freeze",
    ),
    path(
        "gate-plans/<uuid:plan_id>/new-version/",
        PlanNewVersionApi.as_view(),
        name="gate-plan-new-version",
    ),
    path(
        "gate-plans/<uuid:plan_id>/export/",
        PlanExportApi.as_view(),
        name="gate-plan-export",
    ),
    # campaigns.py
    path(
        "gate-plans/<uuid:plan_id>/gates/<str:gate>/campaigns/",
        GateCampaignStartApi.as_view(),
        name="gate-campaign-start",
    ),
    # decisions.py
    path(
        "gate-plans/<uuid:plan_id>/gates/<str:gate>/decisions/",
        DecisionRecordApi.as_view(),
        name="gate-decision-record",
    ),
    path(
        "decisions/<uuid:decision_id>/second/",
        DecisionSecondApi.as_view(),
        name="gate-decision-second",
    ),
    path(
        "decisions/<uuid:decision_id>/withdraw/",
        DecisionWithdrawApi.as_view(),
        name="gate-decision-withdraw",
    ),
    # obligations.py
    path(
        "retest-obligations/",
        ObligationListApi.as_view(),
        name="retest-obligation-list",
    ),
    path(
        "retest-obligations/<uuid:obligation_id>/",
        ObligationDetailApi.as_view(),
        name="retest-obligation-detail",
    ),
    path(
        "retest-obligations/<uuid:obligation_id>/request/",
        ObligationRequestApi.as_view(),
        name="retest-obligation-request",
    ),
    # disputes.py
    path(
        "evaluations/<uuid:evaluation_id>/disputes/",
        DisputeOpenApi.as_view(),
        name="gate-dispute-open",
    ),
    path("disputes/", DisputeListApi.as_view(), name="gate-dispute-list"),
    path(
        "disputes/<uuid:dispute_id>/",
        DisputeDetailApi.as_view(),
        name="gate-dispute-detail",
    ),
    path(
        "disputes/<uuid:dispute_id>/uphold/",
        DisputeUpholdApi.as_view(),
        name="gate-dispute-uphold",
    ),
    path(
        "disputes/<uuid:dispute_id>/reject/",
        DisputeRejectApi.as_view(),
        name="gate-dispute-reject",
    ),
    path(
        "disputes/<uuid:dispute_id>/withdraw/",
        DisputeWithdrawApi.as_view(),
        name="gate-dispute-withdraw",
    ),
    # reports.py
    path(
        "evaluations/<uuid:evaluation_id>/report/",
        EvaluationReportApi.as_view(),
        name="gate-evaluation-report",
    ),
    path(
        "evaluations/<uuid:evaluation_id>/report.pdf",
        EvaluationReportPdfApi.as_view(),
        name="gate-evaluation-report-pdf",
    ),
    path(
        "evaluations/<uuid:evaluation_id>/statement.json",
        EvaluationReportStatementApi.as_view(),
        name="gate-evaluation-report-statement",
    ),
    path(
        "decisions/<uuid:decision_id>/certificate/",
        DecisionCertificateApi.as_view(),
        name="gate-decision-certificate",
    ),
    path(
        "decisions/<uuid:decision_id>/certificate.pdf",
        DecisionCertificatePdfApi.as_view(),
        name="gate-decision-certificate-pdf",
    ),
    path(
        "decisions/<uuid:decision_id>/certificate.statement.json",
        DecisionCertificateStatementApi.as_view(),
        name="gate-decision-certificate-statement",
    ),
    path("reports/key", ReportKeyApi.as_view(), name="report-key"),
    # evidence.py
    path(
        "evaluations/<uuid:evaluation_id>/evidence/",
        EvaluationEvidenceApi.as_view(),
        name="gate-evaluation-evidence",
    ),
]
