"""The gates API: gate board, evaluations, plans, decisions,
re-test obligations, signed reports and evaluation evidence packages."""

from __future__ import annotations

from gates.api import (
    board,
    campaigns,
    decisions,
    evaluations,
    evidence,
    obligations,
    plans,
    reports,
)

urlpatterns = [
    *board.urlpatterns,
    *evaluations.urlpatterns,
    *plans.urlpatterns,
    *campaigns.urlpatterns,
    *decisions.urlpatterns,
    *obligations.urlpatterns,
    *reports.urlpatterns,
    *evidence.urlpatterns,
]
