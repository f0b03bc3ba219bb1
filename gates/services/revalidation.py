"""Update re-validation: the awarded vendor deposited an update bundle
(``artifacts.services.update_hooks``) whose environment differs from the
accepted bundle's, so the gates that already passed or were decided on the
old environment are "re-validation due" again.

``update_revalidation_raise`` runs in the ingest's accept transaction (the
hook ``GatesConfig.ready()`` registers). The environment differs when the
update lists ``changes`` or its environment files (kind ``environment``) are
not byte for byte the accepted bundle's. Then every gate of the vendor's
current plan that has a PASS evaluation or a recorded decision (the simplest
honest rule: what rested on the old environment) gets an obligation of kind
``update_revalidation``: scheduled at once with the update as its bundle, the
deadline and attempts from the RFP's re-test terms. When the plan has a canary
gate it is re-validated too, and first: the obligation names the canary hosts,
and the other gates' campaigns wait for it (``revalidation_canary_pending``).
A gate with a live obligation already is left alone (one live obligation per
gate; its campaign runs the latest accepted bundle). One audit row per
obligation raised (``revalidation.raised``); the buyer team and the lab
operators are told."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User

from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.models import Bundle, BundleFile
from gates.models import Decision, Evaluation, GatePlan, RetestObligation
from gates.services.obligations import (
    LIVE,
    OB_COST,
    obligation_buyer_team,
    obligation_facts,
    obligation_lab_operators,
    obligation_notify,
)

OB = RetestObligation.Status


def _environment(bundle: Bundle) -> set[tuple[str, str]]:
    files = BundleFile.objects.filter(bundle=bundle, kind="environment")
    return set(files.values_list("path", "sha256"))


def update_changes(bundle: Bundle) -> list[dict[str, Any]]:
    """The update's declared ``changes`` as its manifest lists them."""
    return list((bundle.manifest or {}).get("changes") or [])


def environment_differs(bundle: Bundle, superseded: Bundle) -> bool:
    """Does the update change the environment the accepted bundle declared?"""
    return bool(update_changes(bundle)) or _environment(bundle) != _environment(
        superseded
    )


def _passed_or_decided(plan: GatePlan, gate: str) -> bool:
    passed = Evaluation.objects.filter(
        rfp_id=plan.rfp_id,
        vendor_organisation_id=plan.vendor_organisation_id,
        gate=gate,
        verdict="PASS",
    )
    decided = Decision.objects.filter(
        plan__rfp_id=plan.rfp_id,
        plan__vendor_organisation_id=plan.vendor_organisation_id,
        gate=gate,
        status=Decision.Status.RECORDED,
    )
    return passed.exists() or decided.exists()


def affected_gates(plan: GatePlan) -> list[dict[str, Any]]:
    """The plan's gates an environment change re-opens, the canary gate first."""
    specs = plan.plan.get("gates", [])
    hit = [g for g in specs if _passed_or_decided(plan, g["name"])]
    if not hit:
        return []
    canary = [g for g in specs if g.get("stage") == "canary"]
    rest = [g for g in hit if g.get("stage") != "canary"]
    return canary + rest


def _reason(bundle: Bundle, superseded: Bundle) -> str:
    changes = update_changes(bundle)
    listed = "; ".join(
        f"{c['component']} {c['from']} → {c['to']}"
        + (f" ({c['note']})" if c.get("note") else "")
        for c in changes
    )
    what = listed or "its environment manifest differs"
    return (
        f"The update bundle {bundle.sha256[:12]} supersedes the accepted bundle "
        f"{superseded.sha256[:12]} and changes the environment: {what}. The gate "
        "passed on the old environment and is re-validated on the new one."
    )


def _raise_one(
    plan: GatePlan, spec: dict[str, Any], bundle: Bundle, reason: str, actor: User
) -> RetestObligation | None:
    gate = spec["name"]
    if RetestObligation.objects.filter(plan=plan, gate=gate, status__in=LIVE).exists():
        return None
    rfp, now = plan.rfp, clock.now()
    canary = [g for g in plan.plan.get("gates", []) if g.get("stage") == "canary"]
    obligation = RetestObligation.objects.create(
        rfp=rfp,
        vendor_organisation_id=plan.vendor_organisation_id,
        plan=plan,
        gate=gate,
        kind=RetestObligation.Kind.UPDATE_REVALIDATION,
        criteria=[c["id"] for c in spec.get("criteria", []) if c.get("blocking")],
        reason=reason,
        status=OB.SCHEDULED,
        deadline=now + timedelta(days=rfp.retest_deadline_days),
        max_attempts=rfp.retest_max_attempts,
        attempts_used=1,
        cost_bearer=OB_COST[rfp.retest_vendor_funded],
        bundle=bundle,
        requested_by=actor,
        requested_at=now,
        canary_hosts=[str(h) for g in canary for h in g.get("hosts", [])],
    )
    audit_record(
        actor=actor,
        action="revalidation.raised",
        target=obligation,
        organisation=rfp.buyer_organisation,
        data={
            **obligation_facts(obligation),
            "kind": obligation.kind,
            "update": bundle.sha256,
            "canary_hosts": obligation.canary_hosts,
        },
    )
    users = [*obligation_buyer_team(obligation), *obligation_lab_operators(obligation)]
    obligation_notify(obligation, "gate_revalidation_due", users)
    return obligation


def update_revalidation_raise(
    *, bundle: Bundle, superseded: Bundle, actor: User
) -> list[RetestObligation]:
    """Re-open the gates the accepted update ``bundle`` calls into question
    (see the module docstring); the obligations raised ([] when the update
    changes nothing or no gate passed yet). In the caller's transaction."""
    if not environment_differs(bundle, superseded):
        return []
    plans = GatePlan.objects.filter(
        rfp_id=bundle.rfp_id,
        vendor_organisation_id=bundle.organisation_id,
        status=GatePlan.Status.FROZEN,
    ).select_related("rfp__buyer_organisation")
    reason = _reason(bundle, superseded)
    raised = []
    for plan in plans:
        for spec in affected_gates(plan):
            obligation = _raise_one(plan, spec, bundle, reason, actor)
            if obligation is not None:
                raised.append(obligation)
    return raised
