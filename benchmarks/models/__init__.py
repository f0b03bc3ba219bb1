"""Benchmark runner models: lab pools and hosts, campaigns and runs, results."""

from __future__ import annotations

from benchmarks.models.campaigns import RUN_TRANSITIONS, Campaign, Run
from benchmarks.models.pools import HostToken, LabHost, LabPool
from benchmarks.models.results import RunArtefact, RunMetric, RunOutput, RunSeries

__all__ = [
    "RUN_TRANSITIONS",
    "Campaign",
    "HostToken",
    "LabHost",
    "LabPool",
    "Run",
    "RunArtefact",
    "RunMetric",
    "RunOutput",
    "RunSeries",
]
