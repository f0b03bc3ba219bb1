"""The artifacts API's URLs, mounted under ``/api/v1/``: signing keys, bundles, the
transparency log, escrow deposits and releases."""

from __future__ import annotations

from django.urls import path

from artifacts.api.bundles import (
    BundleDetailApi,
    BundleDownloadApi,
    BundleFileListApi,
    BundleListApi,
)
from artifacts.api.escrow import (
    DepositBlobListApi,
    DepositDetailApi,
    DepositLegalHoldApi,
    DepositListApi,
    DepositRetentionApi,
    EvidencePackageApi,
)
from artifacts.api.keys import AllowedSignersApi, SigningKeyListApi, SigningKeyRevokeApi
from artifacts.api.log import (
    LogCheckpointApi,
    LogConsistencyProofApi,
    LogInclusionProofApi,
    LogKeyApi,
)
from artifacts.api.release import (
    ReleaseApproveApi,
    ReleaseCertificateApi,
    ReleaseDetailApi,
    ReleaseExecuteApi,
    ReleaseListApi,
    ReleaseObjectApi,
    ReleasePackageApi,
    ReleaseRejectApi,
    ReleaseWithdrawApi,
)

urlpatterns = [
    # keys.py
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
    # bundles.py
    path("rfps/<uuid:rfp_id>/bundles/", BundleListApi.as_view(), name="bundle-list"),
    path("bundles/<uuid:bundle_id>/", BundleDetailApi.as_view(), name="bundle-detail"),
    path(
        "bundles/<uuid:bundle_id>/files/",
        BundleFileListApi.as_view(),
        name="bundle-file-list",
    ),
    path(
        "bundles/<uuid:bundle_id>/download/",
        BundleDownloadApi.as_view(),
        name="bundle-download",
    ),
    # log.py
    path("log/checkpoint", LogCheckpointApi.as_view(), name="log-checkpoint"),
    path("log/key", LogKeyApi.as_view(), name="log-key"),
    path("log/proof/inclusion", LogInclusionProofApi.as_view(), name="log-inclusion"),
    path(
        "log/proof/consistency",
        LogConsistencyProofApi.as_view(),
        name="log-consistency",
    ),
    # escrow.py
    path(
        "bundles/<uuid:bundle_id>/evidence/",
        EvidencePackageApi.as_view(),
        name="bundle-evidence",
    ),
    path("escrow/deposits/", DepositListApi.as_view(), name="deposit-list"),
    path(
        "escrow/deposits/<uuid:deposit_id>/",
        DepositDetailApi.as_view(),
        name="deposit-detail",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/blobs/",
        DepositBlobListApi.as_view(),
        name="deposit-blob-list",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/legal-hold/",
        DepositLegalHoldApi.as_view(),
        name="deposit-legal-hold",
    ),
    path(
        "escrow/deposits/<uuid:deposit_id>/retention/",
        DepositRetentionApi.as_view(),
        name="deposit-retention",
    ),
    # release.py
    path("escrow/releases/", ReleaseListApi.as_view(), name="release-list"),
    path(
        "escrow/releases/<uuid:release_id>/",
        ReleaseDetailApi.as_view(),
        name="release-detail",
    ),
    path(
        "escrow/releases/<uuid:release_id>/object/",
        ReleaseObjectApi.as_view(),
        name="release-object",
    ),
    path(
        "escrow/releases/<uuid:release_id>/approve/",
        ReleaseApproveApi.as_view(),
        name="release-approve",
    ),
    path(
        "escrow/releases/<uuid:release_id>/reject/",
        ReleaseRejectApi.as_view(),
        name="release-reject",
    ),
    path(
        "escrow/releases/<uuid:release_id>/withdraw/",
        ReleaseWithdrawApi.as_view(),
        name="release-withdraw",
    ),
    path(
        "escrow/releases/<uuid:release_id>/execute/",
        ReleaseExecuteApi.as_view(),
        name="release-execute",
    ),
    path(
        "escrow/releases/<uuid:release_id>/certificate/",
        ReleaseCertificateApi.as_view(),
        name="release-certificate",
    ),
    path(
        "escrow/releases/<uuid:release_id>/package/",
        ReleasePackageApi.as_view(),
        name="release-package",
    ),
]
