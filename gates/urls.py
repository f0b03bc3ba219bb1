from __future__ import annotations

from gates.views import board, decisions, disputes, plans, reports, retests, runs

app_name = "gates"
urlpatterns = [
    *board.urlpatterns,
    *plans.urlpatterns,
    *decisions.urlpatterns,
    *retests.urlpatterns,
    *disputes.urlpatterns,
    *runs.urlpatterns,
    *reports.urlpatterns,
]
