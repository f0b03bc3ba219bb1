"""Building blocks of the runner tests: a real bundle with a harness of the
test's choosing (signed, ingested, accepted), its RFP opened, a lab pool."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.lib.queues import EXECUTE_RUN
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.campaigns import campaign_start
from benchmarks.services.pools import WorkerIdentity, pool_create
from config.celery import app as celery_app
from procurement.models import Rfp
from tests.artifacts.corpus.build import file_entry, good_manifest, manifest_bytes
from tests.artifacts.ingest_support import build_bundle, ingest

SCENARIOS: list[dict[str, Any]] = [
    {
        "name": "cold-c1",
        "cache": "cold",
        "concurrency": 1,
        "batch_size": 1,
        "duration_s": 1,
    },
    {
        "name": "warm-c1",
        "cache": "warm",
        "concurrency": 1,
        "batch_size": 1,
        "duration_s": 1,
    },
]

# A harness that follows the runner contract: progress, one reprogate-metrics file.
GOOD_HARNESS = b"""#!/bin/sh
set -eu
echo "scenario: $REPROGATE_SCENARIO"
echo "::progress:: 0.5"
name=$(printf '%s' "$REPROGATE_SCENARIO" | sed -n 's/.*"name": "\\([^"]*\\)".*/\\1/p')
cat > "$REPROGATE_OUTPUT_DIR/metrics.json" <<JSON
{"metrics": [
  {"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms", "scenario": "$name"},
  {"name": "read_iops", "stat": "mean", "value": 1000, "unit": "IO/s"}
 ],
 "series": [{"name": "cache_hit_rate", "unit": "ratio",
             "points": [[0, 0.1], [1, 0.9]]}]}
JSON
echo "::progress:: 1"
"""

ENVIRONMENT = {"os": "Ubuntu 22.04", "kernel": "4.0.0-reprogate-test"}


def bundle_files(harness: bytes = GOOD_HARNESS, **extra: bytes) -> dict[str, bytes]:
    files = {
        "harness/run.sh": harness,
        "environment/manifest.json": json.dumps(ENVIRONMENT).encode(),
        "workloads/chat.json": b'{"model": "llama-70b"}\n',
    }
    return {**files, **extra}


def runner_manifest(
    files: dict[str, bytes],
    rfp: Rfp,
    vendor: Organisation,
    *,
    scenarios: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, str]] | None = None,
) -> bytes:
    manifest = good_manifest(files, rfp=rfp.reference, vendor=vendor.slug)
    manifest["files"] = [file_entry(p, d) for p, d in sorted(files.items())]
    manifest["harness"] = {
        "entrypoint": "harness/run.sh",
        "outputs": outputs or [{"path": "metrics.json", "parser": "reprogate-metrics"}],
        "scenarios": scenarios or SCENARIOS,
    }
    first = (scenarios or SCENARIOS)[0]["name"]
    manifest["claims"] = [
        {
            "metric": "ttft_ms",
            "stat": "p99",
            "scenario": first,
            "value": 40.0,
            "unit": "ms",
        }
    ]
    return manifest_bytes(manifest)


def accepted_bundle(
    directory: Path,
    rfp: Rfp,
    vendor: Organisation,
    user: Any,
    *,
    harness: bytes = GOOD_HARNESS,
    **manifest_options: Any,
) -> Bundle:
    """Ingest a signed bundle (corpus key ``vendor_a``) and open the RFP."""
    files = bundle_files(harness)
    manifest = runner_manifest(files, rfp, vendor, **manifest_options)
    bundle = ingest(
        rfp, vendor, user, build_bundle(directory, files, manifest=manifest)
    )
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)
    bundle.rfp.refresh_from_db()
    return bundle


def runs_sent_to(monkeypatch: pytest.MonkeyPatch, send: Callable[..., Any]) -> None:
    """Hand every ``execute_run`` message the server sends (``runs_dispatch``, by
    name) to ``send(args=…, queue=…, **options)`` instead of the broker; every
    other task is sent as before."""
    send_task = celery_app.send_task

    def intercept(name: str, args: Any = None, kwargs: Any = None, **kw: Any) -> Any:
        if name != EXECUTE_RUN:
            return send_task(name, args, kwargs, **kw)
        return send(args=list(args or []), **kw)

    monkeypatch.setattr(celery_app, "send_task", intercept)


def make_pool(lab: Organisation, name: str = "gpu-a") -> LabPool:
    return pool_create(lab_organisation=lab, name=name, actor=None)


def start(bundle: Bundle, pool: LabPool, user: Any, repetitions: int = 1) -> Campaign:
    """Start a campaign (inside the test's transaction, nothing is sent)."""
    return campaign_start(bundle=bundle, pool=pool, repetitions=repetitions, actor=user)


def worker(name: str = "w1@lab-host") -> WorkerIdentity:
    return WorkerIdentity(worker_name=name, hostname="lab-host", pid=1234)


def runs_of(campaign: Campaign) -> list[Run]:
    return list(campaign.runs.order_by("position"))


def finish(
    run: Run,
    *,
    metrics: Sequence[dict[str, Any]] = (),
    outputs: dict[str, bytes] | None = None,
) -> Run:
    """Set the run succeeded with these metrics and outputs (state set directly,
    as factories do; transitions are tested through the services)."""
    import hashlib

    from artifacts.storage.blobs import blob_record, blob_write
    from benchmarks.models import RunMetric, RunOutput

    Run.objects.filter(pk=run.pk).update(state=Run.State.SUCCEEDED, progress=1.0)
    for m in metrics:
        fields = {
            "unit": "ms",
            "source_path": "metrics.json",
            "source_key": "metrics[0]",
            "method": "tool",
            "scenario": run.scenario_name,
            **m,
        }
        RunMetric.objects.create(run=run, attempt=run.attempt, **fields)
    for path, data in (outputs or {}).items():
        digest = hashlib.sha256(data).hexdigest()
        blob = blob_record(blob_write(data, digest, len(data)))
        RunOutput.objects.create(run=run, attempt=run.attempt, path=path, blob=blob)
    run.refresh_from_db()
    return run


@pytest.fixture
def runner_work_dir(settings: Any, tmp_path: Path) -> Path:
    """Runs execute in a folder of the test's own, their progress written at once.
    A test module takes it by importing ``runner_work_dir`` (and using it)."""
    work = tmp_path / "runner-work"
    work.mkdir()
    settings.RUNNER_WORK_DIR = str(work)
    settings.RUNNER_PROGRESS_WRITE_SECONDS = 0
    return work
