from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerView

from accounts.api import ApiSchemaApi, AuthTokenObtainApi, MeApi

urlpatterns = [
    path("auth/token/", AuthTokenObtainApi.as_view(), name="auth-token"),
    path("me/", MeApi.as_view(), name="me"),
    path("", include("procurement.api.urls")),
    path("", include("artifacts.api.urls")),
    path("", include("benchmarks.api")),
    path("", include("gates.api.urls")),
    path("schema/", ApiSchemaApi.as_view(), name="api-schema"),
    path(
        "docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"
    ),
]
