"""The benchmarks API's URLs, mounted under ``/api/v1/``."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("benchmarks.api.campaigns")),
    path("runner/", include("benchmarks.api.runner")),
]
