from __future__ import annotations

from procurement.api import award, bids, clarifications, evaluation, opening, rfps

urlpatterns = [
    *rfps.urlpatterns,
    *clarifications.urlpatterns,
    *bids.urlpatterns,
    *opening.urlpatterns,
    *evaluation.urlpatterns,
    *award.urlpatterns,
]
