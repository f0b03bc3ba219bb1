"""Environment capture and drift.

    from benchmarks.lib.environment import capture_environment, environment_drift
    captured = capture_environment()                     # this host, JSON-able
    drifts = environment_drift(captured, manifest_json, policy)  # major first

``policy`` is a ``DriftPolicy`` (``drift_policy(rfp_document, source)``; the
defaults when None) that sets each drift's severity by rule.

Pure Python, no Django. ``capture_environment(root=...)`` reads another tree
(tests); ``runner=`` replaces how tools (lscpu, nvidia-smi, ethtool…) are run.
"""

from __future__ import annotations

from collections.abc import Iterable

from benchmarks.lib.environment.capture import SCHEMA, capture_environment
from benchmarks.lib.environment.drift import (
    INFO,
    MAJOR,
    MINOR,
    Drift,
    environment_drift,
)
from procurement.lib.drift_policy import (
    DEFAULT_RULES,
    DriftPolicy,
    drift_policy,
    drift_policy_problems,
)


def drift_counts(drifts: Iterable[Drift]) -> dict[str, int]:
    """{"major": n, "minor": n, "info": n} for a run's summary line."""
    counts = {MAJOR: 0, MINOR: 0, INFO: 0}
    for drift in drifts:
        counts[drift.severity] = counts.get(drift.severity, 0) + 1
    return counts


__all__ = [
    "DEFAULT_RULES",
    "INFO",
    "MAJOR",
    "MINOR",
    "SCHEMA",
    "Drift",
    "DriftPolicy",
    "capture_environment",
    "drift_counts",
    "drift_policy",
    "drift_policy_problems",
    "environment_drift",
]
