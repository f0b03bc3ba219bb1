from __future__ import annotations

import sys

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views import defaults
from django.views.generic import RedirectView

from accounts.api.errors import json_not_found, json_server_error
from accounts.views.disk_full import disk_full_response, is_disk_full
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
    """507 for a full disk (what failed outside a view, e.g. the session saved
    after it: accounts/views/disk_full.py); else JSON under /api/, the page
    elsewhere."""
    if is_disk_full(sys.exc_info()[1]):
        return disk_full_response(request)
    if request.path.startswith("/api/"):
        return json_server_error(request)
    return defaults.server_error(request)
