"""The comparison's summary shows, beside each vendor's reproduced figure and
its claim, what the buyer's lab measured on the infrastructure in use today
("vs current": the baseline campaign's median for the claim's metric)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from procurement.models import Rfp
from procurement.selectors.reproduced import current_of
from tests.gates.baseline_support import run_baseline
from tests.gates.reproduced_support import (  # noqa: F401 (fixtures)
    reproduce_fixture,
    two_vendors_fixture,
)
from tests.procurement.factories_evaluation import RequiredMetricFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(two_vendors: Rfp) -> Rfp:
    """Acme and Bolt reproduced in the lab; the RFP asks for TTFT p99."""
    RequiredMetricFactory.create(rfp=two_vendors, name="ttft_ms", stats="p99")
    return two_vendors


def _summary(html: str, slug: str) -> str:
    start = html.index(f'data-testid="summary-row-{slug}"')
    return html[start : html.index("</tr>", start)]


def test_summary_shows_vs_current_beside_vs_claimed(
    client_for: Any, buyer: Any, labops: Any, rfp: Rfp, tmp_path: Path
) -> None:
    run_baseline(tmp_path / "b", rfp, buyer, labops,
                 {"cold-c1": [200.0, 190.0, 230.0]})  # fmt: skip

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison/")

    for slug in ("acme-flash", "bolt-storage"):
        row = _summary(html.content.decode(), slug)
        assert "vs claimed" in row
        assert "vs current" in row
        current = row[row.index(f'data-testid="summary-current-{slug}"') :]
        assert "200 ms" in current[: current.index("</span></span>")]


def test_summary_has_no_vs_current_without_a_baseline(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison/")

    assert "vs current" not in html.content.decode()


def test_a_failed_baseline_run_gives_no_figure(
    client_for: Any, buyer: Any, labops: Any, rfp: Rfp, tmp_path: Path
) -> None:
    campaign = run_baseline(tmp_path / "b", rfp, buyer, labops,
                            {"cold-c1": [200.0]})  # fmt: skip
    campaign.runs.update(state="failed")

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison/")

    assert "vs current" not in html.content.decode()


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        ({"metric": "ttft_ms", "stat": "p99", "scenario": "cold-c1"}, 200.0),
        ({"metric": "ttft_ms", "stat": "p99", "scenario": "other"}, None),
        ({"metric": "ttft_ms", "stat": "p99"}, None),
        ({"metric": "tps", "stat": "mean"}, 900.0),  # the only scenario measured
        ({"metric": "tps", "stat": "p99"}, None),
    ],
)
def test_current_of_matches_metric_stat_and_scenario(
    claim: dict[str, Any], expected: float | None
) -> None:
    figures = {
        ("cold-c1", "ttft_ms", "p99"): 200.0,
        ("warm-c1", "ttft_ms", "p99"): 150.0,
        ("warm-c1", "tps", "mean"): 900.0,
    }

    assert current_of(figures, claim) == expected


def test_json_export_carries_the_current_figure(
    client_for: Any, buyer: Any, labops: Any, rfp: Rfp, tmp_path: Path
) -> None:
    run_baseline(tmp_path / "b", rfp, buyer, labops, {"cold-c1": [200.0]})

    body = client_for(buyer).get(f"/rfps/{rfp.public_id}/comparison.json").json()

    for vendor in body["vendors"]:
        ttft = vendor["claimed_metrics"]["ttft_ms"][0]
        assert ttft["current"] == {"value": 200.0, "unit": ttft.get("unit", "")}
