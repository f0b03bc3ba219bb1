"""Grow a campaign, a bundle and its deposit to many rows in bulk (rows set
directly, as factories do), for the tests that hold a page's queries constant
(``query_counts``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from artifacts.models import Blob, Bundle, BundleFile, Deposit, DepositBlob
from benchmarks.models import Campaign, Run, RunMetric


def add_runs(campaign: Campaign, count: int, metrics_per_run: int = 3) -> list[Run]:
    """``count`` succeeded runs after the campaign's last, each with metrics of
    its first attempt (one scenario named by the metric, one by the run)."""
    last = campaign.runs.order_by("-position").values_list("position", flat=True)
    start = (last.first() or 0) + 1
    runs = Run.objects.bulk_create(
        Run(campaign=campaign, position=start + i, scenario_name="bulk",
            repetition=start + i, state=Run.State.SUCCEEDED, wall_limit_s=60,
            progress=1.0, log_tail="x" * 2000)
        for i in range(count)
    )  # fmt: skip
    RunMetric.objects.bulk_create(
        RunMetric(run=run, attempt=1, name=f"m{j}", stat="p99", value=j + 0.25,
                  unit="ms", source_path="metrics.json", source_key=f"metrics[{j}]",
                  method="harness", scenario="warm-c1" if j == 0 else "")
        for run in runs
        for j in range(metrics_per_run)
    )  # fmt: skip
    return runs


def _blobs(prefix: str, count: int) -> list[Blob]:
    digests = [
        hashlib.sha256(f"{prefix}-{i}".encode()).hexdigest() for i in range(count)
    ]
    return Blob.objects.bulk_create(
        Blob(sha256=d, size=100 + i, storage_key=f"blobs/{d[:2]}/{d}")
        for i, d in enumerate(digests)
    )


def add_files(bundle: Bundle, count: int) -> None:
    """``count`` files in two folders, named ``file-00000.txt`` upwards."""
    done = bundle.files.count()
    BundleFile.objects.bulk_create(
        BundleFile(bundle=bundle, path=f"data/d{i % 2}/file-{done + i:05d}.txt",
                   kind="data", size=blob.size, sha256=blob.sha256, blob=blob)
        for i, blob in enumerate(_blobs(f"{bundle.pk}-{done}", count))
    )  # fmt: skip


def add_deposit_blobs(deposit: Deposit, count: int) -> None:
    done = deposit.items.count()
    DepositBlob.objects.bulk_create(
        DepositBlob(deposit=deposit, blob=blob, role=DepositBlob.Role.FILE,
                    path=f"extra/blob-{done + i:05d}", position=1000 + done + i)
        for i, blob in enumerate(_blobs(f"deposit-{deposit.pk}-{done}", count))
    )  # fmt: skip


def _queries(client: Any, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
        if response.streaming:
            b"".join(response.streaming_content)
    assert response.status_code == 200
    return len(queries)


def query_counts(client: Any, url: str, grow: Callable[[int], object]) -> list[int]:
    """The queries of a GET of ``url`` after ``grow(60)``, then after ``grow(120)``
    more (a first GET warms the per-process caches: content types, sessions)."""
    grow(60)
    client.get(url)
    counts = [_queries(client, url)]
    grow(120)
    return [*counts, _queries(client, url)]
