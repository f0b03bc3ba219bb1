"""``results_document``: a campaign's runs as ``reprogate.results/v1``
(docs/gate-documents.md), the measured side of a gate evaluation, read through the
benchmarks selectors.

Each run is ``{"id", "scenario", "repetition", "status", "drift", "metrics"}``
and, when one is flagged, ``checks``:

- ``id``: the run's public id (a UUID string), ``scenario``: its scenario name,
  ``repetition``: 1-based.
- ``status``, from the run's state:

  ==================================  ============  ===============================
  run state                           status        why
  ==================================  ============  ===============================
  succeeded                           succeeded     its values count
  failed, timed_out                   failed        the harness or its outputs
                                                    failed (a timeout is the
                                                    vendor's harness not finishing
                                                    within the wall-clock limit);
                                                    triggers ``run_failed``
  cancelled                           cancelled     stopped by the lab; not counted,
                                                    not the vendor's failure
  queued, preparing, running,         pending       not finished (a run whose worker
  parsing                                           was lost is re-queued, then
                                                    failed by the reaper)
  ==================================  ============  ===============================

  Only ``succeeded`` runs' values are judged, so a cancelled, lost or unfinished run
  never counts as a measurement.
- ``drift``: the most severe environment drift the runner recorded on the run
  (``benchmarks.lib.environment``): ``major`` → ``major``, ``minor`` → ``minor``,
  ``info`` (a model or count difference, a declared value the host lacks) or no
  drift at all → ``none``.
- ``metrics``: the metrics of the run's current attempt, ``{"name", "stat",
  "value", "unit", "source": {"file", "key"}}`` (the output file and the key inside
  it the parser read). Left out, because they are no evidence a gate can judge:

  - a metric naming another scenario than its run's (``reprogate-metrics`` allows
    a ``scenario`` per metric; the runner warns): a value only speaks for the
    scenario the runner actually ran;
  - a stat outside the runner contract's list (``mean``, ``max``, ``min``, ``p50`` …
    ``p99.99``; parsers also record e.g. ``total`` counts or ``p99.999``), a
    name that is not lower_snake, and a value that is not finite (vLLM's ``inf``
    request rate: JSON has no infinity);
  - a name and stat the run reports more than once (fio's per-job scopes, two
    outputs with the same metric): the unscoped value is kept when there is
    exactly one, and one value when all are equal; otherwise none, since picking
    one job's value would be arbitrary (a criterion on it then reads "not
    measured", and the run page shows every scope).
- ``checks``, only on a run with a flagged anti-gaming check
  (``benchmarks.lib.lab.checks``): the flagged ids (``seed_ignored``,
  ``cold_cache_unproven``, ``working_set_fits_in_memory``), read by a stop-loss
  ``check_flagged``; left out otherwise, so a document reads as before.

Order is deterministic: runs by scenario, repetition, id; metrics by name and
stat (one value each). When the plan holds a criterion to the buyer's baseline,
the RFP's baseline campaign's runs follow in the same order, each with
``"role": "baseline"`` (``baseline_for``); otherwise no run carries a role.
Two queries per campaign whatever the number of runs; benchmarks is read
through its selectors only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final

from benchmarks.lib.lab.checks import flagged_ids
from benchmarks.selectors.results import baseline_campaign_for, campaign_run_results
from gates.lib.engine.validate import METRIC_NAME, STATS

if TYPE_CHECKING:
    from benchmarks.models import Campaign, Run, RunMetric

SCHEMA: Final = "reprogate.results/v1"

# Run.State values -> results status (the table in the module docstring).
STATUS: Final[dict[str, str]] = {
    "succeeded": "succeeded",
    "failed": "failed",
    "timed_out": "failed",
    "cancelled": "cancelled",
    "queued": "pending",
    "preparing": "pending",
    "running": "pending",
    "parsing": "pending",
}
DRIFT: Final[dict[str, str]] = {"major": "major", "minor": "minor", "info": "none"}
DRIFT_ORDER: Final = ("none", "minor", "major")


def run_status(state: str) -> str:
    """The results document's status of a run in ``state`` (unknown: failed)."""
    return STATUS.get(state, "failed")


