"""Reads of a gate's plan for its campaigns: the runs per scenario a campaign
needs (``gate_repetitions``), the scenarios it runs (``gate_scenarios``), the
hosts of the pool it runs on (``gate_hosts``: canary hosts and the rest), and the
runs an INCONCLUSIVE evaluation still needs (``evaluation_more_runs``). Pure
functions of the stored documents; ``gates.services.runs`` schedules them."""

from __future__ import annotations

import json

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool
from benchmarks.selectors.access import bundle_list_startable_by
from benchmarks.selectors.gate_campaigns import GateChoice, GateLink
from benchmarks.selectors.pools import pool_host_names
from gates.models import Evaluation, GateCampaign, GatePlan
from gates.selectors.decisions import previous_gate_unpromoted

AnyUser = User | AnonymousUser

INCONCLUSIVE = "INCONCLUSIVE"


class RunsNeeded(dict[str, int]):
    """Scenario -> runs, with their ``total`` for a template's button."""

    @property
    def total(self) -> int:
        return sum(self.values())


def evaluation_more_runs(evaluation: Evaluation) -> RunsNeeded:
    """Per scenario, the runs still needed before the gate can be judged: the
    largest ``more_runs_needed`` of its INCONCLUSIVE criteria there (runs of a
    scenario serve every criterion in it), in plan order. Empty unless the gate
    is INCONCLUSIVE (a HALTED or failed gate is not decided by more runs)."""
    if evaluation.verdict != INCONCLUSIVE:
        return RunsNeeded()
    plan = json.loads(evaluation.plan_document)
    gate = next(g for g in plan["gates"] if g["name"] == evaluation.gate)
    scenario_of = {c["id"]: c["scenario"] for c in gate["criteria"]}
    needed = RunsNeeded()
    for done in json.loads(evaluation.evaluation_document)["criteria"]:
        n = int(done.get("more_runs_needed") or 0)
        if done["verdict"] == INCONCLUSIVE and n > 0:
            scenario = scenario_of[done["id"]]
            needed[scenario] = max(needed.get(scenario, 0), n)
    return needed


def gate_repetitions(plan: GatePlan, gate: str) -> int:
    """The gate's largest ``min_runs``: the runs per scenario a campaign of the
    gate (a first run or a re-test) needs."""
    spec = next(g for g in plan.plan["gates"] if g["name"] == gate)
    return max((int(c["min_runs"]) for c in spec["criteria"]), default=1)


def gate_hosts(plan: GatePlan, gate: str, pool: LabPool) -> list[str] | None:
    """The hosts of ``pool`` a campaign of the gate is bound to (by worker
    name), None for the whole pool. A gate naming ``hosts`` (its canary hosts)
    runs only on them (``gate_hosts_unknown``: those not of the pool). A gate
    naming none that follows, in the plan, gates naming hosts of this pool runs
    on the rest: the pool's hosts (``pool_host_names``) those earlier gates do
    not name (empty when none is left). Otherwise the whole pool."""
    specs = plan.plan["gates"]
    index = next(i for i, g in enumerate(specs) if g["name"] == gate)
    if "hosts" in specs[index]:
        return [str(h) for h in specs[index]["hosts"]]
    pool_hosts = pool_host_names(pool)
    canary = {str(h) for g in specs[:index] for h in g.get("hosts", [])}
    if not canary & set(pool_hosts):
        return None
    return [h for h in pool_hosts if h not in canary]


def gate_hosts_unknown(plan: GatePlan, gate: str, pool: LabPool) -> list[str]:
    """The gate's own ``hosts`` that are not hosts of ``pool``, as paths
    (``gates[1].hosts[0]``) with the name."""
    specs = plan.plan["gates"]
    index = next(i for i, g in enumerate(specs) if g["name"] == gate)
    known = set(pool_host_names(pool))
    return [
        f"gates[{index}].hosts[{j}] {name!r}"
        for j, name in enumerate(specs[index].get("hosts", []))
        if name not in known
    ]


def gate_scenarios(plan: GatePlan, gate: str, bundle: Bundle) -> list[str] | None:
    """The bundle's scenarios the gate judges (its criteria's and its stop-loss
    conditions' scenarios), in the harness's order: a campaign for the gate runs
    only those. None (every scenario) when the gate names none the harness has;
    a judged scenario the harness lacks then reads "not measured"."""
    spec = next(g for g in plan.plan["gates"] if g["name"] == gate)
    named = {c["scenario"] for c in spec["criteria"]} | {
        s["scenario"] for s in spec["stop_loss"] if s.get("scenario", "*") != "*"
    }
    harness = (bundle.manifest or {}).get("harness") or {}
    names = [
        str(s.get("name"))
        for s in harness.get("scenarios") or []
        if isinstance(s, dict) and s.get("name") in named
    ]
    return names or None


