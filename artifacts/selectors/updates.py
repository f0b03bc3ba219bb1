"""Update bundles after the award: the awarded vendor deposits each firmware,
driver or software update of the accepted system as a bundle whose manifest
names the accepted bundle it updates (``supersedes``) and what changed
(``changes``; docs/bundle-format.md).

- ``update_window``: why ``organisation`` may upload an update to ``rfp`` now
  although submissions are closed ("" if it may not): the RFP is awarded to it.
- ``update_problems``: what is wrong with a manifest's update fields where it
  was uploaded, every problem named by its manifest path (``supersedes``).
- ``update_list``: the accepted updates of a vendor on an RFP (or of every
  vendor the caller may see), newest first.

Reads only."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import Organisation, Role
from accounts.selectors.users import AnyUser, organisation_ids_for
from artifacts.lib.manifest import Manifest
from artifacts.lib.problems import BundleProblem, ProblemList
from artifacts.models import Bundle
from procurement.models import Award, Rfp


def awarded_vendor_id(rfp: Rfp) -> int | None:
    """The awarded vendor organisation's id (None before the award)."""
    if rfp.status_now != Rfp.Status.AWARDED:
        return None
    award = Award.objects.filter(rfp=rfp).values("bid__vendor_organisation_id")
    row = award.first()
    return row["bid__vendor_organisation_id"] if row else None


def update_window(rfp: Rfp, organisation: Organisation) -> str:
    """The sentence letting the awarded vendor deposit an update ("" for anyone
    else, and before the award)."""
    if awarded_vendor_id(rfp) != organisation.pk:
        return ""
    return (
        f"{rfp.reference} is awarded to {organisation.name}: deposit each update "
        f"as an update bundle within {rfp.update_deposit_days} days"
    )


def accepted_bundle_with(
    rfp: Rfp, organisation: Organisation, sha256: str
) -> Bundle | None:
    return (
        Bundle.objects.filter(
            rfp=rfp,
            organisation=organisation,
            sha256=sha256,
            status=Bundle.Status.ACCEPTED,
        )
        .order_by("created_at")
        .first()
    )


def update_problems(
    rfp: Rfp, organisation: Organisation, manifest: Manifest, *, other_window: bool
) -> list[BundleProblem]:
    """The manifest's update fields against ``rfp`` and the uploader. An update
    is taken only after the award, only from the awarded vendor, and must name
    one of its accepted bundles on the RFP. After the award a bundle of the
    awarded vendor that is no update is refused unless ``other_window`` (a
    re-test it owes) lets it in. The buyer's own baseline bundles are no bids:
    they name nothing and are not asked to."""
    problems = ProblemList()
    if organisation.pk == rfp.buyer_organisation_id:
        if manifest.supersedes:
            problems.add(
                "update_not_vendor",
                "Only the awarded vendor deposits update bundles.",
                "supersedes",
            )
        return problems.as_list()
    awarded = awarded_vendor_id(rfp)
    if manifest.supersedes is None:
        if awarded == organisation.pk and not other_window:
            problems.add(
                "supersedes_required",
                f"{rfp.reference} is awarded: a bundle deposited now is an update "
                "and names the accepted bundle it updates (its SHA-256).",
                "supersedes",
            )
        return problems.as_list()
    if awarded is None:
        problems.add(
            "update_before_award",
            f"{rfp.reference} is not awarded: update bundles are deposited only "
            "after the award, by the awarded vendor.",
            "supersedes",
        )
    elif awarded != organisation.pk:
        problems.add(
            "update_not_awarded_vendor",
            f"{rfp.reference} is awarded to another vendor: only the awarded "
            "vendor deposits update bundles.",
            "supersedes",
        )
    elif accepted_bundle_with(rfp, organisation, manifest.supersedes) is None:
        problems.add(
            "supersedes_unknown",
            f"{organisation.name} has no accepted bundle with SHA-256 "
            f"{manifest.supersedes} on {rfp.reference}.",
            "supersedes",
        )
    return problems.as_list()


def update_list(rfp: Rfp | None, organisation_ids: list[int]) -> QuerySet[Bundle]:
    """The accepted update bundles of these vendors (on ``rfp``, else on any
    RFP), newest first."""
    found = Bundle.objects.filter(
        organisation_id__in=organisation_ids,
        status=Bundle.Status.ACCEPTED,
        supersedes__isnull=False,
    )
    if rfp is not None:
        found = found.filter(rfp=rfp)
    return found.select_related("rfp", "organisation", "supersedes").order_by(
        "-created_at", "-id"
    )


def update_list_own(user: AnyUser) -> QuerySet[Bundle]:
    """The update bundles the user's own vendor organisations deposited, newest
    first (the vendor's dashboard; never another organisation's)."""
    own = organisation_ids_for(user, Role.VENDOR, Role.ADMIN)
    return update_list(None, list(own))
