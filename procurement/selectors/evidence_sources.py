"""Evidence of completeness from signed bundles, read without importing artifacts.

The dependency runs artifacts → procurement, so procurement cannot ask for bundles
itself. Instead artifacts registers an *evidence provider* (``evidence_provider``) when
Django starts (``ArtifactsConfig.ready()`` →
``artifacts.selectors.procurement_hooks``): a callable that
takes an RFP (and optionally the organisations asked about, and the bundle each
one's bid names) and returns, per vendor organisation id, an ``EvidenceSummary``
of the accepted bundle its bid names, else of its newest accepted bundle on the
RFP. Vendors without an accepted bundle are simply absent.

With no provider registered (procurement on its own), every vendor has "no
accepted bundle". Callers must respect sealing themselves: the buyer side asks
only after opening, a vendor only about its own organisation.

A second provider, the *bundle source* (``bundle_source``), lists one vendor
organisation's own bundles (``SignedBundle``: public id, digests, status, the
manifest's claims and the bytes of its cost model) so that a bid can name the
bundle it relies on and take its claims and cost inputs from it
(``procurement.services.bid_inputs``). It answers only about the organisation
asked for; the bid services ask only for the bidding vendor's own.

Artifact presence is judged by kind against the RFP's checklist as it stands
(``checklist_of``), the rule of the bundle's own completeness report: a required
artifact is present when the bundle lists a file of its kind, and for a kind that
promises a signature (a report) only when one of its PDFs' signatures validated
at ingest; a present kind whose content check failed at ingest (``kinds_failing``)
is flagged as failing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from procurement.models import RequiredArtifact, Rfp


@dataclass(frozen=True)
class EvidenceSummary:
    """What one accepted bundle's completeness report says, in short."""

    bundle_id: str  # public id
    url: str  # the bundle page
    sha256: str  # of the uploaded archive
    uploaded_at: datetime
    kinds_present: tuple[str, ...]
    environment_named: int  # of the environment fields (OS, kernel, …)
    environment_total: int
    environment_missing: tuple[str, ...]  # labels of the fields not named
    claims_in_harness: int  # claims whose scenario the harness defines
    claims_total: int
    unknown_scenarios: tuple[str, ...]
    metrics_missing: tuple[str, ...]  # required metrics no claim covers
    checks_passed: int  # of the report's checks (artifacts, environment, …)
    checks_total: int
    # kinds present whose content check failed (container images, IaC, …)
    kinds_failing: tuple[str, ...] = ()
    # kinds whose signature (a report PDF's) was checked at ingest and validates
    signed_kinds_verified: tuple[str, ...] = ()

    @property
    def environment_ok(self) -> bool:
        return self.environment_total > 0 and (
            self.environment_named == self.environment_total
        )

    @property
    def claims_ok(self) -> bool:
        return self.claims_in_harness == self.claims_total


class EvidenceProvider(Protocol):
    def __call__(
        self,
        rfp: Rfp,
        organisation_ids: Collection[int] | None = None,
        named: Mapping[int, str] | None = None,
    ) -> Mapping[int, EvidenceSummary]:
        """Organisation id -> summary of its newest accepted bundle on ``rfp``
        (only the ``organisation_ids`` asked about, when given), or of the one
        ``named`` for it (organisation id -> bundle public id: what its bid
        names) where that is one of its accepted bundles on ``rfp``. A query
        count that does not depend on the number of vendors."""
        ...


def _no_evidence(
    rfp: Rfp,
    organisation_ids: Collection[int] | None = None,
    named: Mapping[int, str] | None = None,
) -> Mapping[int, EvidenceSummary]:
    return {}


# artifacts' provider (``artifacts.selectors.procurement_hooks.bundle_evidence``);
# without it no vendor has an accepted bundle.
evidence_provider: Registry[EvidenceProvider] = Registry(
    "procurement.selectors.evidence_sources.evidence_provider", default=_no_evidence
)


def evidence_for(
    rfp: Rfp,
    organisation_ids: Collection[int] | None = None,
    named: Mapping[int, str] | None = None,
) -> dict[int, EvidenceSummary]:
    """Organisation id -> the summary of the bundle ``named`` for it (its bid's),
    else of its newest accepted bundle; {} without a provider."""
    if organisation_ids is not None and not organisation_ids:
        return {}
    provider = evidence_provider.get()
    if named:
        return dict(provider(rfp, organisation_ids, named))
    return dict(provider(rfp, organisation_ids))


# --- the vendor's own bundles, for its bid -----------------------------------------


