"""The comparison matrix page and its CSV and JSON exports (completeness from
bundles in detail: ``test_comparison_completeness.py``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation
from artifacts.selectors.bundles import bundle_latest_accepted_by_organisation
from procurement.models import Bid, Rfp
from tests.procurement.factories_bundles import (
    PARTIAL_FILES,
    accepted_bundle,
    comparison_rfp,
)
from tests.procurement.factories_evaluation import (
    CostModelInputFactory,
    CriterionFactory,
    RequiredArtifactFactory,
    RequiredMetricFactory,
    evaluator_in,
    opened_rfp,
    score_all,
    vendor_orgs,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any, tmp_path: Path
) -> Rfp:
    return comparison_rfp(buyer_org, vendor_a_org, vendor_b_org, tmp_path)


def _get(client: Any, rfp: Rfp, suffix: str = "comparison/") -> Any:
    return client.get(f"/rfps/{rfp.public_id}/{suffix}")


def _csv(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_page_ranks_vendors_with_completeness_claims_and_tco(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})

    html = _get(client_for(buyer), rfp).content.decode()

    assert html.index("comparison-row-acme-flash") < html.index(
        "comparison-row-bolt-storage"
    )
    assert "80.00" in html  # 8 / 10 x (60 + 40)
    assert "1/3 mandatory" in html
    assert 'p99 <span class="fig" title="180.0 ms">180 ms</span>' in html
    assert '<span class="fig" title="384995.00 EUR">385,000 EUR</span>' in html
    assert 'title="1.0173 EUR">1.017 EUR</span>' in html  # per million tokens
    assert "no cost inputs" in html  # bolt-storage
    assert "formula version 1 (defaults)" in html


def test_page_hides_scores_from_an_evaluator_who_has_not_submitted(
    client_for: Any, evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), {"acme-flash": 9, "bolt-storage": 4})

    html = _get(client_for(evaluator), rfp).content.decode()

    assert 'data-testid="scores-hidden"' in html
    assert "90.00" not in html
    assert "Acme Flash" in html  # the rest of the matrix is shown


def test_page_reveals_no_bidder_while_sealed(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    html = _get(client_for(buyer), rfp).content.decode()

    assert 'data-testid="comparison-sealed"' in html
    assert "Acme Flash" not in html
    assert "Bolt Storage" not in html


@pytest.mark.parametrize("suffix", ["comparison/", "comparison.csv", "comparison.json"])
def test_vendors_get_404_and_auditors_403(
    client_for: Any, vendor_a: Any, auditor: Any, rfp: Rfp, suffix: str
) -> None:
    assert _get(client_for(vendor_a), rfp, suffix).status_code == 404
    assert _get(client_for(auditor), rfp, suffix).status_code == 403


@pytest.mark.parametrize("suffix", ["comparison.csv", "comparison.json"])
def test_exports_are_404_while_sealed(
    client_for: Any, buyer: Any, rfp: Rfp, suffix: str
) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    assert _get(client_for(buyer), rfp, suffix).status_code == 404


def test_csv_export_is_an_attachment_with_a_header_row(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})

    response = _get(client_for(buyer), rfp, "comparison.csv")

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="{rfp.reference}-comparison.csv"'
    )
    acme, bolt = _csv(response)
    assert (acme["vendor_slug"], acme["rank"], acme["weighted_total_of_100"]) == (
        "acme-flash",
        "1",
        "80.00",
    )
    assert acme["Reproducibility (mean of 10, weight 60)"] == "8.00"
    assert acme["claimed ttft_ms"] == "p99 180.0 ms (cold-c32)"
    assert (acme["tco_cost_per_year"], acme["tco_cost_per_million_tokens"]) == (
        "384995.00",
        "1.0173",
    )
    assert (bolt["rank"], bolt["tco_cost_per_year"]) == ("2", "")


def test_csv_export_omits_scores_the_caller_may_not_see(
    client_for: Any, evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 9)

    rows = _csv(_get(client_for(evaluator), rfp, "comparison.csv"))

    assert "rank" not in rows[0]
    assert "weighted_total_of_100" not in rows[0]


def test_csv_export_defuses_spreadsheet_formulas(
    client_for: Any, buyer: Any, rfp: Rfp, vendor_b_org: Organisation
) -> None:
    Organisation.objects.filter(pk=vendor_b_org.pk).update(name="=HYPERLINK(1)")

    rows = _csv(_get(client_for(buyer), rfp, "comparison.csv"))

    assert sorted(r["vendor"] for r in rows) == ["'=HYPERLINK(1)", "Acme Flash"]


def test_csv_export_defuses_formulas_in_the_header_too(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    CriterionFactory.create(rfp=rfp, name="=SUM(A1)", weight=0, position=9)
    score_all(rfp, evaluator, 5)

    response = _get(client_for(buyer), rfp, "comparison.csv")

    header = next(csv.reader(io.StringIO(response.content.decode())))
    assert "'=SUM(A1) (mean of 10, weight 0)" in header


def test_json_export_carries_units(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})

    response = _get(client_for(buyer), rfp, "comparison.json")

    assert (
        response["Content-Disposition"]
        == f'attachment; filename="{rfp.reference}-comparison.json"'
    )
    acme = json.loads(response.content)["vendors"][0]
    assert acme["scores"]["weighted_total"] == {
        "value": "80.00",
        "unit": "points of 100",
    }
    assert acme["scores"]["criteria"][0]["mean"] == {
        "value": "8.00",
        "unit": "points of 10",
    }
    assert acme["tco"]["cost_per_million_tokens"] == {
        "value": "1.0173",
        "unit": "EUR/Mtok",
    }
    completeness = acme["completeness"]
    assert completeness["status"] == "accepted_bundle"
    assert completeness["mandatory_artifacts"] == {
        "total": 3,
        "present": 1,
        "missing": [
            {"kind": "trace", "title": "The trace"},
            {"kind": "report", "title": "The report"},
        ],
    }
    assert completeness["environment"]["named"] == 2
    assert completeness["claims"] == {
        "in_harness": 1,
        "total": 1,
        "unknown_scenarios": [],
    }
    assert completeness["bundle"]["url"].startswith("/artifacts/bundles/")
    assert acme["claimed_metrics"]["ttft_ms"][0]["value"] == 180.0


def test_withdrawn_bids_are_left_out(
    client_for: Any, buyer: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    Bid.objects.filter(vendor_organisation=vendor_b_org).update(status="withdrawn")

    rows = _csv(_get(client_for(buyer), rfp, "comparison.csv"))

    assert [r["vendor_slug"] for r in rows] == ["acme-flash"]


def _rfp_with_vendors(
    buyer_org: Organisation, evaluators: list[Any], count: int, directory: Path
) -> Rfp:
    """Every vendor bids with cost inputs and two accepted bundles (the newest
    counts); both evaluators score everything."""
    vendors = (
        vendor_orgs(count) if count == 2 else vendor_orgs(count)[2:] + vendor_orgs(2)
    )
    rfp = opened_rfp(buyer_org, vendors[:count], reference=f"RFP-Q-{count:03d}")
    RequiredMetricFactory.create(rfp=rfp, name="ttft_ms")
    RequiredArtifactFactory.create(rfp=rfp, kind="trace")
    for bid in rfp.bids.select_related("vendor_organisation"):
        CostModelInputFactory.create(bid=bid)
        accepted_bundle(rfp, bid.vendor_organisation, directory, files=PARTIAL_FILES)
        accepted_bundle(rfp, bid.vendor_organisation, directory)
    for evaluator in evaluators:
        score_all(rfp, evaluator, 6)
    return rfp


@pytest.mark.parametrize("suffix", ["comparison/", "comparison.csv", "comparison.json"])
def test_query_count_does_not_grow_with_vendors_and_scores(
    client_for: Any,
    buyer: Any,
    buyer_org: Organisation,
    django_assert_num_queries: Any,
    suffix: str,
    tmp_path: Path,
) -> None:
    evaluators = [evaluator_in(buyer_org, f"ev-{i}") for i in range(2)]
    small = _rfp_with_vendors(buyer_org, evaluators, 2, tmp_path)
    large = _rfp_with_vendors(buyer_org, evaluators, 20, tmp_path)
    client = client_for(buyer)
    _get(client, small, suffix)  # warm the session and content-type caches
    with CaptureQueriesContext(connection) as two_vendors:
        assert _get(client, small, suffix).status_code == 200

    with django_assert_num_queries(len(two_vendors)):
        response = _get(client, large, suffix)
    assert response.status_code == 200
    body, newest = response.content.decode(), bundle_latest_accepted_by_organisation
    shown = {str(b.public_id) for b in newest(large).values()}
    hidden = {str(b.public_id) for b in large.bundles.all()} - shown
    assert (len(shown), len(hidden)) == (20, 20)
    assert all(i in body for i in shown)
    assert not any(i in body for i in hidden)
