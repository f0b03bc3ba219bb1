"""A harness's trace spans, collected by the one run path (the lab agent in
process, the harness in the sandbox): REPROGATE_TRACE_DIR is an empty folder
the harness writes; the runner reads it as hostile input, normalises it into
the ``spans.jsonl`` runner artefact, names it in the host-signed statement and
deposits it with the outputs."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from artifacts.storage.blobs import blob_open
from benchmarks.lib.lab.spans import read_spans
from benchmarks.models import Run, RunArtefact
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    accepted_bundle,
    runs_of,
    start,
)

pytestmark = pytest.mark.django_db

T = "4bf92f3577b34da6a3ce929d0e0e4736"
READ = {
    "trace_id": T, "span_id": "00000000000000b2", "parent_id": "00000000000000b1",
    "name": "storage.read",
    "start_ns": 1796414400200000000, "end_ns": 1796414400300000000,
    "attributes": {"reprogate.io.device": "scratch0", "reprogate.io.offset": 4096,
                   "reprogate.io.bytes": 4096},
}  # fmt: skip
REQUEST = {
    "trace_id": T, "span_id": "00000000000000b1", "name": "request",
    "start_ns": 1796414400100000000, "end_ns": 1796414400900000000,
    "attributes": {"gen_ai.usage.output_tokens": 64},
}  # fmt: skip
# Writes two spans out of order, a bad line, a link to a host file and what the
# trace directory held before, then the contract's metrics.
SPAN_HARNESS = (
    b"""#!/bin/sh
set -eu
test -d "$REPROGATE_TRACE_DIR" && test -w "$REPROGATE_TRACE_DIR"
ls -A "$REPROGATE_TRACE_DIR" > "$REPROGATE_OUTPUT_DIR/trace-dir-before.txt"
cat > "$REPROGATE_TRACE_DIR/app.jsonl" <<'JSON'
%s
not a span
%s
JSON
ln -s /etc/passwd "$REPROGATE_TRACE_DIR/leak.jsonl"
"""
    % (json.dumps(READ).encode(), json.dumps(REQUEST).encode())
    + GOOD_HARNESS.split(b"set -eu\n", 1)[1]
)


@pytest.fixture
def run(
    tmp_path: Path, rfp: Any, vendor_a: Any, vendor_a_org: Any, pool: Any, labops: Any
) -> Run:
    bundle = accepted_bundle(
        tmp_path / "b", rfp, vendor_a_org, vendor_a, harness=SPAN_HARNESS
    )
    outcome, done = execute_in_process(runs_of(start(bundle, pool, labops))[0])
    assert outcome == done.state == Run.State.SUCCEEDED, done.reason
    return done


def _spans_bytes(run: Run) -> bytes:
    artefact = RunArtefact.objects.get(run=run, name="spans.jsonl")
    with blob_open(artefact.blob) as handle:
        return handle.read()


def test_the_harness_gets_an_empty_trace_dir_and_its_spans_are_kept_sorted(
    run: Run,
) -> None:
    data = _spans_bytes(run)

    parsed = read_spans(data)
    assert parsed.bad_lines == 0
    assert [s.name for s in parsed.spans] == ["request", "storage.read"]
    assert parsed.spans[1].attributes["reprogate.io.bytes"] == 4096
    assert b"root:" not in data  # the link to a host file was not followed
    before = run.outputs.get(path="trace-dir-before.txt")
    with blob_open(before.blob) as handle:
        assert handle.read() == b""


def test_bad_lines_and_links_are_warnings_not_failures(run: Run) -> None:
    warnings = " ".join(run.parse_warnings)

    assert "app.jsonl line 2: not JSON" in warnings
    assert "1 bad line(s) skipped" in warnings
    assert (
        "removed leak.jsonl from the trace spans (a link or special file)"
        in (run.isolation["notes"])
    )


def test_spans_are_a_subject_of_the_signed_statement_and_deposited(run: Run) -> None:
    data = _spans_bytes(run)
    artefact = RunArtefact.objects.get(run=run, name="spans.jsonl")
    with blob_open(run.statement_blob) as handle:
        envelope = json.loads(handle.read())
    statement = json.loads(base64.b64decode(envelope["payload"]))

    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects["runner/spans.jsonl"] == artefact.blob.sha256
    assert len(data) == artefact.blob.size
    items = {i.path: i.blob for i in run.output_deposit.items.all()}
    assert items["runner/spans.jsonl"] == artefact.blob
