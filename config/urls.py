from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views import defaults
from django.views.generic import RedirectView

from accounts.api_errors import json_not_found, json_server_error
from portal import metrics_views
from portal import views as portal_views

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="portal:dashboard"), name="home"),
    path("healthz", portal_views.healthz, name="healthz"),
    path("metrics", metrics_views.metrics, name="metrics"),
    path("dashboard/", include(("portal.urls", "portal"))),
    path("accounts/", include("accounts.urls")),
    path("rfps/", include("procurement.urls")),
    path("artifacts/", include("artifacts.urls")),
    path("lab/", include("benchmarks.urls")),
    path("gates/", include("gates.urls")),
    path("api/v1/", include("config.api_urls")),
    path("admin/", admin.site.urls),
]


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    """JSON under /api/, the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return json_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return json_server_error(request)
    return defaults.server_error(request)
