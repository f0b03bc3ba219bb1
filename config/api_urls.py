from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.api import AuthTokenObtainApi, MeApi
from procurement.api import RfpDetailApi, RfpListApi

urlpatterns = [
    path("auth/token/", AuthTokenObtainApi.as_view(), name="auth-token"),
    path("me/", MeApi.as_view(), name="me"),
    path("rfps/", RfpListApi.as_view(), name="rfp-list"),
    path("rfps/<uuid:rfp_id>/", RfpDetailApi.as_view(), name="rfp-detail"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"
    ),
]
