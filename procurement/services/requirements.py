"""Writing an RFP's requirements document: validated by
``procurement.lib.requirements``, then split over where its parts live (the
RFP's stored sections, its required-metric rows, its required-artifact rows and
``bid_requires_bundle``). A draft takes a new document here; a published RFP only
through an addendum (``procurement.services.addenda``), which writes it with
``requirements_write``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from accounts.exceptions import Problem
from accounts.services.actor import Actor
from accounts.services.audit import audit_record
from procurement.exceptions import ProcurementError, RfpNotEditable
from procurement.lib import requirements as lib
from procurement.lib.defaults import DEFAULT_ARTIFACTS
from procurement.models import ArtifactKind, RequiredArtifact, RequiredMetric, Rfp
from procurement.selectors.requirements import requirements_document
from procurement.services.rfp_common import locked_rfp

_GUIDANCE = {a["kind"]: a["guidance"] for a in DEFAULT_ARTIFACTS}


def requirements_validated(document: object, *, prefix: str = "") -> dict[str, Any]:
    """The canonical form of ``document``, or a refusal naming every problem
    (paths under ``prefix``: ``requirements.workloads[0].id``)."""
    problems = lib.validate(document)
    if problems:
        listed = [
            Problem(p.code, p.message, ".".join(x for x in (prefix, p.path) if x))
            for p in problems
        ]
        text = "; ".join(str(p) for p in problems[:5])
        raise ProcurementError(
            f"The requirements document has problems: {text}",
            code="invalid_requirements",
            problems=listed,
        )
    assert isinstance(document, Mapping)  # validate() said so  # noqa: S101
    return lib.canonical(document)


def _write_metrics(rfp: Rfp, metrics: list[dict[str, Any]]) -> None:
    kept = {m.name: m.description for m in RequiredMetric.objects.filter(rfp=rfp)}
    RequiredMetric.objects.filter(rfp=rfp).delete()
    RequiredMetric.objects.bulk_create(
        RequiredMetric(
            rfp=rfp,
            name=m["metric"],
            stats=",".join(m["stats"]),
            series=m["series"],
            description=kept.get(m["metric"], ""),
            position=i,
        )
        for i, m in enumerate(metrics)
    )


def _write_artifacts(rfp: Rfp, mandatory: list[str]) -> None:
    """A kind is mandatory when a mandatory row of it exists: rows of kinds left
    out become optional, a kind named without a mandatory row gets its first row
    made mandatory or a new row (guidance and all kept)."""
    rows = list(RequiredArtifact.objects.filter(rfp=rfp).order_by("position", "id"))
    RequiredArtifact.objects.filter(rfp=rfp).exclude(kind__in=mandatory).update(
        mandatory=False
    )
    position = max((r.position for r in rows), default=-1)
    for kind in mandatory:
        of_kind = [r for r in rows if r.kind == kind]
        if any(r.mandatory for r in of_kind):
            continue
        if of_kind:
            RequiredArtifact.objects.filter(pk=of_kind[0].pk).update(mandatory=True)
            continue
        position += 1
        RequiredArtifact.objects.create(
            rfp=rfp,
            kind=kind,
            title=str(ArtifactKind(kind).label),
            guidance=_GUIDANCE.get(kind, ""),
            mandatory=True,
            position=position,
        )


def requirements_write(rfp: Rfp, document: Mapping[str, Any]) -> None:
    """Split a canonical document over the locked ``rfp`` and its rows; the
    caller holds the transaction, checks the RFP's state and writes the audit."""
    rfp.requirements = lib.stored_part(document)
    rfp.bid_requires_bundle = document["artifacts"]["bid_requires_bundle"]
    rfp.save(update_fields=["requirements", "bid_requires_bundle", "updated_at"])
    _write_metrics(rfp, document["metrics"])
    _write_artifacts(rfp, document["artifacts"]["mandatory"])


@transaction.atomic
def rfp_set_requirements(*, rfp: Rfp, document: object, actor: Actor) -> Rfp:
    """Replace a draft's requirements document (a section left out requires
    nothing). An unchanged document writes nothing."""
    rfp = locked_rfp(rfp)
    if rfp.status != Rfp.Status.DRAFT:
        raise RfpNotEditable(current=rfp.status)
    new = requirements_validated(document)
    changes = lib.diff(requirements_document(rfp), new)
    if not changes:
        return rfp
    requirements_write(rfp, new)
    audit_record(
        actor=actor,
        action="rfp.requirements_changed",
        target=rfp,
        organisation=rfp.buyer_organisation,
        data={"rfp": rfp.reference, "changed": [c.path for c in changes]},
    )
    return rfp
