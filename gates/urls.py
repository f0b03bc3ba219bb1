from __future__ import annotations

from gates.views import board, decisions, plans, reports, retests, runs

app_name = "gates"
urlpatterns = [
    *board.urlpatterns,
    *plans.urlpatterns,
    *decisions.urlpatterns,
    *retests.urlpatterns,
    *runs.urlpatterns,
    *reports.urlpatterns,
]
