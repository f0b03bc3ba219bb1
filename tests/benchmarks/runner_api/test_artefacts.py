"""Runner artefacts through their own route: only the host holding a running
attempt uploads them; unknown names, blobs that do not decode and oversized
bodies are refused; the telemetry blob is stored and deposited with the outputs,
its metrics join the run's, and ``telemetry.json`` serves it to whoever may see
the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from artifacts.models import DepositBlob
from benchmarks import conf
from benchmarks.lib.lab.telemetry_blob import encode
from benchmarks.models import Campaign, Run, RunArtefact, RunMetric
from benchmarks.selectors.telemetry import run_artefact_digests
from tests.benchmarks.lab.test_telemetry_blob import recording
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import BASE, finish, put_output, started

pytestmark = pytest.mark.django_db

METRICS = json.dumps(
    {"metrics": [{"name": "ttft_ms", "stat": "p99", "value": 41.5, "unit": "ms"}]}
).encode()


@pytest.fixture
def live(agent: APIClient, campaign: Campaign) -> Run:
    run = runs_of(campaign)[0]
    started(agent, run)
    return Run.objects.get(pk=run.pk)


def put_artefact(
    client: APIClient, run: Run, name: str, data: bytes, attempt: int = 1
) -> Any:
    return client.put(
        f"{BASE}runs/{run.pk}/artefacts/{name}?attempt={attempt}",
        data,
        content_type="application/octet-stream",
    )


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_telemetry_blob_is_kept_deposited_and_derived(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    blob = encode(recording())
    first = put_artefact(agent, live, "telemetry.bin", blob)
    again = put_artefact(agent, live, "telemetry.bin", blob)  # a retry
    other = put_artefact(agent, live, "telemetry.bin", encode(recording(), 1))
    put_output(agent, live, "metrics.json", METRICS)

    assert (first.status_code, again.status_code) == (201, 201), first.json()
    assert (other.status_code, other.json()["code"]) == (409, "artefact_exists")
    done = finish(
        agent,
        live,
        outputs={"metrics.json": METRICS},
        artefacts={"telemetry.bin": blob},
    )
    assert done.json() == {"state": "succeeded"}
    live.refresh_from_db()
    artefact = RunArtefact.objects.get(run=live)
    assert artefact.name == "telemetry.bin"
    assert run_artefact_digests(live) == {"telemetry.bin": first.json()["sha256"]}
    assert [o.path for o in live.outputs.all()] == ["metrics.json"]
    assert live.output_deposit is not None
    roles = {(i.role, i.path, i.blob.sha256) for i in live.output_deposit.items.all()}
    assert (
        DepositBlob.Role.ARTEFACT,
        "runner/telemetry.bin",
        artefact.blob.sha256,
    ) in roles
    derived = RunMetric.objects.filter(run=live, method="telemetry")
    assert {(m.name, m.stat, m.scope) for m in derived} >= {
        ("disk_read_iops", "mean", "loop0"),
        ("disk_await_ms", "p99", "loop0"),
        ("io_pressure_full_pct", "mean", "host"),
        ("gpu_util_pct", "mean", "gpu0"),
    }
    assert {m.source_path for m in derived} == {"runner:telemetry.bin"}


@pytest.mark.parametrize(
    ("name", "data", "status", "code"),
    [
        ("telemetry.bin", b"RGTEL\x01garbage", 400, "artefact_invalid"),
        ("telemetry.bin", b"", 400, "artefact_invalid"),
        ("metrics.json", b"{}", 400, "artefact_name"),
        ("telemetry.bin.part", b"x", 400, "artefact_name"),
    ],
)
def test_bad_artefacts_are_refused_and_not_kept(
    live: Run,
    agent: APIClient,
    runner_work_dir: Path,
    name: str,
    data: bytes,
    status: int,
    code: str,
) -> None:
    response = put_artefact(agent, live, name, data)

    assert response.status_code == status, response.content
    assert response.json()["code"] == code
    assert not [p for p in conf.uploads_dir().rglob("*") if p.is_file()
                and p.parent.name == "artefacts"]  # fmt: skip


def test_an_artefact_over_its_limit_is_refused(
    live: Run, agent: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.lib.lab import artefacts

    monkeypatch.setitem(artefacts.RUNNER_ARTEFACTS, "telemetry.bin", 100)
    response = put_artefact(agent, live, "telemetry.bin", encode(recording()))

    assert (response.status_code, response.json()["code"]) == (413, "artefact_size")


def test_only_the_host_running_the_attempt_uploads(
    live: Run, agent: APIClient, other_agent: APIClient
) -> None:
    blob = encode(recording())
    stale = put_artefact(agent, live, "telemetry.bin", blob, attempt=2)
    elsewhere = put_artefact(other_agent, live, "telemetry.bin", blob)
    anonymous = put_artefact(APIClient(), live, "telemetry.bin", blob)

    assert stale.status_code == 409
    assert elsewhere.status_code == 404  # another pool's token
    assert anonymous.status_code == 401


def test_telemetry_json_follows_the_run_s_visibility(
    live: Run,
    agent: APIClient,
    runner_work_dir: Path,
    buyer: Any,
    vendor_a: Any,
    vendor_b: Any,
    outsider: Any,
) -> None:
    blob = encode(recording())
    put_artefact(agent, live, "telemetry.bin", blob)
    put_output(agent, live, "metrics.json", METRICS)
    finish(
        agent,
        live,
        outputs={"metrics.json": METRICS},
        artefacts={"telemetry.bin": blob},
    )
    url = reverse("run-telemetry", args=[live.public_id])

    body = api(buyer).get(url).json()
    assert body["schema"] == "reprogate.telemetry/v1"
    assert body["run"] == str(live.public_id)
    assert body["series"][0]["fields"]["reads_completed"] == [0, 512, 498, 120]
    assert api(vendor_a).get(url).status_code == 200
    assert api(vendor_b).get(url).status_code == 404
    assert api(outsider).get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)


def test_the_derived_metrics_reach_the_results_document_gates_read(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    from gates.selectors.results import results_document

    blob = encode(recording())
    put_artefact(agent, live, "telemetry.bin", blob)
    put_output(agent, live, "metrics.json", METRICS)
    finish(
        agent,
        live,
        outputs={"metrics.json": METRICS},
        artefacts={"telemetry.bin": blob},
    )

    document = results_document(campaign=live.campaign)
    (run,) = [r for r in document["runs"] if r["id"] == str(live.public_id)]
    rows = {(m["name"], m["stat"]): m for m in run["metrics"]}
    assert rows[("disk_read_iops", "mean")]["source"]["file"] == "runner:telemetry.bin"
    assert "interval means" in rows[("disk_await_ms", "p99")]["source"]["key"]
    assert ("io_pressure_full_pct", "mean") in rows
    assert ("ttft_ms", "p99") in rows


def test_a_run_without_telemetry_answers_404(campaign: Campaign, buyer: Any) -> None:
    run = runs_of(campaign)[0]
    url = reverse("run-telemetry", args=[run.public_id])

    assert api(buyer).get(url).status_code == 404
