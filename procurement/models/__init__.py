from __future__ import annotations

from procurement.models.bid import (
    BID_TRANSITIONS,
    Bid,
    BidDocument,
    BidOpening,
    BidReceipt,
    CostModelInput,
)
from procurement.models.clarification import Addendum, Clarification
from procurement.models.evaluation import (
    AWARD_REQUEST_TRANSITIONS,
    Award,
    AwardRequest,
    Score,
    ScoreSheet,
    TcoFormula,
)
from procurement.models.rfp import (
    RFP_TRANSITIONS,
    ArtifactKind,
    Criterion,
    RequiredArtifact,
    RequiredMetric,
    Rfp,
    RfpTemplate,
)

__all__ = [
    "AWARD_REQUEST_TRANSITIONS",
    "BID_TRANSITIONS",
    "RFP_TRANSITIONS",
    "Addendum",
    "ArtifactKind",
    "Award",
    "AwardRequest",
    "Bid",
    "BidDocument",
    "BidOpening",
    "BidReceipt",
    "Clarification",
    "CostModelInput",
    "Criterion",
    "RequiredArtifact",
    "RequiredMetric",
    "Rfp",
    "RfpTemplate",
    "Score",
    "ScoreSheet",
    "TcoFormula",
]
