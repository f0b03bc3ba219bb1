"""What benchmarks gives procurement without procurement importing benchmarks: the
captured source of the fidelity matrix (``procurement.selectors.fidelity_sources``),
registered by ``BenchmarksConfig.ready()``: per vendor, the environment the lab
captured on the host of the latest run of its bundle on the RFP, flattened to
``path -> value``, with the kinds of the scenarios its campaign ran
(``scenarios[i].kind``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from benchmarks.models import Campaign, Run
from procurement.lib.fidelity import Captured, flatten
from procurement.models import Rfp


def run_captures(rfp: Rfp, organisation_ids: Collection[int]) -> dict[int, Captured]:
    """Two queries whatever the number of vendors and runs."""
    newest = (
        Run.objects.filter(
            campaign__rfp=rfp,
            campaign__role=Campaign.Role.VENDOR,
            campaign__bundle__organisation_id__in=list(organisation_ids),
        )
        .exclude(environment={})
        .order_by("-created_at", "-id")
        .values_list("pk", "campaign__bundle__organisation_id")
    )
    chosen: dict[int, int] = {}
    for run_pk, organisation_id in newest:
        chosen.setdefault(organisation_id, run_pk)
    runs = Run.objects.filter(pk__in=list(chosen.values())).select_related("campaign")
    by_pk = {run.pk: run for run in runs}
    return {org: _captured(by_pk[pk]) for org, pk in chosen.items() if pk in by_pk}


def _captured(run: Run) -> Captured:
    facts = flatten(run.environment if isinstance(run.environment, Mapping) else {})
    scenarios = (
        run.campaign.scenarios if isinstance(run.campaign.scenarios, list) else []
    )
    for index, scenario in enumerate(scenarios):
        if isinstance(scenario, Mapping):
            facts[f"scenarios[{index}].kind"] = str(scenario.get("kind") or "steady")
    return Captured(run=str(run.public_id), facts=facts)
