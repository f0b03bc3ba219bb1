"""A phase's own figures as scenario metrics: every ``reprogate-metrics``
output (JSON) the harness wrote in a phase other than ``main`` becomes a
scenario metric named with a prefix (``ttft_ms`` p99 of phase ``a`` is
``phase_a_ttft_ms`` p99), same stat and unit, so the phases' figures stand side
by side with the run's own (``main``'s outputs, parsed as any run's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from benchmarks.lib.lab.scenarios.base import metric
from benchmarks.lib.parsers import Metric, parse

METRICS_FILE_MAX_BYTES: Final = 64 << 20
MAX_KEY_CHARS: Final = 300


def phase_metrics(output_dir: Path, prefix: str, phase: str) -> list[dict[str, Any]]:
    """The figures in ``output_dir``, named ``<prefix><name>`` (the first file
    to give a name and stat wins); ``phase`` names the phase in their keys."""
    found: dict[tuple[str, str], Metric] = {}
    for path in sorted(output_dir.rglob("*.json")):
        if path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > METRICS_FILE_MAX_BYTES:
            continue
        result = parse("reprogate-metrics", path.read_bytes(), source_name=path.name)
        for m in result.metrics if result.ok else []:
            found.setdefault((m.name, m.stat), m)
    return [
        metric(
            f"{prefix}{m.name}",
            m.stat,
            m.value,
            m.unit,
            f"phase {phase}: {m.source_key}"[:MAX_KEY_CHARS],
        )
        for m in found.values()
    ]
