"""The artifacts API (DESIGN §8): signing keys (``keys``) and bundles
(``bundles``); ``urlpatterns`` is included under ``/api/v1/``."""

from __future__ import annotations

from django.urls import path

from artifacts.api.bundles import (
    BundleDetailApi,
    BundleDownloadApi,
    BundleListApi,
    BundleUploadHandler,
    bundle_download_name,
)
from artifacts.api.keys import (
    AllowedSignersApi,
    PlainTextRenderer,
    SigningKeyListApi,
    SigningKeyRevokeApi,
)

__all__ = ["BundleUploadHandler", "PlainTextRenderer", "bundle_download_name"]

urlpatterns = [
    path("signing-keys/", SigningKeyListApi.as_view(), name="signing-key-list"),
    path(
        "signing-keys/<uuid:key_id>/revoke/",
        SigningKeyRevokeApi.as_view(),
        name="signing-key-revoke",
    ),
    path(
        "signing-keys/allowed_signers",
        AllowedSignersApi.as_view(),
        name="signing-key-allowed-signers",
    ),
    path("rfps/<uuid:rfp_id>/bundles/", BundleListApi.as_view(), name="bundle-list"),
    path("bundles/<uuid:bundle_id>/", BundleDetailApi.as_view(), name="bundle-detail"),
    path(
        "bundles/<uuid:bundle_id>/download/",
        BundleDownloadApi.as_view(),
        name="bundle-download",
    ),
]
