"""The procurement API's URLs, mounted under ``/api/v1/``: RFPs, clarifications and
addenda, bids, bid opening, evaluation and award."""

from __future__ import annotations

from django.urls import path

from procurement.api.award import (
    AwardApi,
    AwardCancelApi,
    AwardConfirmApi,
    AwardRequestApi,
    TcoFormulaListApi,
)
from procurement.api.bids import (
    BidDetailApi,
    BidDocumentDownloadApi,
    BidDocumentUploadApi,
    BidListApi,
    BidOwnApi,
    BidReceiptListApi,
    BidReconfirmApi,
    BidWithdrawApi,
)
from procurement.api.clarifications import (
    ClarificationAnswerApi,
    RfpAddendaApi,
    RfpClarificationsApi,
)
from procurement.api.evaluation import (
    ComparisonApi,
    ComparisonCsvApi,
    ConsensusApi,
    ScoreSheetApi,
    ScoreSheetSubmitApi,
)
from procurement.api.fidelity import RfpFidelityApi
from procurement.api.opening import (
    BidOpeningCancelApi,
    BidOpeningConfirmApi,
    BidOpeningRequestApi,
)
from procurement.api.requirements import RfpRequirementsApi
from procurement.api.rfps import (
    RfpCancelApi,
    RfpDetailApi,
    RfpInviteApi,
    RfpListApi,
    RfpPublishApi,
)

urlpatterns = [
    # rfps.py
    path("rfps/", RfpListApi.as_view(), name="rfp-list"),
    path("rfps/<uuid:rfp_id>/", RfpDetailApi.as_view(), name="rfp-detail"),
    path("rfps/<uuid:rfp_id>/publish/", RfpPublishApi.as_view(), name="rfp-publish"),
    path("rfps/<uuid:rfp_id>/cancel/", RfpCancelApi.as_view(), name="rfp-cancel"),
    path("rfps/<uuid:rfp_id>/invitations/", RfpInviteApi.as_view(), name="rfp-invite"),
    # requirements.py
    path(
        "rfps/<uuid:rfp_id>/requirements/",
        RfpRequirementsApi.as_view(),
        name="rfp-requirements",
    ),
    # clarifications.py
    path(
        "rfps/<uuid:rfp_id>/clarifications/",
        RfpClarificationsApi.as_view(),
        name="rfp-clarifications",
    ),
    path(
        "clarifications/<uuid:clarification_id>/answer/",
        ClarificationAnswerApi.as_view(),
        name="clarification-answer",
    ),
    path("rfps/<uuid:rfp_id>/addenda/", RfpAddendaApi.as_view(), name="rfp-addenda"),
    # bids.py
    path("rfps/<uuid:rfp_id>/bid/", BidOwnApi.as_view(), name="bid-own"),
    path(
        "rfps/<uuid:rfp_id>/bid/documents/",
        BidDocumentUploadApi.as_view(),
        name="bid-document-upload",
    ),
    path(
        "rfps/<uuid:rfp_id>/bid/withdraw/",
        BidWithdrawApi.as_view(),
        name="bid-withdraw",
    ),
    path(
        "rfps/<uuid:rfp_id>/bid/reconfirm/",
        BidReconfirmApi.as_view(),
        name="bid-reconfirm",
    ),
    path("rfps/<uuid:rfp_id>/bids/", BidListApi.as_view(), name="bid-list"),
    path("bids/<uuid:bid_id>/", BidDetailApi.as_view(), name="bid-detail"),
    path(
        "bids/<uuid:bid_id>/documents/<str:sha256>/",
        BidDocumentDownloadApi.as_view(),
        name="bid-document",
    ),
    path(
        "bids/<uuid:bid_id>/receipts/",
        BidReceiptListApi.as_view(),
        name="bid-receipt-list",
    ),
    # opening.py
    path(
        "rfps/<uuid:rfp_id>/opening/request/",
        BidOpeningRequestApi.as_view(),
        name="bid-opening-request",
    ),
    path(
        "rfps/<uuid:rfp_id>/opening/confirm/",
        BidOpeningConfirmApi.as_view(),
        name="bid-opening-confirm",
    ),
    path(
        "rfps/<uuid:rfp_id>/opening/cancel/",
        BidOpeningCancelApi.as_view(),
        name="bid-opening-cancel",
    ),
    # evaluation.py
    path("rfps/<uuid:rfp_id>/scores/", ScoreSheetApi.as_view(), name="rfp-scores"),
    path(
        "rfps/<uuid:rfp_id>/scores/submit/",
        ScoreSheetSubmitApi.as_view(),
        name="rfp-scores-submit",
    ),
    path("rfps/<uuid:rfp_id>/consensus/", ConsensusApi.as_view(), name="rfp-consensus"),
    path(
        "rfps/<uuid:rfp_id>/comparison/", ComparisonApi.as_view(), name="rfp-comparison"
    ),
    path("rfps/<uuid:rfp_id>/fidelity/", RfpFidelityApi.as_view(), name="rfp-fidelity"),
    path(
        "rfps/<uuid:rfp_id>/comparison.csv",
        ComparisonCsvApi.as_view(),
        name="rfp-comparison-csv",
    ),
    # award.py
    path(
        "rfps/<uuid:rfp_id>/tco-formulas/",
        TcoFormulaListApi.as_view(),
        name="rfp-tco-formulas",
    ),
    path("rfps/<uuid:rfp_id>/award/", AwardApi.as_view(), name="rfp-award"),
    path(
        "rfps/<uuid:rfp_id>/award/request/",
        AwardRequestApi.as_view(),
        name="rfp-award-request",
    ),
    path(
        "rfps/<uuid:rfp_id>/award/confirm/",
        AwardConfirmApi.as_view(),
        name="rfp-award-confirm",
    ),
    path(
        "rfps/<uuid:rfp_id>/award/cancel/",
        AwardCancelApi.as_view(),
        name="rfp-award-cancel",
    ),
]
