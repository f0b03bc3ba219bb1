from __future__ import annotations

from procurement.views import rfps

app_name = "procurement"
urlpatterns = [*rfps.urlpatterns]
