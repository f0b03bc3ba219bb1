"""A warm-up run through the agent with the example harness (in the sandbox
where the host has one): the page cache dropped where the host allows it,
``model_load_s`` and ``warmup_s`` measured and the ``cache_hit_rate`` series
recorded in ``scenario.json``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from benchmarks.lib.lab.checks import COLD_CACHE_FLOOR_BYTES
from benchmarks.lib.lab.scenario_document import decode
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.agent.test_execute import archive, claimed

SOURCE = Path(__file__).resolve().parents[2] / "examples/acme-flash"


@pytest.mark.slow
def test_a_warmup_run_records_the_load_and_the_hit_rate(
    fake: FakeServer, tmp_path: Path
) -> None:
    files = {
        str(p.relative_to(SOURCE)): p.read_bytes()
        for p in sorted(SOURCE.glob("harness/*")) + sorted(SOURCE.glob("workloads/*"))
    }
    bundle = archive(files)
    scenario = {"name": "warm-up", "kind": "warmup", "cache": "cold",
                "concurrency": 8, "batch_size": 8, "duration_s": 3}  # fmt: skip
    run = claimed(bundle, scenario=scenario, wall_limit_s=120, file_bytes=1 << 30)
    run["run"]["files"] = [
        {"path": p, "kind": "harness", "size": len(b),
         "sha256": hashlib.sha256(b).hexdigest()}
        for p, b in files.items()
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    for name in ("metrics.json", "fio.json", "trace.jsonl", "trace.jsonl.sha256"):
        fake.script(f"runs/7/outputs/{name}", Reply(201, {"path": name}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))
    client = RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)
    work = tmp_path / "work"
    work.mkdir()

    assert execute_run(client, Terms("lab-07@h"), work, 7, 1) == "succeeded"

    result = fake.calls("runs/7/finish")[0].json()["result"]
    assert (result["stop_reason"], result["exit_code"]) == ("exited", 0), result

    (put,) = fake.calls("runs/7/artefacts/scenario.json")
    document = decode(put.body)
    found = {m.name: m.value for m in document.metrics}
    assert 0 < found["model_load_s"] < 60
    assert 0 < found["warmup_s"] <= 3.5
    (hits,) = document.series
    assert hits.name == "warmup_cache_hit_rate"
    assert len(hits.points) >= 5
    page_cache = document.record["page_cache"]
    assert isinstance(page_cache["dropped"], bool)
    before, after = page_cache["before_bytes"], page_cache["after_bytes"]
    assert isinstance(before, int)
    assert isinstance(after, int)
    assert min(before, after) >= 0
    if page_cache["dropped"]:
        # The page cache is the host's: other processes may add a few pages
        # between the drop and the second reading, never the floor's worth.
        assert after <= before + COLD_CACHE_FLOOR_BYTES
