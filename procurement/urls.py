from __future__ import annotations

from procurement.views import (
    audit,
    award,
    bids,
    clarifications,
    evaluation,
    rfp_editor,
    rfps,
)

app_name = "procurement"
urlpatterns = [
    *rfp_editor.urlpatterns,
    *rfps.urlpatterns,
    *clarifications.urlpatterns,
    *bids.urlpatterns,
    *evaluation.urlpatterns,
    *award.urlpatterns,
    *audit.urlpatterns,
]
