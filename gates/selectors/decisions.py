"""A gate's decision state, read (never written): its latest evaluation, the
canary streak, the latest recorded decision, a pending promotion, an open
dispute of its verdict, and whether a promotion may be recorded now, and if not,
why not.

The history is the vendor's on the RFP, across plan versions: a new plan
version does not erase a failure, a halt or a recorded decision of the gate.
Each campaign counts once, by its latest evaluation (runs topped up on the same
campaign re-judge it; re-evaluating a campaign never adds a pass). The streak is
the number of the newest campaigns in a row whose latest evaluation PASSed."""

from __future__ import annotations

from dataclasses import dataclass, field

from gates.models import Decision, Dispute, Evaluation, GatePlan
from gates.selectors.disputes import dispute_open_on_gate

DISPUTED = (
    "The vendor contests the verdict of {when} UTC: uphold or reject the dispute "
    "before the gate is promoted or rolled back."
)
PROMOTE_BLOCKED_BY_HALT = (
    "The latest evaluation halted on a stop-loss condition: hold or roll back "
    "until a later evaluation passes."
)


@dataclass(frozen=True)
class GateState:
    plan: GatePlan
    gate: str
    latest: Evaluation | None  # the gate's newest evaluation (any plan version)
    streak: int  # campaigns in a row, newest first, whose verdict is PASS
    needed: int  # the plan's consecutive_passes for the gate
    recorded: Decision | None  # the latest recorded decision
    pending: Decision | None  # a promotion waiting for its second sign-off
    dispute: Dispute | None = None  # an open dispute of one of its evaluations
    why_not: list[str] = field(default_factory=list)  # why promotion is refused

    @property
    def promotable(self) -> bool:
        return not self.why_not

    @property
    def halted(self) -> bool:
        return self.latest is not None and (
            self.latest.stop_loss_triggered or self.latest.verdict == "HALTED"
        )

    @property
    def promoted(self) -> bool:
        return self.recorded is not None and self.recorded.kind == "promote"

    @property
    def passes_to_go(self) -> int:
        return max(self.needed - self.streak, 0)


def _gate_spec(plan: GatePlan, gate: str) -> dict | None:
    return next((g for g in plan.plan.get("gates", []) if g["name"] == gate), None)


DOCUMENTS = ("plan_document", "results_document", "evaluation_document")


def gate_evaluations(plan: GatePlan, gate: str) -> list[Evaluation]:
    """The gate's evaluations for the plan's RFP and vendor, newest first
    (without their documents)."""
    return list(
        Evaluation.objects.filter(
            rfp_id=plan.rfp_id,
            vendor_organisation_id=plan.vendor_organisation_id,
            gate=gate,
        )
        .defer(*DOCUMENTS)
        .order_by("-evaluated_at", "-id")
    )


def pass_streak(evaluations: list[Evaluation]) -> int:
    """Newest campaigns in a row whose latest evaluation PASSed."""
    seen: set[int] = set()
    streak = 0
    for evaluation in evaluations:  # newest first
        if evaluation.campaign_id in seen:
            continue
        seen.add(evaluation.campaign_id)
        if evaluation.verdict != "PASS":
            break
        streak += 1
    return streak


def gate_decisions(plan: GatePlan, gate: str) -> list[Decision]:
    """The gate's decisions for the plan's RFP and vendor, newest first."""
    return list(
        Decision.objects.filter(
            plan__rfp_id=plan.rfp_id,
            plan__vendor_organisation_id=plan.vendor_organisation_id,
            gate=gate,
        )
        .select_related("decided_by", "second_by", "withdrawn_by", "evaluation")
        .defer(*(f"evaluation__{name}" for name in DOCUMENTS))
        .order_by("-decided_at", "-id")
    )


def _recorded(decisions: list[Decision]) -> Decision | None:
    recorded = [d for d in decisions if d.status == Decision.Status.RECORDED]
    # a promotion takes effect at its second sign-off
    return max(
        recorded, key=lambda d: (d.second_at or d.decided_at, d.pk), default=None
    )


def previous_gate_unpromoted(plan: GatePlan, gate: str) -> str | None:
    """The previous gate's name when it is not promoted (None: promoted or first)."""
    names = plan.gate_names
    index = names.index(gate)
    if index == 0:
        return None
    previous = names[index - 1]
    recorded = _recorded(gate_decisions(plan, previous))
    if recorded is not None and recorded.kind == Decision.Kind.PROMOTE:
        return None
    return previous


def _why_not(state: GateState) -> list[str]:
    reasons = []
    if state.plan.status != GatePlan.Status.FROZEN:
        reasons.append("Decisions are taken on the current frozen plan only.")
    latest = state.latest
    if latest is None:
        return [*reasons, f"{state.gate} has not been evaluated yet."]
    if state.halted:
        reasons.append(PROMOTE_BLOCKED_BY_HALT)
    elif latest.verdict != "PASS":
        reasons.append(
            f"The latest evaluation is {latest.verdict}: promotion needs a PASS."
        )
    elif state.streak < state.needed:
        to_go = state.passes_to_go
        more = "1 more passing evaluation" if to_go == 1 else (
            f"{to_go} more passing evaluations"
        )  # fmt: skip
        reasons.append(
            f"{state.streak} of {state.needed} consecutive passes: {more} needed."
        )
    if state.promoted:
        reasons.append(f"{state.gate} is promoted already.")
    if state.pending is not None:
        reasons.append("A promotion is waiting for its second sign-off.")
    previous = previous_gate_unpromoted(state.plan, state.gate)
    if previous is not None:
        reasons.append(f"Promote {previous} first.")
    if state.dispute is not None:
        reasons.append(disputed_reason(state.dispute))
    return reasons


def disputed_reason(dispute: Dispute) -> str:
    when = f"{dispute.evaluation.evaluated_at:%Y-%m-%d %H:%M}"
    return DISPUTED.format(when=when)


def gate_state(plan: GatePlan, gate: str) -> GateState:
    """The decision state of ``gate`` of ``plan``'s RFP and vendor."""
    spec = _gate_spec(plan, gate)
    if spec is None:
        raise ValueError(f"The plan has no gate named {gate!r}.")
    evaluations = gate_evaluations(plan, gate)
    decisions = gate_decisions(plan, gate)
    pending = next((d for d in decisions if d.status == Decision.Status.PENDING), None)
    state = GateState(
        plan=plan,
        gate=gate,
        latest=evaluations[0] if evaluations else None,
        streak=pass_streak(evaluations),
        needed=int(spec.get("consecutive_passes", 1)),
        recorded=_recorded(decisions),
        pending=pending,
        dispute=dispute_open_on_gate(plan.rfp_id, plan.vendor_organisation_id, gate),
    )
    state.why_not.extend(_why_not(state))
    return state
