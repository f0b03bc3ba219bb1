"""The agent's side of trace spans (``reprogate_agent.telemetry.write_spans``):
the harness's files become one sorted ``spans.jsonl`` in the workspace root,
within the artefact's size limit, or none at all when it wrote no span."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.lib.lab import artefacts
from benchmarks.lib.lab.spans import read_spans
from reprogate_agent.telemetry import write_spans
from tests.benchmarks.lab.test_spans import span


def _trace(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "trace"
    folder.mkdir()
    lines = [json.dumps(span(f"{i + 1:016x}", 100 - i, 200)) for i in range(count)]
    (folder / "app.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_the_spans_are_written_sorted_in_the_workspace_root(tmp_path: Path) -> None:
    path, warnings = write_spans(_trace(tmp_path, 3), tmp_path)

    assert path == tmp_path / "spans.jsonl"
    assert warnings == []
    starts = [s.start_ns for s in read_spans(path.read_bytes()).spans]
    assert starts == sorted(starts)
    assert len(starts) == 3


def test_no_span_no_artefact(tmp_path: Path) -> None:
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "app.jsonl").write_text("nothing\n")

    path, warnings = write_spans(tmp_path / "trace", tmp_path)

    assert path is None
    assert not (tmp_path / "spans.jsonl").exists()
    assert warnings == ["trace spans: 1 bad line(s) skipped: app.jsonl line 1: "
                        "not JSON (Expecting value at column 1)."]  # fmt: skip


def test_spans_past_the_artefact_limit_are_cut_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path, 10)
    monkeypatch.setitem(artefacts.RUNNER_ARTEFACTS, "spans.jsonl", 1000)

    path, warnings = write_spans(trace, tmp_path)

    assert path is not None
    assert 0 < path.stat().st_size <= 1000
    kept = len(read_spans(path.read_bytes()).spans)
    assert warnings == [f"trace spans: only the first {kept} fit in spans.jsonl."]
