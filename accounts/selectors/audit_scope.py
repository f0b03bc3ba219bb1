"""Which vendor events belong to a buyer's trail, told without importing procurement.

An event lies in one organisation's trail (``AuditEvent.organisation``): a vendor's
bids, bundles and signing keys in the vendor's. The buyer side and its engaged
auditors must see them too, for the RFPs they run, sealed as the bids are. Only
procurement knows which RFPs a buyer runs, which are opened and whom they invited,
so it registers an ``RfpScope`` in ``rfp_scope`` when Django starts
(``ProcurementConfig.ready()``), as every registry is (``accounts.lib.registry``).
Its answers are subqueries (lists of values), inlined by the trail selector into
its one query.

The rule (``shared_events``):

- a vendor's ``bid.*``, ``bundle.accepted``/``rejected``/``resubmitted`` and
  ``deposit.created`` events on an RFP of the buyer belong to that RFP's trail:
  sealed (time, kind, commitment hash; no actor, target, organisation, request or
  other data) until the RFP is opened, in full after;
- a vendor's ``signing_key.*`` events name no RFP: they are shown in full once an
  RFP of the buyer that invited the vendor is opened, and not at all before (a
  sealed row could only say "an invited vendor is getting ready to upload", and
  how many do — so nothing is the safer answer). Only those that happened before
  such an opening: a key registered later, a minute before a sealed upload on
  another of the buyer's RFPs, would name that upload's vendor;
- everything else a vendor records stays its own: clarification questions (the
  buyer reads them without the asker, for ever), its downloads of its own bundles.

Without a registered scope (accounts on its own) every trail is its own
organisation's only."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from django.db.models import Q, QuerySet

from accounts.lib.registry import Registry

# Vendor actions about an RFP that are part of that RFP's buyer-side trail.
SHARED_ACTIONS = (
    "bundle.accepted",
    "bundle.rejected",
    "bundle.resubmitted",
    "deposit.created",
)
SHARED_PREFIXES = ("bid.",)
KEY_PREFIX = "signing_key."
# What a sealed row keeps of ``data``: the bid's commitment hash, nothing else.
SEALED_DATA_KEYS = ("commitment",)


class RfpScope(Protocol):
    """Subqueries over the RFPs of some buyer organisations."""

    def references(self, buyer_organisation_ids: Collection[int]) -> QuerySet[Any]:
        """The reference of every RFP of these buyers."""
        ...

    def opened_references(
        self, buyer_organisation_ids: Collection[int]
    ) -> QuerySet[Any]:
        """The references of those whose bids are opened (no longer sealed)."""
        ...

    def key_events_shown(
        self, buyer_organisation_ids: Collection[int], reference: str = ""
    ) -> Q:
        """The condition on an ``AuditEvent`` of a vendor's organisation under
        which that vendor's signing-key event is shown: an opened RFP of these
        buyers (the one with ``reference``, when given) invited the vendor and
        was opened after the event."""
        ...


# procurement's scope (``procurement.selectors.audit.RFP_TRAIL_SCOPE``); None
# without it.
rfp_scope: Registry[RfpScope | None] = Registry(
    "accounts.selectors.audit_scope.rfp_scope", default=None
)


def _shared_action() -> Q:
    q = Q(action__in=SHARED_ACTIONS)
    for prefix in SHARED_PREFIXES:
        q |= Q(action__startswith=prefix)
    return q


def shared_events(
    scope: RfpScope, buyer_organisation_ids: Collection[int], reference: str = ""
) -> tuple[Q, Q]:
    """(events of other organisations the buyers' trail includes, the part of
    them that is sealed). ``reference``: of one RFP only."""
    ids = list(buyer_organisation_ids)
    on_rfp = (
        Q(rfp_reference=reference)
        if reference
        else Q(rfp_reference__in=scope.references(ids))
    )
    rfp_events = _shared_action() & on_rfp
    if reference:
        rfp_events &= Q(rfp_reference__in=scope.references(ids))
    keys = Q(action__startswith=KEY_PREFIX) & scope.key_events_shown(ids, reference)
    sealed = rfp_events & ~Q(rfp_reference__in=scope.opened_references(ids))
    return rfp_events | keys, sealed
