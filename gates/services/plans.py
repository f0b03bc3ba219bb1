"""Gate plans: the buyer's draft, frozen versions and their ``reprogate.gate-plan/v1``
files.

A draft starts from the vendor's accepted bundle and the RFP's terms
(``plan_create_default``), from a frozen version (``plan_new_version``) or from a
file (``plan_import``); the buyer edits it (``plan_update``) and freezes it
(``plan_freeze``), which supersedes the version frozen before. Every document is
checked by the gate engine's own validation (the same rules as ``reprogate gate
evaluate``) and must name the plan's RFP and vendor; it is stored as canonical
JSON with its SHA-256, the bytes evaluations cite. Each action is one
transaction and one audit row (``gate_plan.<verb>``)."""

from __future__ import annotations

from typing import Any, Final

from django.db import transaction
from django.db.models import Max

from accounts.exceptions import InvalidTransition, Problem
from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.actor import Actor, person
from accounts.services.audit import audit_record
from accounts.services.transitions import transition, transition_check
from artifacts.lib.canonical import canonical_json
from artifacts.models import Bundle
from gates.exceptions import GatesConflict, GatesError, engine_problems
from gates.lib.engine.documents import load_json, sha256_hex
from gates.lib.engine.validate import plan_problems
from gates.models import PLAN_TRANSITIONS, GatePlan
from gates.services.plan_documents import PlanProblems, default_plan, rfp_terms
from procurement.models import Rfp

S = GatePlan.Status
MAX_IMPORT_BYTES: Final = 256 * 1024
MAX_EXTRA_RUNS: Final = 50
TRANSITION_ACTIONS: Final[dict[str, str]] = {
    S.FROZEN: "gate_plan.frozen",
    S.SUPERSEDED: "gate_plan.superseded",
}


def _facts(plan: GatePlan) -> dict[str, Any]:
    """What every audit row of a plan names."""
    return {
        "rfp": plan.rfp.reference,
        "vendor": plan.vendor_organisation.slug,
        "version": plan.version,
        "status": plan.status,
        "sha256": plan.sha256,
    }


def _audit(plan: GatePlan, actor: Actor, action: str, **data: Any) -> None:
    audit_record(
        actor=actor,
        action=action,
        target=plan,
        organisation=plan.rfp.buyer_organisation,
        data={**_facts(plan), **data},
    )


def document_problems(
    document: Any, *, rfp: Rfp, vendor: Organisation
) -> list[Problem]:
    """Every problem of ``document`` as the plan of ``vendor`` on ``rfp`` (empty:
    it may be stored and frozen): the engine's, then the RFP and vendor named."""
    found = list(engine_problems(plan_problems(document)))
    if not isinstance(document, dict):
        return found
    for key, expected in (("rfp", rfp.reference), ("vendor", vendor.slug)):
        named = document.get(key)
        if isinstance(named, str) and named.strip() and named != expected:
            message = f"must be {expected!r}: this is the plan of {vendor.slug} on "
            found.append(Problem("mismatch", message + rfp.reference, key))
    return found


def _refuse_problems(found: list[Problem], message: str) -> None:
    if found:
        raise GatesError(message, code="invalid_plan", problems=tuple(found))


def _lock_rfp(rfp: Rfp, vendor: Organisation) -> Rfp:
    """Serialise every plan write of one RFP (versions and the one draft)."""
    rfp = Rfp.objects.select_for_update().get(pk=rfp.pk)
    if not rfp.invited_vendors.filter(pk=vendor.pk).exists():
        raise GatesError(
            f"{vendor.slug} is not invited to {rfp.reference}.", code="not_invited"
        )
    return rfp


def _refuse_second_draft(rfp: Rfp, vendor: Organisation) -> None:
    draft = GatePlan.objects.filter(
        rfp=rfp, vendor_organisation=vendor, status=S.DRAFT
    ).first()
    if draft is not None:
        raise GatesConflict(
            f"Draft v{draft.version} already exists: edit it or freeze it first.",
            code="draft_exists",
        )


def _next_version(rfp: Rfp, vendor: Organisation) -> int:
    plans = GatePlan.objects.filter(rfp=rfp, vendor_organisation=vendor)
    return (plans.aggregate(top=Max("version"))["top"] or 0) + 1


def _accepted_bundle(rfp: Rfp, vendor: Organisation) -> Bundle | None:
    return (
        Bundle.objects.filter(
            rfp=rfp, organisation=vendor, status=Bundle.Status.ACCEPTED
        )
        .order_by("-created_at", "-id")
        .first()
    )


def _new_draft(
    rfp: Rfp, vendor: Organisation, document: dict[str, Any], actor: Actor, **extra: Any
) -> GatePlan:
    return GatePlan.objects.create(
        rfp=rfp,
        vendor_organisation=vendor,
        version=_next_version(rfp, vendor),
        status=S.DRAFT,
        document=canonical_json(document).decode("utf-8"),
        sha256=sha256_hex(document),
        created_by=person(actor),
        **extra,
    )


