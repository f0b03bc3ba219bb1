"""The accounts API's URLs, mounted under ``/api/v1/``: a token for a password,
who the token's user is, and the OpenAPI document."""

from __future__ import annotations

from django.urls import path

from accounts.api.auth import ApiSchemaApi, AuthTokenObtainApi, MeApi

urlpatterns = [
    path("auth/token/", AuthTokenObtainApi.as_view(), name="auth-token"),
    path("me/", MeApi.as_view(), name="me"),
    path("schema/", ApiSchemaApi.as_view(), name="api-schema"),
]
