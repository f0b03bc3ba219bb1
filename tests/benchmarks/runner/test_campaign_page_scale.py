"""The campaign page at scale: its run table a page at a time with the summary
of every run, the same number of queries whatever the number of runs, and the
metric exports streamed with the bytes the whole document gives."""

from __future__ import annotations

import csv
import io
import json
from functools import partial
from typing import Any

import pytest
from django.urls import reverse

from benchmarks.models import Campaign, LabPool, Run
from benchmarks.selectors.exports import (
    CHART_COLUMNS,
    COLUMNS,
    campaign_chart_rows,
    campaign_metric_row_iter,
)
from procurement.selectors.comparison_exports import csv_safe
from tests.benchmarks.runner.scale_support import add_runs, query_counts
from tests.benchmarks.runner.support import runs_of, start

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(bundle: Any, pool: LabPool, labops: Any) -> Campaign:
    return start(bundle, pool, labops)  # two queued runs


@pytest.mark.parametrize(
    "route",
    [
        "benchmarks:campaign_detail",
        "benchmarks:campaign_runs",
        "benchmarks:campaign_charts",
        "benchmarks:campaign_metrics_csv",
        "benchmarks:campaign_metrics_json",
    ],
)
def test_campaign_page_queries_do_not_grow_with_its_runs(
    campaign: Campaign, client_for: Any, labops: Any, route: str
) -> None:
    url = reverse(route, args=[campaign.public_id])

    small, large = query_counts(client_for(labops), url, partial(add_runs, campaign))

    assert large == small


def test_campaign_run_table_shows_the_asked_page_and_polls_it(
    campaign: Campaign, client_for: Any, labops: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("benchmarks.views.campaigns.PAGE_SIZE", 5)
    add_runs(campaign, 10)
    runs = runs_of(campaign)
    url = reverse("benchmarks:campaign_detail", args=[campaign.public_id])

    html = client_for(labops).get(url, {"page": 2}).content.decode()

    shown = [str(r.public_id) for r in runs if str(r.public_id) in html]
    assert shown == [str(r.public_id) for r in runs[5:10]]
    assert "Page 2 of 3 · 12 in all" in html
    polled = reverse("benchmarks:campaign_runs", args=[campaign.public_id])
    assert f'hx-get="{polled}?page=2"' in html
    charts = reverse("benchmarks:campaign_charts", args=[campaign.public_id])
    assert f'hx-get="{charts}"' in html


def test_campaign_summary_counts_every_run_not_only_the_page(
    campaign: Campaign, client_for: Any, labops: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr("benchmarks.views.campaigns.PAGE_SIZE", 5)
    add_runs(campaign, 10)
    url = reverse("benchmarks:campaign_runs", args=[campaign.public_id])

    html = client_for(labops).get(url).content.decode()

    assert html.count('data-testid="run-row"') == 5
    assert "83% · 2 queued · 10 succeeded" in html  # 10 of 12 done
    assert 'data-status="running"' in html


def _expected_csv(campaign: Campaign) -> bytes:
    """The export as it was written whole, before it was streamed."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in campaign_metric_row_iter(campaign):
        writer.writerow([csv_safe(str(row[column])) for column in COLUMNS])
    return buffer.getvalue().encode()


def _expected_json(campaign: Campaign) -> bytes:
    document = {
        "campaign": str(campaign.public_id),
        "rfp": campaign.rfp.reference,
        "vendor": campaign.bundle.organisation.slug,
        "bundle_sha256": campaign.bundle.sha256,
        "pool": campaign.pool.name,
        "metrics": list(campaign_metric_row_iter(campaign)),
    }
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


@pytest.mark.parametrize("runs", [0, 1, 7])
def test_exports_stream_the_bytes_of_the_whole_document(
    campaign: Campaign, client_for: Any, labops: Any, monkeypatch: Any, runs: int
) -> None:
    monkeypatch.setattr("benchmarks.selectors.exports.CHUNK_ROWS", 4)
    add_runs(campaign, runs)
    Run.objects.filter(campaign=campaign, scenario_name="bulk").update(
        scenario_name="kalt-ü"
    )
    client, cid = client_for(labops), campaign.public_id

    csv_response = client.get(reverse("benchmarks:campaign_metrics_csv", args=[cid]))
    json_response = client.get(reverse("benchmarks:campaign_metrics_json", args=[cid]))

    assert csv_response.streaming
    assert json_response.streaming
    assert b"".join(csv_response.streaming_content) == _expected_csv(campaign)
    streamed = b"".join(json_response.streaming_content)
    assert streamed == _expected_json(campaign)
    assert len(json.loads(streamed)["metrics"]) == 3 * runs


def test_the_charts_read_the_export_rows_columns_they_draw(campaign: Campaign) -> None:
    add_runs(campaign, 7)
    whole = list(campaign_metric_row_iter(campaign))
    names = {"m0", "m2"}

    rows = campaign_chart_rows(campaign, names)

    assert len(whole) > 7
    wanted = [{c: row[c] for c in CHART_COLUMNS} for row in whole]
    assert rows == [row for row in wanted if row["name"] in names]
    assert {row["name"] for row in wanted} - names  # some left out


def test_the_charts_drawn_from_their_metrics_alone_are_those_of_every_metric(
    campaign: Campaign,
) -> None:
    """``CHARTED_METRICS`` names every metric a campaign chart reads: the charts
    of the page's rows are those drawn from all the campaign's rows."""
    from benchmarks.lib.charts import CHARTED_METRICS, campaign_charts

    scenarios = [
        {"name": f"{cache}-c{c}", "cache": cache, "concurrency": c, "batch_size": 8}
        for cache in ("cold", "warm")
        for c in (8, 32)
    ]
    row = {"unit": "ms", "scope": ""}
    names = ["ttft_ms", "output_token_throughput_tps", "cache_hit_rate", "itl_ms"]
    names += ["read_clat_us", "gpu_util_pct"]  # what a lab's run reports
    pairs = [(name, stat) for name in names for stat in ("p50", "p90", "p99", "mean")]
    every = [
        {**row, "scenario": s["name"], "name": name, "stat": stat, "value": v + n}
        for n, s in enumerate(scenarios)
        for v, (name, stat) in enumerate(pairs)
    ]
    claims = [{"metric": "ttft_ms", "stat": "p99", "scenario": "warm-c8", "value": 3}]

    drawn = campaign_charts(every, scenarios, claims)
    charted = [r for r in every if r["name"] in CHARTED_METRICS]

    assert len(charted) < len(every)
    assert all(chart.figure for chart in drawn[:4])
    assert campaign_charts(charted, scenarios, claims) == drawn
