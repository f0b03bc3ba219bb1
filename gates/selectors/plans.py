"""Reading gate plans: the current (frozen) plan, the draft and the versions of
one vendor on one RFP, one plan by id for a user, and a plan's file.

Visibility (``gates.permissions``): the RFP's buyer organisation sees every
plan, drafts included; the lab and audit organisations it engages see the
frozen and superseded versions; a vendor sees its own frozen and superseded
versions only (a draft is the buyer's work in progress)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from accounts.models import Organisation
from accounts.selectors.users import organisation_ids_for
from benchmarks.lib.parsers.model import unit_for_name
from gates.lib.engine.evaluate import limit_of
from gates.lib.engine.reasons import fmt
from gates.lib.engine.validate import checks_named, plan_problems
from gates.models import GatePlan
from gates.permissions import gate_rows_visible_q
from procurement.models import Rfp

AnyUser = User | AnonymousUser
S = GatePlan.Status


def _pair(rfp: Rfp, vendor: Organisation) -> QuerySet[GatePlan]:
    return GatePlan.objects.filter(rfp=rfp, vendor_organisation=vendor)


def plan_current(rfp: Rfp, vendor: Organisation) -> GatePlan | None:
    """The frozen plan evaluations use now (None before the first freeze)."""
    return _pair(rfp, vendor).filter(status=S.FROZEN).select_related("bundle").first()


def plan_draft(rfp: Rfp, vendor: Organisation) -> GatePlan | None:
    return _pair(rfp, vendor).filter(status=S.DRAFT).first()


def plan_versions(
    rfp: Rfp, vendor: Organisation, *, drafts: bool = True
) -> QuerySet[GatePlan]:
    """Every version, newest first, with who made and froze it."""
    plans = _pair(rfp, vendor).select_related(
        "created_by", "frozen_by", "bundle", "supersedes"
    )
    return plans if drafts else plans.exclude(status=S.DRAFT)


def plan_list_visible_to(user: AnyUser) -> QuerySet[GatePlan]:
    if not user.is_authenticated:
        return GatePlan.objects.none()
    drafts = Q(rfp__buyer_organisation_id__in=organisation_ids_for(user))
    return GatePlan.objects.filter(
        gate_rows_visible_q(user), drafts | ~Q(status=S.DRAFT)
    ).select_related(
        "rfp__buyer_organisation",
        "vendor_organisation",
        "bundle",
        "created_by",
        "frozen_by",
        "supersedes",
    )


def plan_get_visible(user: AnyUser, public_id: uuid.UUID) -> GatePlan | None:
    return plan_list_visible_to(user).filter(public_id=public_id).first()


def plan_export(plan: GatePlan) -> bytes:
    """The plan's file: exactly its stored canonical bytes, so that the file's
    SHA-256 is the plan's ``sha256`` (the digest evaluations cite)."""
    return plan.document.encode("utf-8")


# --- a plan as people read it -----------------------------------------------------


@dataclass(frozen=True)
class CriterionView:
    id: str
    metric: str
    stat: str
    scenario: str
    direction: str  # "lower is better" / "higher is better"
    unit: str
    claim: str  # "180 ms", "" with a threshold
    band: str  # "± 10 %", "± 5 ms", ""
    threshold: str
    limit: str  # "up to 198 ms"
    min_runs: int
    max_cv: str  # "15 % (else inconclusive)"
    blocking: bool
    weight: Any


@dataclass(frozen=True)
class GateView:
    name: str
    stage: str
    consecutive_passes: int
    pass_pct: Any
    warn_pct: Any
    criteria: list[CriterionView]
    stop_loss: list[tuple[str, str]]  # (id, sentence)
    hosts: tuple[str, ...] = ()  # canary hosts: its runs go only there


def _dec(value: Any) -> Decimal:
    return Decimal(str(value))


def _with_unit(value: Any, unit: str) -> str:
    text = fmt(_dec(value))
    return f"{text} {unit}" if unit else text


def _limit_text(c: dict[str, Any], side: str, unit: str) -> str:
    """The limit in words: a number, or for a criterion held to the buyer's
    baseline the rule (its number is known once the baseline has run)."""
    if "baseline" in c:
        sign = "+" if c["direction"] == "lower" else "-"
        pct = fmt(_dec(c["baseline"]["pct"]))
        return (
            f"{side} the baseline median of {c['baseline']['scenario']} {sign}{pct} %"
        )
    return f"{side} {_with_unit(limit_of(c), unit)}"


def _criterion_view(c: dict[str, Any]) -> CriterionView:
    unit = unit_for_name(c["metric"]) or ""
    band = c.get("band") or {}
    if "pct" in band:
        band_text = f"± {fmt(_dec(band['pct']))} %"
    elif "abs" in band:
        band_text = f"± {_with_unit(band['abs'], unit)}"
    else:
        band_text = ""
    side = "up to" if c["direction"] == "lower" else "down to"
    return CriterionView(
        id=c["id"],
        metric=c["metric"],
        stat=c["stat"],
        scenario=c["scenario"],
        direction=f"{c['direction']} is better",
        unit=unit,
        claim=_with_unit(c["claim"], unit) if "claim" in c else "",
        band=band_text,
        threshold=_with_unit(c["threshold"], unit) if "threshold" in c else "",
        limit=_limit_text(c, side, unit),
        min_runs=c["min_runs"],
        max_cv=f"{fmt(_dec(c['max_cv_pct']))} % (else {c['on_high_cv']})",
        blocking=c["blocking"],
        weight=c["weight"],
    )


def stop_loss_sentence(s: dict[str, Any]) -> str:
    """One stop-loss condition in words."""
    if "drift_at_least" in s:
        level = "minor or major" if s["drift_at_least"] == "minor" else "major"
        return (
            "Halt when a run's environment drift from the vendor's manifest is "
            f"{level}."
        )
    if "run_failed" in s:
        return "Halt when any run fails."
    if "check_flagged" in s:
        named = " or ".join(checks_named(s))
        return f"Halt when the lab's anti-gaming check {named} flags any run."
    bound = "above" if "above" in s else "below"
    unit = unit_for_name(s["metric"]) or ""
    where = "any scenario" if s["scenario"] == "*" else s["scenario"]
    return (
        f"Halt when any run's {s['metric']} {s['stat']} in {where} is {bound} "
        f"{_with_unit(s[bound], unit)}."
    )


def plan_readable(plan: GatePlan) -> list[GateView]:
    """The plan's gates in order, for the plan page (a valid plan; rows of an
    invalid draft that the engine would refuse are left out)."""
    views = []
    for g in plan.plan.get("gates", []):
        if plan_problems({**plan.plan, "gates": [g]}):
            continue
        views.append(
            GateView(
                name=g["name"],
                stage=g["stage"],
                consecutive_passes=g["consecutive_passes"],
                pass_pct=g["score"]["pass_pct"],
                warn_pct=g["score"]["warn_pct"],
                criteria=[_criterion_view(c) for c in g["criteria"]],
                stop_loss=[(s["id"], stop_loss_sentence(s)) for s in g["stop_loss"]],
                hosts=tuple(g.get("hosts", ())),
            )
        )
    return views