@dataclass(frozen=True)
class SignedBundle:
    """One of a vendor's bundles as a bid sees it."""

    bundle_id: str  # public id
    url: str  # the bundle page
    rfp_id: int
    rfp_reference: str
    accepted: bool
    sha256: str  # of the uploaded archive
    manifest_sha256: str
    uploaded_at: datetime
    claims: tuple[Mapping[str, Any], ...]  # the manifest's, as listed
    cost_model_path: str  # the cost_model file read ("" if none)
    cost_model: bytes | None  # its bytes (None: no such file, or too large)

    @property
    def digests(self) -> dict[str, str]:
        """What the commitment binds: ``id``, ``sha256``, ``manifest_sha256``."""
        return {
            "id": self.bundle_id,
            "sha256": self.sha256,
            "manifest_sha256": self.manifest_sha256,
        }


class BundleSource(Protocol):
    def __call__(
        self,
        organisation_id: int,
        *,
        rfp: Rfp | None = None,
        public_id: str = "",
        accepted_only: bool = False,
    ) -> list[SignedBundle]:
        """The organisation's bundles, newest first, accepted or rejected (only
        accepted ones when ``accepted_only``): on ``rfp`` only when given, the
        one with ``public_id`` only when given."""
        ...


def _no_bundles(
    organisation_id: int,
    *,
    rfp: Rfp | None = None,
    public_id: str = "",
    accepted_only: bool = False,
) -> list[SignedBundle]:
    return []


# artifacts' source (``artifacts.selectors.procurement_hooks.own_bundles``);
# without it a vendor has no bundle to name.
bundle_source: Registry[BundleSource] = Registry(
    "procurement.selectors.evidence_sources.bundle_source", default=_no_bundles
)


def bundles_own(
    organisation_id: int,
    *,
    rfp: Rfp | None = None,
    public_id: str = "",
    accepted_only: bool = False,
) -> list[SignedBundle]:
    """The organisation's own bundles ([] without a source)."""
    found = bundle_source.get()(
        organisation_id, rfp=rfp, public_id=public_id, accepted_only=accepted_only
    )
    return list(found)


def bundles_accepted(rfp: Rfp, organisation_id: int) -> list[SignedBundle]:
    """The organisation's accepted bundles on the RFP, newest first: the ones a
    bid may name."""
    found = bundles_own(organisation_id, rfp=rfp, accepted_only=True)
    return [b for b in found if b.accepted]


# --- the checklist ------------------------------------------------------------------


# The kinds whose title promises a signature (artifacts.lib.completeness.SIGNED_KINDS).
SIGNED_KINDS: Final = frozenset({"report"})


@dataclass(frozen=True)
class ChecklistItem:
    kind: str
    title: str
    mandatory: bool
    present: bool
    content_failed: bool = False  # present, but its content check failed
    signature_verified: bool = False

    @property
    def gap(self) -> bool:
        """Mandatory, and missing or failing its content check."""
        return self.mandatory and (not self.present or self.content_failed)

    @property
    def signature_unverified(self) -> bool:
        """A benchmark report is in the bundle, but its signature was not checked
        (a bundle from before reports were checked at ingest): the page says
        "supplied", never "signed"."""
        return (
            self.present and self.kind in SIGNED_KINDS and not self.signature_verified
        )


@dataclass(frozen=True)
class BidEvidence:
    """A vendor's completeness on an RFP: its newest accepted bundle (or none)
    checked against the RFP's required artifacts."""

    summary: EvidenceSummary | None
    checklist: tuple[ChecklistItem, ...]

    @property
    def has_bundle(self) -> bool:
        return self.summary is not None

    @property
    def mandatory_missing(self) -> list[ChecklistItem]:
        return [i for i in self.checklist if i.mandatory and not i.present]

    @property
    def mandatory_failing(self) -> list[ChecklistItem]:
        return [i for i in self.checklist if i.mandatory and i.content_failed]

    @property
    def mandatory_gaps(self) -> list[ChecklistItem]:
        """What a bid that must name a complete bundle lacks: mandatory kinds
        missing or failing their content check."""
        return [i for i in self.checklist if i.gap]

    @property
    def mandatory_total(self) -> int:
        return sum(1 for i in self.checklist if i.mandatory)

    @property
    def mandatory_present(self) -> int:
        return self.mandatory_total - len(self.mandatory_missing)


def checklist_of(
    artifacts: Iterable[RequiredArtifact], summary: EvidenceSummary | None
) -> BidEvidence:
    """The RFP's required artifacts, each present when the bundle has its kind
    (and failing when its content check failed); without a bundle, every one is
    missing."""
    kinds = set(summary.kinds_present) if summary is not None else set()
    failing = set(summary.kinds_failing) if summary is not None else set()
    verified = set(summary.signed_kinds_verified) if summary is not None else set()
    items = tuple(
        ChecklistItem(
            a.kind,
            a.title,
            a.mandatory,
            a.kind in kinds,
            content_failed=a.kind in kinds & failing,
            signature_verified=a.kind in verified,
        )
        for a in artifacts
    )
    return BidEvidence(summary, items)
