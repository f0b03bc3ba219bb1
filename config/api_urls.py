from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config.headers import csp_update

# Swagger UI: its init script is a second request (the split view), so scripts stay
# 'self'; its page template carries a <style> element.
_api_docs = csp_update(style_src=["'self'", "'unsafe-inline'"])(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")
)

urlpatterns = [
    path("", include("accounts.api.urls")),
    path("", include("procurement.api.urls")),
    path("", include("artifacts.api.urls")),
    path("", include("benchmarks.api.urls")),
    path("", include("gates.api.urls")),
    path("docs/", _api_docs, name="api-docs"),
]
