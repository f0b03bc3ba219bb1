"""The run page reads as a page, not as Python: the scenario, the isolation the
sandbox had, the captured environment and drift values are shown as nested
definition lists and lists, never as a ``{'…': …}`` dict or ``['…']`` list."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from benchmarks.models import Campaign, LabPool, Run
from tests.benchmarks.runner.support import runs_of, start

pytestmark = pytest.mark.django_db

ISOLATION = {
    "method": "bwrap",
    "network": "none",
    "uid_dropped": True,
    "pid_namespace": False,
    "cgroup": None,
    "limits": {
        "memory_bytes": 2147483648,
        "enforced_by": {"cpu": ["rlimit_cpu", "cgroup"], "memory": ["cgroup"]},
    },
    "notes": [],
}
ENVIRONMENT = {
    "kernel": {"release": "6.1.0-18-amd64", "cmdline": "quiet"},
    "nics": [{"name": "eth0", "driver": "mlx5_core"}, {"name": "eth1"}],
    "gpus": [],
}
DRIFT = [
    {
        "field": "nics",
        "declared": ["mlx5_core"],
        "captured": {"eth0": "ixgbe"},
        "severity": "minor",
        "message": "NIC driver differs",
    }
]


@pytest.fixture
def run(bundle: Any, pool: LabPool, labops: Any) -> Run:
    campaign: Campaign = start(bundle, pool, labops)
    run = runs_of(campaign)[0]
    Run.objects.filter(pk=run.pk).update(
        scenario={**run.scenario, "params": {"queue_depth": 32, "block": "4k"}},
        isolation=ISOLATION,
        environment=ENVIRONMENT,
        drift=DRIFT,
    )
    return run


def _text(page: Any) -> str:
    """The page as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.content.decode()))


def test_run_page_shows_no_python_literal(
    run: Run, client_for: Any, buyer: Any
) -> None:
    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    assert page.status_code == 200
    text = _text(page)
    assert "{'" not in text
    assert "['" not in text
    assert "None" not in text
    assert "True" not in text
    assert "False" not in text


def test_nested_values_become_definition_lists(
    run: Run, client_for: Any, buyer: Any
) -> None:
    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    body = page.content.decode()
    assert "<dt>queue_depth</dt><dd>32</dd>" in body  # the scenario's own object
    # the captured environment: an array of objects, each a definition list
    assert "<dt>driver</dt><dd>mlx5_core</dd>" in body
    assert "<dt>release</dt><dd>6.1.0-18-amd64</dd>" in body
    # drift values that are arrays or objects
    assert "<li>mlx5_core</li>" in body
    assert "<dt>eth0</dt><dd>ixgbe</dd>" in body


def test_text_that_looks_like_markup_stays_escaped(
    run: Run, client_for: Any, buyer: Any
) -> None:
    Run.objects.filter(pk=run.pk).update(
        isolation={"notes": ["<script>alert(1)</script>"], "method": "{'x': 1}"}
    )

    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    body = page.content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_isolation_reads_as_labelled_facts_with_limits_in_binary_units(
    run: Run, client_for: Any, buyer: Any
) -> None:
    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    body = page.content.decode()
    assert "<dt>Sandbox</dt><dd>bwrap</dd>" in body
    assert "<dt>Privileges dropped</dt><dd>yes</dd>" in body
    assert "<dt>Own process namespace</dt><dd>no</dd>" in body
    assert "<dt>Control groups</dt><dd>—</dd>" in body
    assert (
        '<dt>Memory limit</dt><dd><span class="fig" title="2,147,483,648 bytes">'
        "2 GiB (enforced by cgroup)</span></dd>"
    ) in body
    assert "memory_bytes" not in body
    assert "2147483648" not in body


def test_a_dropped_page_cache_is_said_once(
    run: Run, client_for: Any, buyer: Any
) -> None:
    Run.objects.filter(pk=run.pk).update(
        cache_dropped=True, cache_note="Page cache dropped before the run."
    )

    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    assert _text(page).lower().count("dropped before the run") == 1


def test_the_run_page_charts_the_telemetry_beside_the_harness_s_progress(
    run: Run, client_for: Any, buyer: Any
) -> None:
    import hashlib
    import json

    from artifacts.storage.blobs import blob_record, blob_write
    from benchmarks.lib.lab.telemetry_blob import encode
    from benchmarks.models import RunArtefact
    from tests.benchmarks.lab.test_telemetry_blob import recording

    url = reverse("benchmarks:run_detail", args=[run.public_id])
    before = client_for(buyer).get(url).content.decode()
    sampled = recording()
    sampled.series.append(
        type(sampled.series[0])(
            "harness", "progress", {"progress_permille": [0, 300, 800, 1000]}
        )
    )
    data = encode(sampled)
    blob = blob_record(blob_write(data, hashlib.sha256(data).hexdigest(), len(data)))
    RunArtefact.objects.create(
        run=run, attempt=run.attempt, name="telemetry.bin", blob=blob
    )

    page = client_for(buyer).get(url).content.decode()

    assert 'data-testid="telemetry-link"' not in before
    assert "No telemetry" in before
    figure = json.loads(
        re.search(
            r'<script id="chart-data-telemetry-disk" type="application/json">'
            r"(.*?)</script>",
            page,
            re.S,
        ).group(1)
    )
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["loop0 read IOPS", "harness progress (%)"]
    assert figure["data"][0]["x"] == [0, 1.0, 2.0, 2.417]
    assert figure["data"][0]["y"] == [0.0, 512.0, 498.0, round(120 / 0.417, 3)]
    assert figure["data"][1]["y"] == [0, 30, 80, 100]
    assert figure["data"][1]["yaxis"] == "y2"
    assert 'data-testid="telemetry-link"' in page
    assert 'id="chart-data-telemetry-pressure"' in page