def _default_document(rfp: Rfp, vendor: Organisation, bundle: Bundle) -> Any:
    claims = (bundle.manifest or {}).get("claims", [])
    try:
        return default_plan(
            rfp_reference=rfp.reference,
            vendor=vendor.slug,
            claims=claims,
            terms=rfp_terms(rfp),
        )
    except PlanProblems as refused:
        raise GatesError(
            "The bundle's claims and the RFP's terms do not make a gate plan.",
            code=refused.code,
            problems=refused.problems,
        ) from refused


@transaction.atomic
def plan_create_default(*, rfp: Rfp, vendor: Organisation, actor: Actor) -> GatePlan:
    """A draft made from the vendor's latest accepted bundle's claims and the
    RFP's terms (``gates.services.plan_documents.default_plan``)."""
    rfp = _lock_rfp(rfp, vendor)
    if rfp.is_sealed:
        message = "The bids are sealed: the vendor's claims are read once opened."
        raise GatesConflict(message, code="sealed")
    _refuse_second_draft(rfp, vendor)
    bundle = _accepted_bundle(rfp, vendor)
    if bundle is None:
        message = f"{vendor.slug} has no accepted bundle on {rfp.reference}."
        raise GatesError(message, code="no_accepted_bundle")
    document = _default_document(rfp, vendor, bundle)
    _refuse_problems(
        document_problems(document, rfp=rfp, vendor=vendor),
        "The default plan is not valid.",
    )
    plan = _new_draft(rfp, vendor, document, actor, bundle=bundle)
    _audit(plan, actor, "gate_plan.created", source="default", bundle=bundle.sha256)
    return plan


def _settings_problems(
    accepted: bool, note: str, max_extra_runs: int | None
) -> list[Problem]:
    found = []
    if accepted and not note.strip():
        message = "say why the lab's environment is accepted as the reference"
        found.append(Problem("required", message, "lab_environment_note"))
    if max_extra_runs is not None and (
        isinstance(max_extra_runs, bool)
        or not isinstance(max_extra_runs, int)
        or not 0 <= max_extra_runs <= MAX_EXTRA_RUNS
    ):
        message = f"must be a whole number from 0 to {MAX_EXTRA_RUNS}"
        found.append(Problem("invalid", message, "max_extra_runs"))
    return found


def _store(
    plan: GatePlan,
    document: Any,
    actor: Actor,
    action: str,
    settings: dict[str, Any],
) -> GatePlan:
    """Replace the draft's document and settings (the plan is locked)."""
    if plan.status != S.DRAFT:
        raise GatesConflict(
            "Frozen plans never change; start a new version.", code="plan_frozen"
        )
    accepted = settings.get("lab_environment_accepted")
    accepted = plan.lab_environment_accepted if accepted is None else accepted
    note = settings.get("lab_environment_note")
    note = plan.lab_environment_note if note is None else note.strip()
    extra = settings.get("max_extra_runs")
    found = document_problems(document, rfp=plan.rfp, vendor=plan.vendor_organisation)
    found += _settings_problems(accepted, note, extra)
    _refuse_problems(found, "The plan has problems; nothing was saved.")
    previous = plan.sha256
    plan.document = canonical_json(document).decode("utf-8")
    plan.sha256 = sha256_hex(document)
    plan.lab_environment_accepted, plan.lab_environment_note = bool(accepted), note
    plan.max_extra_runs = plan.max_extra_runs if extra is None else extra
    plan.save()
    _audit(plan, actor, action, previous_sha256=previous, lab_accepted=accepted)
    return plan


def _lock(plan: GatePlan) -> GatePlan:
    return (
        GatePlan.objects.select_for_update()
        .select_related("rfp__buyer_organisation", "vendor_organisation")
        .get(pk=plan.pk)
    )


@transaction.atomic
def plan_update(
    *,
    plan: GatePlan,
    document: dict[str, Any],
    actor: Actor,
    lab_environment_accepted: bool | None = None,
    lab_environment_note: str | None = None,
    max_extra_runs: int | None = None,
) -> GatePlan:
    """Replace a draft's document (valid, naming the plan's RFP and vendor) and,
    when given, its lab-environment acceptance (with a note) and top-up limit."""
    settings = {
        "lab_environment_accepted": lab_environment_accepted,
        "lab_environment_note": lab_environment_note,
        "max_extra_runs": max_extra_runs,
    }
    return _store(_lock(plan), document, actor, "gate_plan.updated", settings)


