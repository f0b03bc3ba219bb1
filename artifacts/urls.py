from __future__ import annotations

from artifacts.views import urlpatterns as views_urlpatterns

app_name = "artifacts"
urlpatterns = [*views_urlpatterns]
