"""The demo on a real device, as ``scripts/run`` sets it up where the host can:
pool ``local``'s policy names the loop-backed ``reprogate.dev/block=scratch0``
(``benchmarks.lib.lab.scratch``: the same attach, CDI spec and policy service),
and RFP-DEMO-2's lab validation runs through the lab agent's run path (in
process). Each run's harness does its SSD-tier I/O on the device with O_DIRECT
and says so; its ``telemetry.json`` counts for that device equal the device's
own ``/proc/diskstats`` change over the run within 1 %; and the derived
metrics (``method: telemetry``) are in the gate evaluation's results document.
One repetition per scenario (4 runs) keeps it short: the verdicts then read
"more runs needed", which is not what this test is about."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from benchmarks.lib.lab.scratch import (
    SCRATCH_DEVICE,
    cdi_dir,
    scratch_attach,
    scratch_detach,
)
from benchmarks.models import Run
from benchmarks.services.embedded_agent import embedded_agent_policy
from gates.models import Evaluation
from portal import demo
from portal.lab_loopback import LoopbackAgent
from tests.benchmarks.lab.loops import needs_loop
from tests.benchmarks.runner.support import runner_work_dir  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.slow, needs_loop]

READS, WRITES = 3, 7  # reads and writes completed: /proc/diskstats fields 4 and 8


def diskstats(name: str) -> tuple[int, int]:
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        if fields[2] == name:
            return int(fields[READS]), int(fields[WRITES])
    raise AssertionError(f"{name} is not in /proc/diskstats")


@pytest.fixture
def device(
    settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runner_work_dir: Path,  # noqa: F811
) -> Iterator[str]:
    """RFP-DEMO-2 seeded, the scratch device attached and in pool local's policy."""
    settings.VAR_DIR = tmp_path / "var"
    demo.demo_seed()
    scratch = scratch_attach(settings.VAR_DIR)
    assert scratch.device is not None, scratch.reason
    try:
        monkeypatch.setenv("REPROGATE_CDI_DIRS", str(cdi_dir(settings.VAR_DIR)))
        embedded_agent_policy(scratch_device=SCRATCH_DEVICE)
        yield Path(scratch.device).name
    finally:
        scratch_detach(settings.VAR_DIR)


def test_the_demo_s_runs_do_their_io_on_the_device_and_telemetry_counts_it(
    device: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    changes: dict[int, tuple[int, int]] = {}
    execute = LoopbackAgent.execute

    def measured(agent: LoopbackAgent, run: Run) -> str:
        before = diskstats(device)
        outcome = execute(agent, run)
        after = diskstats(device)
        changes[run.pk] = (after[0] - before[0], after[1] - before[1])
        return outcome

    monkeypatch.setattr(LoopbackAgent, "execute", measured)
    monkeypatch.setattr(demo, "LAB_REPETITIONS", 1)

    demo.demo_seed(lab_validation=True)

    runs = list(Run.objects.filter(pk__in=changes))
    assert len(runs) == 4
    client = Client()
    client.force_login(get_user_model().objects.get(username="buyer"))
    for run in runs:
        assert run.state == Run.State.SUCCEEDED, run.reason
        assert f"ssd tier: device {SCRATCH_DEVICE} at /dev/{device}" in run.log_tail
        telemetry = client.get(reverse("run-telemetry", args=[run.public_id])).json()
        [series] = [
            s
            for s in telemetry["series"]
            if s["source"] == "diskstats" and s["device"] == device
        ]
        reads, writes = changes[run.pk]
        assert reads > 1000  # fio's 4k reads, then the tier's
        assert writes > 0
        assert sum(series["fields"]["reads_completed"]) == pytest.approx(
            reads, rel=0.01
        )
        assert sum(series["fields"]["writes_completed"]) == pytest.approx(
            writes, rel=0.01
        )

    for evaluation in Evaluation.objects.filter(rfp__reference=demo.LAB_RFP):
        results = json.loads(evaluation.results_document)
        assert len(results["runs"]) == 2
        for row in results["runs"]:
            metrics = {(m["name"], m["stat"]): m for m in row["metrics"]}
            iops = metrics[("disk_read_iops", "mean")]
            assert iops["value"] > 0
            assert iops["source"]["file"] == "runner:telemetry.bin"
            assert ("disk_write_iops", "mean") in metrics
            assert (
                "interval means" in metrics[("disk_await_ms", "p99")]["source"]["key"]
            )
