"""The example harness's trace spans end to end: acme-flash's harness code run
by the lab agent in process (the sandbox, the telemetry sampler), its spans
kept as ``spans.jsonl`` and drawn on the run page, the slowest requests joined
with the telemetry the runner sampled meanwhile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from artifacts.models import Bundle
from benchmarks.lib.lab.spans import SpanTree
from benchmarks.models import Run
from benchmarks.selectors.telemetry import run_spans, run_telemetry
from procurement.models import Rfp
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import runner_manifest, runs_of, start

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "acme-flash"
FILES = (
    "harness/run.sh", "harness/harness.py", "harness/kvsim.py",
    "harness/tracegen.py", "harness/nbdprobe.py", "harness/config.json",
    "workloads/llama70b-chat.json",
    "environment/manifest.json",
)  # fmt: skip
SCENARIO = {"name": "warm-c8-b8", "cache": "warm", "concurrency": 8,
            "batch_size": 8, "duration_s": 2}  # fmt: skip


@pytest.fixture
def run(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Any, pool: Any, labops: Any
) -> Run:
    files = {path: (EXAMPLE / path).read_bytes() for path in FILES}
    manifest = runner_manifest(files, rfp, vendor_a_org, scenarios=[SCENARIO])
    archive = build_bundle(tmp_path / "b", files, manifest=manifest)
    bundle = ingest(rfp, vendor_a_org, vendor_a, archive)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)
    bundle.rfp.refresh_from_db()
    outcome, done = execute_in_process(runs_of(start(bundle, pool, labops))[0])
    assert outcome == done.state == Run.State.SUCCEEDED, done.reason
    return done


def test_the_example_harness_s_spans_reach_the_run_page(
    run: Run, client_for: Any, buyer: Any
) -> None:
    spans = run_spans(run)
    assert spans
    tree = SpanTree.of(spans)
    assert {s.name for s in tree.roots} == {"request"}
    names = {s.name for s in spans}
    assert names == {"request", "prefill", "kv_cache.lookup", "storage.read"}
    telemetry = run_telemetry(run)
    assert telemetry is not None
    first, last = min(s.start_ns for s in spans), max(s.end_ns for s in spans)
    assert first < last
    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))
    body = page.content.decode()
    assert body.count('data-testid="slow-request"') == min(10, len(tree.roots))
    assert 'data-testid="waterfall-row"' in body
    disks = [s for s in telemetry.series if s.source == "diskstats"]
    if disks:  # the workspace's disk, where the host has one under it
        assert 'data-testid="slow-interval"' in body, json.dumps(telemetry.devices)
