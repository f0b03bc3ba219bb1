"""The agent samples telemetry around the harness and uploads the blob through
the runner-artefact route, never among the harness's outputs."""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
import time
from pathlib import Path

from benchmarks.lib.lab.blocklat import BlockLatencyTracer
from benchmarks.lib.lab.telemetry_blob import decode
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed
from tests.benchmarks.lab.test_telemetry_sampler import _diskstats as diskstats
from tests.benchmarks.lab.test_telemetry_sampler import loop_device  # noqa: F401

SLOW_HARNESS = b"""#!/bin/sh
echo "::progress:: 0.5"
sleep 0.6
echo "::progress:: 1"
echo done > "$REPROGATE_OUTPUT_DIR/out.txt"
ls -a .. > "$REPROGATE_OUTPUT_DIR/seen.txt"
"""


def test_the_telemetry_blob_goes_up_as_a_runner_artefact(
    fake: FakeServer, tmp_path: Path
) -> None:
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)
    bundle = archive({"harness/run.sh": SLOW_HARNESS})
    run = claimed(
        bundle,
        policy={"schema": "reprogate.lab-policy/v1", "telemetry": {"interval_ms": 100}},
    )
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(SLOW_HARNESS),
         "sha256": hashlib.sha256(SLOW_HARNESS).hexdigest()}
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    for name in ("out.txt", "seen.txt"):
        fake.script(f"runs/7/outputs/{name}", Reply(201, {"path": name}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))

    assert execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1) == "succeeded"

    (put,) = fake.calls("runs/7/artefacts/telemetry.bin")
    assert put.method == "PUT"
    assert put.path.endswith("?attempt=1")
    recording = decode(put.body)
    assert recording.interval_ms == 100
    assert recording.t_ms[0] == 0
    assert len(recording.t_ms) >= 5
    sources = {s.source for s in recording.series}
    assert {"pressure", "harness"} <= sources
    (progress,) = [s for s in recording.series if s.source == "harness"]
    assert max(progress.fields["progress_permille"]) == 1000  # the final sample
    outputs = [c.path for c in fake.seen if "/outputs/" in c.path]
    assert not any("telemetry" in p for p in outputs)
    (seen,) = fake.calls("runs/7/outputs/seen.txt")
    assert b"telemetry" not in seen.body  # out of the harness's sight
    assert fake.calls("runs/7/finish")[0].json()["warnings"] == []


WAITING_HARNESS = b"""#!/bin/sh
echo "::progress:: 0.1"
touch "$REPROGATE_OUTPUT_DIR/started"
sleep 4
echo "::progress:: 1"
"""


def test_the_run_s_device_counts_add_up_to_its_diskstats_change(
    fake: FakeServer,
    tmp_path: Path,
    loop_device: str,  # noqa: F811
) -> None:
    """A loop device named for the run: its samples sum to the change of its
    ``/proc/diskstats`` line over the run (I/O done beside the harness)."""
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)
    bundle = archive({"harness/run.sh": WAITING_HARNESS})
    run = claimed(
        bundle,
        telemetry_devices=[loop_device],
        policy={
            "schema": "reprogate.lab-policy/v1",
            "telemetry": {"interval_ms": 500, "block_latency_histogram": True},
        },
    )
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(WAITING_HARNESS),
         "sha256": hashlib.sha256(WAITING_HARNESS).hexdigest()}
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    fake.script("runs/7/outputs/started", Reply(201, {"path": "started"}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))
    name = Path(loop_device).name

    def io_while_running() -> None:
        while not list(tmp_path.rglob("started")):  # the harness runs: sampled
            time.sleep(0.05)
        fd = os.open(loop_device, os.O_RDWR | os.O_DIRECT)
        buffer = mmap.mmap(-1, 4096)
        try:
            for i in range(512):
                os.pwrite(fd, buffer, i * 4096)
            for i in range(512):
                os.preadv(fd, [buffer], i * 4096)
        finally:
            os.close(fd)

    worker = threading.Thread(target=io_while_running)
    before = diskstats(name)
    worker.start()
    assert execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1) == "succeeded"
    worker.join()
    after = diskstats(name)

    (put,) = fake.calls("runs/7/artefacts/telemetry.bin")
    recording = decode(put.body)
    assert name in recording.devices
    (series,) = [s for s in recording.series if s.device == name]
    for field, key in (("reads_completed", "reads"), ("writes_completed", "writes")):
        change = after[key] - before[key]
        assert change >= 512
        assert abs(sum(series.fields[field]) - change) <= change / 100
    why = BlockLatencyTracer([name]).why_not()
    if why:  # asked for, not possible here: said so
        assert f"block latency histogram unavailable ({why})" in recording.notes
    else:  # one bpftrace child for the run: every I/O of the device counted
        (histogram,) = recording.histograms
        counted = sum(count for _, _, count in histogram["buckets"])
        assert histogram["device"] == name
        assert abs(counted - 1024) <= 1024 / 100
