"""The benchmarks API under ``/api/v1/``: pools, campaigns and runs for people
(``campaigns``), and the runner API a lab host's agent calls with its host token
(``runner``, under ``runner/``)."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("", include("benchmarks.api.campaigns")),
    path("runner/", include("benchmarks.api.runner")),
]
