"""The gates API: gate board, evaluations, plans, decisions,
re-test obligations."""

from __future__ import annotations

from gates.api import board, decisions, evaluations, obligations, plans

urlpatterns = [
    *board.urlpatterns,
    *evaluations.urlpatterns,
    *plans.urlpatterns,
    *decisions.urlpatterns,
    *obligations.urlpatterns,
]
