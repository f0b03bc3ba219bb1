"""The run page draws a run's trace spans: the request waterfall (SVG bars, no
script) and the slowest requests with the telemetry intervals they overlap;
a run without spans says so."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from benchmarks.lib.lab.spans import encode_spans
from benchmarks.lib.lab.telemetry_blob import encode
from benchmarks.models import Campaign, Run
from tests.benchmarks.lab.test_spans import request_tree
from tests.benchmarks.lab.test_telemetry_blob import recording
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import finish, put_output
from tests.benchmarks.runner_api.test_artefacts import (
    METRICS,
    live,  # noqa: F401 (fixture)
    put_artefact,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def traced(live: Run, agent: APIClient, runner_work_dir: Path) -> Run:  # noqa: F811
    artefacts = {"spans.jsonl": encode_spans(request_tree()),
                 "telemetry.bin": encode(recording())}  # fmt: skip
    for name, data in artefacts.items():
        assert put_artefact(agent, live, name, data).status_code == 201
    put_output(agent, live, "metrics.json", METRICS)
    finish(agent, live, outputs={"metrics.json": METRICS}, artefacts=artefacts)
    return Run.objects.get(pk=live.pk)


def _text(content: bytes) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", content.decode())).split())


def test_the_waterfall_draws_each_request_and_the_spans_under_it(
    traced: Run, client_for: Any, buyer: Any
) -> None:
    page = client_for(buyer).get(
        reverse("benchmarks:run_detail", args=[traced.public_id])
    )

    body = page.content.decode()
    depths = re.findall(r'data-testid="waterfall-row" data-depth="(\d)"', body)
    assert depths == ["0", "0", "1", "2", "3", "3", "0"]
    assert '<rect class="wf-bar wf-bar-0" x="5.263%"' in body  # 100 of 1900 ms
    assert reverse("run-spans", args=[traced.public_id]) in body
    assert (
        "<script>"
        not in body.split('data-testid="run-spans"')[1].split("</section>")[0]
    )


def test_the_slowest_requests_show_the_io_and_telemetry_behind_them(
    traced: Run, client_for: Any, buyer: Any
) -> None:
    page = client_for(buyer).get(
        reverse("benchmarks:run_detail", args=[traced.public_id])
    )

    body = page.content.decode()
    table = body[body.index('data-testid="slowest-requests"') :]
    rows = table.split('data-testid="slow-request"')[1:]
    assert len(rows) == 3
    first = _text(rows[0].encode())
    assert "1800.000" in first
    assert "3 / 1" in first
    assert "2 reads, 12.0 KB in 500.000 ms on loop0" in first
    assert "loop0 0\u20131000 ms: 512.0 read IOPS, await 0.742 ms, 1 in flight" in first
    assert "loop0 1000\u20132000 ms: 498.0 read IOPS, await 0.747 ms" in first


def test_a_run_without_spans_shows_the_empty_state(
    campaign: Campaign, client_for: Any, buyer: Any
) -> None:
    run = runs_of(campaign)[0]

    page = client_for(buyer).get(reverse("benchmarks:run_detail", args=[run.public_id]))

    body = page.content.decode()
    assert 'data-testid="spans-empty"' in body
    assert 'data-testid="span-waterfall"' not in body
    assert "Trace spans are read when the harness has run." in _text(page.content)


def test_the_drawing_is_kept_for_the_next_view(
    traced: Run, client_for: Any, buyer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = client_for(buyer)
    url = reverse("benchmarks:run_detail", args=[traced.public_id])
    first = client.get(url).content.decode()

    def read_again(run: Run) -> None:
        raise AssertionError("the spans were read again")

    monkeypatch.setattr("benchmarks.views.runs.run_spans", read_again)
    again = client.get(url).content.decode()

    assert again.count('data-testid="waterfall-row"') == 7
    assert again.count('data-testid="slow-interval"') == first.count(
        'data-testid="slow-interval"'
    )
