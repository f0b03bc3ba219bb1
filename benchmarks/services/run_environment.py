"""What a run records as its harness starts: the host's environment, its
drift from the bundle's declared environment graded by the RFP's drift policy
(a contract term), and for a cold-cache scenario whether the page cache was
dropped. The runner API's ``running`` step calls it; a gate's stop-loss reads
the drift it records (``drift_at_least``)."""

from __future__ import annotations

from typing import Any

from accounts.selectors import clock
from benchmarks.lib.environment import DriftPolicy, drift_policy, environment_drift
from benchmarks.lib.sandbox.reporting import json_safe
from benchmarks.models import Run


def run_drift_policy(run: Run) -> DriftPolicy:
    """The drift policy of the run's RFP (its rules over the defaults)."""
    rfp = run.campaign.rfp
    return drift_policy(rfp.drift_policy, source=rfp.reference)


def running_fields(
    run: Run,
    environment: dict[str, Any],
    declared: dict[str, Any],
    cache_dropped: bool | None,
) -> dict[str, Any]:
    """The run's fields as its harness starts (``cache_dropped`` is ignored for
    a warm scenario)."""
    environment = json_safe(environment)
    drifts = environment_drift(environment, json_safe(declared), run_drift_policy(run))
    fields: dict[str, Any] = {
        "environment": environment,
        "drift": [json_safe(d.as_dict()) for d in drifts],
        "started_at": clock.now(),
        "heartbeat_at": clock.now(),
    }
    if run.scenario.get("cache") == "cold":
        dropped = bool(cache_dropped)
        fields["cache_dropped"] = dropped
        fields["cache_note"] = (
            "Page cache dropped before the run."
            if dropped
            else "Cold-cache scenario, but this host does not allow dropping the "
            "page cache (needs root outside a container): the cache may be warm."
        )
    return fields
