"""``results_document``: a campaign's runs as ``reprogate.results/v1`` (DESIGN §6),
the measured side of a gate evaluation, read through the benchmarks selectors.

Each run is ``{"id", "scenario", "repetition", "status", "drift", "metrics"}``:

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
  (``benchmarks.environment``): ``major`` → ``major``, ``minor`` → ``minor``,
  ``info`` (a model or count difference, a declared value the host lacks) or no
  drift at all → ``none``.
- ``metrics``: the metrics of the run's current attempt, ``{"name", "stat",
  "value", "unit", "source": {"file", "key"}}`` (the output file and the key inside
  it the parser read). A metric that names another scenario than its run's
  (``reprogate-metrics`` allows a ``scenario`` per metric; the runner warns) is left
  out: a value is only evidence for the scenario the runner actually ran.

Order is deterministic: runs by scenario, repetition, id; metrics by name, stat,
source file, source key (then value). Two queries whatever the number of runs.
"""

from __future__ import annotations

from typing import Any, Final

from benchmarks.models import Campaign, Run
from benchmarks.selectors import campaign_run_results

SCHEMA: Final = "reprogate.results/v1"

S = Run.State
STATUS: Final[dict[str, str]] = {
    S.SUCCEEDED: "succeeded",
    S.FAILED: "failed",
    S.TIMED_OUT: "failed",
    S.CANCELLED: "cancelled",
    S.QUEUED: "pending",
    S.PREPARING: "pending",
    S.RUNNING: "pending",
    S.PARSING: "pending",
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


def _metrics(run: Run) -> list[dict[str, Any]]:
    rows = [
        {
            "name": m.name,
            "stat": m.stat,
            "value": m.value,
            "unit": m.unit,
            "source": {"file": m.source_path, "key": m.source_key},
        }
        for m in run.current_metrics  # type: ignore[attr-defined]
        if not m.scenario or m.scenario == run.scenario_name
    ]
    rows.sort(
        key=lambda r: (
            r["name"],
            r["stat"],
            r["source"]["file"],
            r["source"]["key"],
            r["value"],
        )
    )
    return rows


def results_document(*, campaign: Campaign) -> dict[str, Any]:
    """``reprogate.results/v1`` for the campaign's runs (see the module docstring)."""
    runs = [
        {
            "id": str(run.public_id),
            "scenario": run.scenario_name,
            "repetition": run.repetition,
            "status": run_status(run.state),
            "drift": run_drift(run.drift),
            "metrics": _metrics(run),
        }
        for run in campaign_run_results(campaign)
    ]
    runs.sort(key=lambda r: (r["scenario"], r["repetition"], r["id"]))
    return {"schema": SCHEMA, "runs": runs}
