"""Reads of bundle evidence through the provider registry
(``procurement.selectors.evidence_sources``):
each vendor's newest accepted bundle (or the one its bid names) checked against the
RFP's required artifacts.

Sealing is the caller's duty: the buyer side asks only once the RFP is opened, a
vendor only about its own organisation."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from accounts.models import Organisation
from procurement.models import RequiredArtifact, Rfp
from procurement.selectors.evidence_sources import (
    BidEvidence,
    checklist_of,
    evidence_for,
)


def bid_evidence_for(
    rfp: Rfp,
    organisation_ids: Collection[int],
    *,
    artifacts: Sequence[RequiredArtifact] | None = None,
    named: Mapping[int, str] | None = None,
) -> dict[int, BidEvidence]:
    """Every organisation asked about -> its evidence (without an accepted bundle:
    every required artifact missing). Two queries at most, whatever the number of
    organisations: the RFP's checklist (none when given or prefetched) and the
    provider's. ``named``: organisation id -> the bundle its bid names."""
    ids = list(dict.fromkeys(organisation_ids))
    artifacts = list(rfp.artifacts.all()) if artifacts is None else artifacts
    summaries = evidence_for(rfp, ids, named)
    return {pk: checklist_of(artifacts, summaries.get(pk)) for pk in ids}


def bid_evidence_own(
    rfp: Rfp, organisation: Organisation, bundle_id: str | None = None
) -> BidEvidence:
    """The vendor's own evidence on the RFP (its bid pages): of its accepted
    bundle ``bundle_id`` (public id) when given, else of its newest."""
    named = {organisation.pk: bundle_id} if bundle_id else None
    return bid_evidence_for(rfp, [organisation.pk], named=named)[organisation.pk]