@transaction.atomic
def plan_transition(
    *,
    plan: GatePlan,
    to: str,
    actor: Actor,
    action: str = "",
    data: dict[str, Any] | None = None,
) -> GatePlan:
    """The one place a plan's status changes (``PLAN_TRANSITIONS``); freezing
    stamps who and when. One audit row: ``action`` (by default the move's own,
    ``TRANSITION_ACTIONS``) with the move and ``data``."""
    plan = _lock(plan)
    transition_check(plan, to, table=PLAN_TRANSITIONS, entity="gate plan")
    stamps: dict[str, Any] = {}
    if to == S.FROZEN:
        frozen_by = person(actor)
        if frozen_by is None:
            raise GatesError("A person freezes a plan.", code="frozen_by_someone")
        stamps = {"frozen_by": frozen_by, "frozen_at": clock.now()}
    supersedes = plan.supersedes.version if plan.supersedes else None
    return transition(
        plan,
        to,
        actor=actor,
        table=PLAN_TRANSITIONS,
        entity="gate plan",
        action=action or TRANSITION_ACTIONS[to],
        fields=stamps,
        organisation=plan.rfp.buyer_organisation,
        data={**_facts(plan), "status": to, "supersedes": supersedes, **(data or {})},
    )


@transaction.atomic
def plan_freeze(*, plan: GatePlan, actor: Actor) -> GatePlan:
    """Freeze a valid draft; the version frozen before it is superseded."""
    _lock_rfp(plan.rfp, plan.vendor_organisation)
    plan = _lock(plan)
    if plan.status != S.DRAFT:
        raise InvalidTransition(
            entity="gate plan", current=plan.status, requested=S.FROZEN
        )
    found = document_problems(plan.plan, rfp=plan.rfp, vendor=plan.vendor_organisation)
    found += _settings_problems(
        plan.lab_environment_accepted, plan.lab_environment_note, None
    )
    _refuse_problems(found, "The draft has problems; it was not frozen.")
    previous = GatePlan.objects.filter(
        rfp=plan.rfp, vendor_organisation=plan.vendor_organisation, status=S.FROZEN
    ).first()
    if previous is not None:
        plan_transition(plan=previous, to=S.SUPERSEDED, actor=actor)
        plan.supersedes = previous
        plan.save(update_fields=["supersedes", "updated_at"])
    return plan_transition(plan=plan, to=S.FROZEN, actor=actor)


@transaction.atomic
def plan_new_version(*, plan: GatePlan, actor: Actor) -> GatePlan:
    """A draft copy (next version) of a frozen or superseded plan."""
    rfp = _lock_rfp(plan.rfp, plan.vendor_organisation)
    plan = _lock(plan)
    if plan.status == S.DRAFT:
        raise GatesConflict("This plan is the draft: edit it.", code="is_draft")
    _refuse_second_draft(rfp, plan.vendor_organisation)
    draft = _new_draft(
        rfp,
        plan.vendor_organisation,
        plan.plan,
        actor,
        bundle=plan.bundle,
        lab_environment_accepted=plan.lab_environment_accepted,
        lab_environment_note=plan.lab_environment_note,
        max_extra_runs=plan.max_extra_runs,
    )
    _audit(draft, actor, "gate_plan.created", source="version", copied=plan.version)
    return draft


def _read_file(data: bytes) -> Any:
    if len(data) > MAX_IMPORT_BYTES:
        message = f"The file has {len(data):,} bytes; a plan file has at most "
        raise GatesError(message + f"{MAX_IMPORT_BYTES:,}.", code="too_large")
    try:
        return load_json(data)
    except UnicodeDecodeError as bad:
        message = f"not UTF-8 (byte {bad.start})"
        problem = Problem("invalid_json", message, "(file)")
    except RecursionError:
        problem = Problem("invalid_json", "nested too deeply", "(file)")
    except ValueError as bad:
        problem = Problem("invalid_json", f"not JSON: {bad}", "(file)")
    raise GatesError(
        "The file is not a JSON document.", code="invalid_json", problems=(problem,)
    )


@transaction.atomic
def plan_import(
    *, rfp: Rfp, vendor: Organisation, data: bytes, actor: Actor
) -> GatePlan:
    """A ``reprogate.gate-plan/v1`` file as the draft: the existing draft's
    content is replaced, else a new draft is made. Nothing is stored when the
    file has any problem."""
    document = _read_file(data)
    rfp = _lock_rfp(rfp, vendor)
    draft = GatePlan.objects.filter(
        rfp=rfp, vendor_organisation=vendor, status=S.DRAFT
    ).first()
    if draft is not None:
        return _store(_lock(draft), document, actor, "gate_plan.imported", {})
    _refuse_problems(
        document_problems(document, rfp=rfp, vendor=vendor),
        "The file is not a valid plan for this RFP and vendor; nothing was stored.",
    )
    plan = _new_draft(rfp, vendor, document, actor)
    _audit(plan, actor, "gate_plan.imported", source="file")
    return plan