def run_drift(drift: Any) -> str:
    """``none``, ``minor`` or ``major``: the most severe entry of a run's drift list
    (entries with an unknown severity count as ``none``)."""
    worst = "none"
    for entry in drift if isinstance(drift, list) else []:
        severity = entry.get("severity") if isinstance(entry, dict) else None
        level = DRIFT.get(severity, "none") if isinstance(severity, str) else "none"
        if DRIFT_ORDER.index(level) > DRIFT_ORDER.index(worst):
            worst = level
    return worst


def _row(m: RunMetric) -> dict[str, Any]:
    return {
        "name": m.name,
        "stat": m.stat,
        "value": m.value,
        "unit": m.unit,
        "source": {"file": m.source_path, "key": m.source_key},
    }


def _pick(candidates: list[RunMetric]) -> RunMetric | None:
    """The one value of a name and stat, or ``None`` when it is ambiguous."""
    if len(candidates) == 1:
        return candidates[0]
    unscoped = [m for m in candidates if not m.scope]
    if len(unscoped) == 1:
        return unscoped[0]
    if len({m.value for m in candidates}) == 1:
        return candidates[0]
    return None


def _metrics(run: Run) -> list[dict[str, Any]]:
    by_key: dict[tuple[str, str], list[RunMetric]] = defaultdict(list)
    for m in run.current_metrics:  # type: ignore[attr-defined]
        if m.scenario and m.scenario != run.scenario_name:
            continue
        if m.stat in STATS and METRIC_NAME.match(m.name) and math.isfinite(m.value):
            by_key[(m.name, m.stat)].append(m)
    rows = []
    for key in sorted(by_key):
        candidates = sorted(
            by_key[key], key=lambda m: (m.source_path, m.source_key, m.scope, m.id)
        )
        picked = _pick(candidates)
        if picked is not None:
            rows.append(_row(picked))
    return rows


def _run(run: Run) -> dict[str, Any]:
    """One run of the document; ``checks`` (its flagged anti-gaming checks)
    only when one is flagged, so that a document without any reads as before."""
    row: dict[str, Any] = {
        "id": str(run.public_id),
        "scenario": run.scenario_name,
        "repetition": run.repetition,
        "status": run_status(run.state),
        "drift": run_drift(run.drift),
        "metrics": _metrics(run),
    }
    flagged = flagged_ids(run.checks)
    if flagged:
        row["checks"] = flagged
    return row


def _runs(campaign: Campaign) -> list[dict[str, Any]]:
    runs = [_run(run) for run in campaign_run_results(campaign)]
    runs.sort(key=lambda r: (r["scenario"], r["repetition"], r["id"]))
    return runs


def results_document(
    *, campaign: Campaign, baseline: Campaign | None = None
) -> dict[str, Any]:
    """``reprogate.results/v1`` for the campaign's runs (see the module
    docstring), followed, when ``baseline`` is given, by the baseline campaign's
    runs in the same form with ``"role": "baseline"`` (never judged as the
    vendor's; criteria held to the baseline take their limit from them)."""
    runs = _runs(campaign)
    if baseline is not None:
        runs += [{**run, "role": "baseline"} for run in _runs(baseline)]
    return {"schema": SCHEMA, "runs": runs}


def plan_needs_baseline(plan: dict[str, Any]) -> bool:
    """Whether a criterion of the plan is held to the buyer's baseline: only
    then does its results document carry the baseline's runs (a plan without
    one is judged on the same bytes as before)."""
    return any("baseline" in c for gate in plan["gates"] for c in gate["criteria"])


def baseline_for(plan: dict[str, Any], campaign: Campaign) -> Campaign | None:
    """The baseline campaign whose runs join the results document of
    ``campaign`` under ``plan`` (``baseline_campaign_for`` of its RFP), or None."""
    if not plan_needs_baseline(plan):
        return None
    return baseline_campaign_for(campaign.rfp_id)