def plan_bundle(plan: GatePlan) -> Bundle | None:
    """The bundle a campaign for the plan's gates runs: the plan's own, else the
    vendor's latest accepted bundle on the RFP."""
    if plan.bundle_id is not None:
        return plan.bundle
    return (
        Bundle.objects.filter(
            rfp_id=plan.rfp_id,
            organisation_id=plan.vendor_organisation_id,
            status=Bundle.Status.ACCEPTED,
        )
        .order_by("-created_at", "-id")
        .first()
    )


def gate_choice_value(plan: GatePlan, gate: str) -> str:
    """How a form names one gate of one plan."""
    return f"{plan.public_id}:{gate}"


def plans_startable_by(user: AnyUser) -> list[tuple[GatePlan, Bundle]]:
    """The current frozen plans whose gates ``user`` may run, each with the
    bundle its campaigns run: RFPs whose bids are opened, whose buyer engages a
    lab the user operates, the bundle accepted (two queries)."""
    bundles = list(bundle_list_startable_by(user))  # newest first
    latest: dict[tuple[int, int], Bundle] = {}
    for bundle in bundles:
        latest.setdefault((bundle.rfp_id, bundle.organisation_id), bundle)
    startable = {b.pk: b for b in bundles}
    plans = (
        GatePlan.objects.filter(
            status=GatePlan.Status.FROZEN, rfp_id__in={b.rfp_id for b in bundles}
        )
        .select_related("rfp", "vendor_organisation")
        .order_by("rfp__reference", "vendor_organisation__name")
    )
    found = []
    for plan in plans:
        key = (plan.rfp_id, plan.vendor_organisation_id)
        chosen = (
            startable.get(plan.bundle_id)
            if plan.bundle_id is not None
            else latest.get(key)
        )
        if chosen is not None:
            found.append((plan, chosen))
    return found


def gate_choice_list_for(user: AnyUser) -> list[GateChoice]:
    """The gates of current frozen plans ``user`` may run a campaign for."""
    return [
        GateChoice(
            gate_choice_value(plan, gate),
            f"{gate} · {plan.rfp.reference} · {plan.vendor_organisation.name} · "
            f"plan v{plan.version} · bundle {bundle.sha256[:12]}",
            bundle.pk,
            gate_repetitions(plan, gate),
        )
        for plan, bundle in plans_startable_by(user)
        for gate in plan.gate_names
    ]


def gates_ready_to_run(user: AnyUser) -> list[tuple[GatePlan, str]]:
    """Per plan ``user`` may run, its first gate that no evaluation has judged
    under the plan version and no campaign is running for, once the gate before
    it is promoted (the first gate at once): what waits for the lab."""
    plans = [plan for plan, _ in plans_startable_by(user)]
    done = set(
        Evaluation.objects.filter(plan__in=plans).values_list("plan_id", "gate")
    ) | set(
        GateCampaign.objects.filter(plan__in=plans, evaluation__isnull=True)
        .filter(campaign__cancelled_at__isnull=True)
        .values_list("plan_id", "gate")
    )
    ready = []
    for plan in plans:
        gate = next((g for g in plan.gate_names if (plan.pk, g) not in done), None)
        if gate is not None and previous_gate_unpromoted(plan, gate) is None:
            ready.append((plan, gate))
    return ready


def campaign_gate_links(campaign: Campaign) -> list[GateLink]:
    """The gates ``campaign`` was started for or judged by (a buyer may evaluate
    any campaign against a frozen plan), once each, with their pages."""
    pairs = [
        (link.plan, link.gate)
        for link in GateCampaign.objects.filter(campaign=campaign, after__isnull=True)
        .select_related("plan__rfp", "plan__vendor_organisation")
        .order_by("id")
    ] + [
        (e.plan, e.gate)
        for e in Evaluation.objects.filter(campaign=campaign)
        .select_related("plan__rfp", "plan__vendor_organisation")
        .defer("plan_document", "results_document", "evaluation_document")
        .order_by("id")
    ]
    found: dict[tuple[int, str], GateLink] = {}
    for plan, gate in pairs:
        args = (plan.rfp.public_id, plan.vendor_organisation.slug, gate)
        label = f"{gate} of plan v{plan.version}"
        found.setdefault(
            (plan.pk, gate), GateLink(label, reverse("gates:gate", args=args))
        )
    return list(found.values())


def campaign_awaits_judging(campaign_id: int) -> bool:
    """Was the campaign run for a gate it has not been judged on yet (what the
    verdict path, ``gates.services.pipeline``, is queued for)?"""
    return GateCampaign.objects.filter(
        campaign_id=campaign_id, evaluation__isnull=True
    ).exists()
