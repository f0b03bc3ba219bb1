from __future__ import annotations

from artifacts.escrow_views import urlpatterns as escrow_urlpatterns
from artifacts.views import urlpatterns as views_urlpatterns

app_name = "artifacts"
urlpatterns = [*views_urlpatterns, *escrow_urlpatterns]
