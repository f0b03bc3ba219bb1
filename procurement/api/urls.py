from __future__ import annotations

from procurement.api import bids, clarifications, evaluation, rfps

urlpatterns = [
    *rfps.urlpatterns,
    *clarifications.urlpatterns,
    *bids.urlpatterns,
    *evaluation.urlpatterns,
]
