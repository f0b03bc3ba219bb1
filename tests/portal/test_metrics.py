"""GET /metrics: the installation's figures in Prometheus' text format, open to
the allowed networks or the bearer token only."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from accounts.models import Organisation
from accounts.selectors import clock
from artifacts.models import Blob, Bundle, FixityFinding, FixityRun
from benchmarks.models import Campaign, LabHost, LabPool, Run
from tests.procurement.factories import RfpFactory

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-metrics-token-for-the-tests"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Each sample by its name and labels, read by prometheus_client's parser."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def _blob(n: int, size: int) -> Blob:
    digest = hashlib.sha256(str(n).encode()).hexdigest()
    return Blob.objects.create(sha256=digest, size=size, storage_key=f"blobs/{digest}")


def _bundle(rfp: Any, vendor: Any, status: str, size: int, n: int) -> Bundle:
    accepted = status == Bundle.Status.ACCEPTED
    return Bundle.objects.create(
        rfp=rfp,
        organisation=vendor.memberships.get().organisation,
        uploaded_by=vendor,
        status=status,
        sha256=hashlib.sha256(f"bundle-{n}".encode()).hexdigest(),
        size=size,
        archive_blob=_blob(n, size) if accepted else None,
    )


def _host(pool: LabPool, name: str, silent_s: float, stopped: bool = False) -> None:
    now = clock.now()
    beat = now - timedelta(seconds=silent_s)
    LabHost.objects.create(
        pool=pool,
        worker_name=name,
        hostname=name,
        registered_at=beat - timedelta(hours=1),
        last_heartbeat_at=beat,
        stopped_at=now if stopped else None,
    )


def _runs(campaign: Campaign, states: list[str]) -> None:
    for position, state in enumerate(states, start=1):
        Run.objects.create(
            campaign=campaign,
            position=position,
            scenario_name="cold-c1",
            repetition=position,
            wall_limit_s=60,
            state=state,
        )


@pytest.fixture
def seeded(
    buyer_org: Organisation, vendor_a: Any, vendor_b: Any, labops: Any
) -> dict[str, Any]:
    """Two pools (runs in several states, hosts online, lost and offline),
    accepted and rejected bundles, two fixity runs (the older with findings)."""
    lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
    gpu = LabPool.objects.create(name="gpu-a", lab_organisation=lab)
    cpu = LabPool.objects.create(name="cpu-b", lab_organisation=lab)
    LabPool.objects.create(name="empty-c", lab_organisation=lab)
    rfp = RfpFactory.create(buyer_organisation=buyer_org, published=True)
    bundle = _bundle(rfp, vendor_a, Bundle.Status.ACCEPTED, 1_000_000, 1)
    _bundle(rfp, vendor_b, Bundle.Status.ACCEPTED, 234_567, 2)
    _bundle(rfp, vendor_b, Bundle.Status.REJECTED, 9_999_999, 3)
    for pool, states in (
        (gpu, ["queued", "queued", "queued", "running", "succeeded"]),
        (cpu, ["queued", "failed"]),
    ):
        campaign = Campaign.objects.create(
            rfp=rfp, bundle=bundle, pool=pool, started_by=labops, repetitions=1
        )
        _runs(campaign, states)
    _host(gpu, "a1@lab-1", silent_s=5)
    _host(gpu, "a2@lab-2", silent_s=3600)  # lost
    _host(gpu, "a3@lab-3", silent_s=30, stopped=True)  # offline
    _host(cpu, "b1@lab-4", silent_s=1)
    now = clock.now()
    old = FixityRun.objects.create(
        trigger="schedule", started_at=now - timedelta(days=1), finished_at=now
    )
    FixityFinding.objects.create(
        run=old, kind=FixityFinding.Kind.BLOB_MISSING, subject="x", detail="gone"
    )
    latest = FixityRun.objects.create(
        trigger="schedule",
        started_at=now - timedelta(minutes=5),
        finished_at=now - timedelta(minutes=4),
        findings_count=3,
    )
    for kind in ("blob.altered", "blob.extra", "log.gap"):
        FixityFinding.objects.create(run=latest, kind=kind, subject="s", detail="d")
    return {"latest": latest}


def test_the_figures_of_a_seeded_installation(
    client: Client, seeded: dict[str, Any]
) -> None:
    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    found = samples(response.content.decode())
    assert found[("reprogate_up", ())] == 1
    runs = {k: v for k, v in found.items() if k[0] == "reprogate_runs"}
    assert runs[("reprogate_runs", (("pool", "gpu-a"), ("state", "queued")))] == 3
    assert runs[("reprogate_runs", (("pool", "gpu-a"), ("state", "running")))] == 1
    assert runs[("reprogate_runs", (("pool", "cpu-b"), ("state", "failed")))] == 1
    assert runs[("reprogate_runs", (("pool", "empty-c"), ("state", "queued")))] == 0
    assert len(runs) == 3 * len(Run.State.values)  # every state of every pool
    assert found[("reprogate_queue_depth", (("pool", "gpu-a"),))] == 3
    assert found[("reprogate_queue_depth", (("pool", "cpu-b"),))] == 1
    assert found[("reprogate_queue_depth", (("pool", "empty-c"),))] == 0
    hosts = {
        (dict(k[1])["pool"], dict(k[1])["status"]): v
        for k, v in found.items()
        if k[0] == "reprogate_hosts"
    }
    assert hosts[("gpu-a", "online")] == 1
    assert hosts[("gpu-a", "lost")] == 1
    assert hosts[("gpu-a", "offline")] == 1
    assert hosts[("cpu-b", "online")] == 1
    assert hosts[("empty-c", "online")] == 0
    assert found[("reprogate_ingest_bytes_total", ())] == 1_234_567  # not rejected
    assert found[("reprogate_bundles", (("status", "rejected"),))] == 1


def test_fixity_figures_are_the_latest_runs(
    client: Client, seeded: dict[str, Any]
) -> None:
    found = samples(client.get("/metrics").content.decode())

    findings = {
        dict(k[1])["source"]: v
        for k, v in found.items()
        if k[0] == "reprogate_fixity_findings"
    }
    assert findings == {"blob": 2, "row": 0, "log": 1}
    finished = seeded["latest"].finished_at.timestamp()
    assert found[("reprogate_fixity_last_run_timestamp_seconds", ())] == finished


def test_an_empty_installation_has_zero_figures_and_no_fixity(client: Client) -> None:
    found = samples(client.get("/metrics").content.decode())

    assert found[("reprogate_up", ())] == 1
    assert found[("reprogate_ingest_bytes_total", ())] == 0
    assert not [k for k in found if k[0].startswith("reprogate_fixity")]
    assert not [k for k in found if k[0] == "reprogate_runs"]


def test_the_figures_take_a_few_reads_whatever_the_rows(
    client: Client, seeded: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    with (
        CaptureQueriesContext(connection) as queries,
        django_assert_max_num_queries(6),
    ):
        assert client.get("/metrics").status_code == 200

    statements = [q["sql"].lstrip().split()[0].upper() for q in queries]
    assert set(statements) == {"SELECT"}  # reads never write


def test_anyone_else_gets_404(client: Client, seeded: dict[str, Any]) -> None:
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9")

    assert response.status_code == 404
    assert b"reprogate" not in response.content


def test_allowed_networks_come_from_the_setting(client: Client, settings: Any) -> None:
    settings.REPROGATE_METRICS_ALLOWED = ["10.1.0.0/16"]

    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 404
    assert client.get("/metrics").status_code == 404  # loopback no longer listed


@pytest.mark.parametrize(
    "header",
    ["HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"],
)
def test_a_proxy_on_loopback_does_not_open_it_to_its_clients(
    client: Client, header: str
) -> None:
    """An nginx on this machine is REMOTE_ADDR 127.0.0.1 for every visitor."""
    response = client.get("/metrics", **{header: "203.0.113.9"})  # type: ignore[arg-type]

    assert response.status_code == 404


@pytest.mark.parametrize("remote", ["::1", "127.0.0.1"])
def test_loopback_is_allowed_by_default(client: Client, remote: str) -> None:
    assert client.get("/metrics", REMOTE_ADDR=remote).status_code == 200


@pytest.mark.parametrize("remote", ["", "unknown", "127.0.0.1.evil", "::ffff:zz"])
def test_a_malformed_client_address_is_not_allowed(client: Client, remote: str) -> None:
    assert client.get("/metrics", REMOTE_ADDR=remote).status_code == 404


def test_behind_a_trusted_proxy_the_client_address_counts(
    client: Client, settings: Any
) -> None:
    settings.REPROGATE_TRUSTED_PROXIES = ["172.18.0.0/16"]
    settings.REPROGATE_METRICS_ALLOWED = ["10.9.0.0/16"]
    proxy = "172.18.0.5"

    ok = client.get("/metrics", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="10.9.0.7")
    refused = client.get(
        "/metrics", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="203.0.113.9"
    )

    assert ok.status_code == 200
    assert refused.status_code == 404


def test_the_token_opens_it_from_anywhere(client: Client, settings: Any) -> None:
    settings.REPROGATE_METRICS_TOKEN = TOKEN

    response = client.get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )

    assert response.status_code == 200
    assert b"reprogate_up 1.0" in response.content


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer ",
        f"Basic {TOKEN}",
        TOKEN,
        "Bearer s3cret-\u00e9\u6f22",  # not ASCII
    ],
)
def test_a_bad_token_is_refused_even_from_an_allowed_address(
    client: Client, settings: Any, authorization: str
) -> None:
    settings.REPROGATE_METRICS_TOKEN = TOKEN

    response = client.get("/metrics", HTTP_AUTHORIZATION=authorization)

    assert response.status_code == 403
    assert b"reprogate" not in response.content


def test_no_token_is_set_so_none_is_accepted(client: Client, settings: Any) -> None:
    settings.REPROGATE_METRICS_TOKEN = ""

    for authorization in ("Bearer ", "Bearer  ", "Bearer x"):
        response = client.get(
            "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=authorization
        )
        assert response.status_code == 403


def test_only_reads_are_answered(client: Client) -> None:
    assert client.post("/metrics").status_code == 405
    assert client.head("/metrics").status_code == 200


def test_a_malformed_allowed_network_stops_start_up_naming_it(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROGATE_")}
    env.update(
        REPROGATE_VAR_DIR=str(tmp_path / "var"),
        REPROGATE_METRICS_ALLOWED="127.0.0.1,10.0.0.0/33",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode != 0
    assert "REPROGATE_METRICS_ALLOWED: '10.0.0.0/33' is not an address" in result.stderr
