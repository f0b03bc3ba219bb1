from __future__ import annotations

from procurement.api import rfps

urlpatterns = [*rfps.urlpatterns]
