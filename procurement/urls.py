from __future__ import annotations

from procurement.views import audit, bids, clarifications, evaluation, rfps

app_name = "procurement"
urlpatterns = [
    *rfps.urlpatterns,
    *clarifications.urlpatterns,
    *bids.urlpatterns,
    *evaluation.urlpatterns,
    *audit.urlpatterns,
]
