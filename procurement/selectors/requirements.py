"""An RFP's requirements document (``reprogate.rfp-requirements/v1``), composed
from where its parts live: the RFP's stored sections, its required-metric rows
and its required-artifact rows with ``bid_requires_bundle``
(``procurement.lib.requirements`` says why)."""

from __future__ import annotations

from typing import Any

from procurement.lib.requirements import compose
from procurement.models import Rfp

LEGACY_SERIES_STAT = "timeseries"


def requirements_document(rfp: Rfp) -> dict[str, Any]:
    """The RFP's canonical §3b document: every section present (empty ones
    empty), metrics in the RFP's order, mandatory artifact kinds in the
    vocabulary's order. Two queries, or none when the rows are prefetched."""
    metrics = []
    for m in rfp.metrics.all():
        stats = [s for s in m.stats.split(",") if s]
        metrics.append(
            {
                "metric": m.name,
                # before ``series`` existed, a curve was asked for as a stat
                "stats": [s for s in stats if s != LEGACY_SERIES_STAT],
                "series": m.series or LEGACY_SERIES_STAT in stats,
            }
        )
    kinds = {a.kind for a in rfp.artifacts.all() if a.mandatory}
    return compose(
        rfp.requirements or {},
        metrics=metrics,
        mandatory_kinds=sorted(kinds),
        bid_requires_bundle=rfp.bid_requires_bundle,
    )
