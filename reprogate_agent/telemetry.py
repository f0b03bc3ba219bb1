"""The run's telemetry on the agent's side (``benchmarks.lib.lab.telemetry``):
the sampler (and, when the policy asks and the host can, the per-I/O latency
tracer) from just before the harness starts to just after it exits; the blob
written in the workspace root, out of the harness's reach; the runner's
artefacts uploaded through their own route."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.artefacts import RUNNER_ARTEFACTS, SPANS, TELEMETRY
from benchmarks.lib.lab.blocklat import BlockLatencyTracer
from benchmarks.lib.lab.spans import collect_trace_dir, encode_spans
from benchmarks.lib.lab.telemetry import Sampler
from benchmarks.lib.lab.telemetry_blob import encode
from benchmarks.lib.lab.telemetry_sources import (
    CgroupSource,
    block_device_of,
    default_sources,
)
from benchmarks.lib.sandbox.cgroups import Cgroup
from reprogate_agent.client import Conflict, RunnerClient, ServerRefused, TokenRefused

MIN_INTERVAL_MS: Final = 100
MAX_INTERVAL_MS: Final = 60_000
MAX_DEVICES: Final = 64


def _settings(run: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's ``telemetry`` object ({} when there is none)."""
    policy = run.get("policy")
    settings = policy.get("telemetry") if isinstance(policy, dict) else None
    return settings if isinstance(settings, dict) else {}


def _interval_ms(settings: Mapping[str, Any]) -> float:
    value = settings.get("interval_ms")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 1000
    return min(MAX_INTERVAL_MS, max(MIN_INTERVAL_MS, value))


def _devices(run: Mapping[str, Any]) -> list[str]:
    """The run's block devices (``telemetry_devices``: host names or paths)."""
    named = run.get("telemetry_devices")
    return [
        Path(d).name if d.startswith("/dev/") else d
        for d in (named if isinstance(named, list) else [])[:MAX_DEVICES]
        if isinstance(d, str) and d
    ]


class RunTelemetry:
    """``start()`` before the harness, ``attach`` as ``run_harness``'s
    ``on_start``, ``stop()`` right after it: the blob's path."""

    def __init__(
        self,
        run: Mapping[str, Any],
        workspace_root: Path,
        progress: Callable[[], float | None],
    ) -> None:
        settings, devices = _settings(run), _devices(run)
        own = block_device_of(workspace_root)
        sampled = devices + ([own] if own and own not in devices else [])
        sources, notes = default_sources(sampled, progress=progress)
        self.cgroup = CgroupSource()
        sources.append(self.cgroup)
        # the metrics are the policy's devices', or else the workspace disk's
        self.sampler = Sampler(
            sources,
            interval_s=_interval_ms(settings) / 1000,
            notes=notes,
            devices=devices or sampled,
        )
        self.histogram = bool(settings.get("block_latency_histogram"))
        self.tracer: BlockLatencyTracer | None = None
        self.blob = workspace_root / TELEMETRY

    def start(self) -> None:
        if self.histogram:
            tracer = BlockLatencyTracer(self.sampler.devices)
            why = tracer.start()
            if why:
                note = f"block latency histogram unavailable ({why})"
                self.sampler.notes.append(note)
            else:
                self.tracer = tracer
        self.sampler.start()

    def attach(self, group: Cgroup | None) -> None:
        if group is not None:
            self.cgroup.attach(group.version, group.dirs)

    def stop(self) -> Path:
        recording = self.sampler.stop()
        if self.tracer is not None:
            histograms, note = self.tracer.stop()
            recording.histograms = [h.as_json() for h in histograms]
            recording.notes += [note] if note else []
        return write_new(self.blob, encode(recording))


def write_new(path: Path, data: bytes) -> Path:
    """``data`` in a new file at ``path``, never through a link left there."""
    path.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as sink:
        sink.write(data)
    return path


def write_spans(trace_dir: Path, workspace_root: Path) -> tuple[Path | None, list[str]]:
    """The harness's trace spans (``REPROGATE_TRACE_DIR``) read as hostile
    input and normalised into ``spans.jsonl`` in the workspace root (None when
    it wrote none); what was skipped, as the run's warnings."""
    parsed = collect_trace_dir(trace_dir)
    if not parsed.spans:
        return None, parsed.warnings()
    data = encode_spans(parsed.spans, limit=RUNNER_ARTEFACTS[SPANS])
    kept = data.count(b"\n")
    if kept < len({(s.trace_id, s.span_id) for s in parsed.spans}):
        parsed.notes.append(f"trace spans: only the first {kept} fit in {SPANS}.")
    return write_new(workspace_root / SPANS, data), parsed.warnings()


def upload_artefacts(
    client: RunnerClient,
    run_id: int,
    attempt: int,
    artefacts: Mapping[str, Path],
    beat: Callable[[], object],
) -> list[str]:
    """The runner's own files (``benchmarks.lib.lab.artefacts``) through their
    own route; a refused one is a warning (a 409 or a refused token stops the run)."""
    warnings = []
    for name, local in sorted(artefacts.items()):
        beat()
        try:
            client.upload_artefact(run_id, attempt, name, local)
        except (Conflict, TokenRefused):
            raise
        except ServerRefused as refused:
            warnings.append(f"runner artefact {name}: refused ({refused}).")
    return warnings
