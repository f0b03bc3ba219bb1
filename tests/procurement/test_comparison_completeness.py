"""Completeness in the comparison matrix and its exports: each vendor's newest
accepted bundle (real bundles, ingested) against the RFP's required artifacts."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.models import Rfp
from procurement.selectors.comparison import comparison_for
from procurement.selectors.evidence_sources import evidence_provider
from tests.procurement.factories_bundles import comparison_rfp

pytestmark = pytest.mark.django_db


@pytest.fixture
def rfp(
    buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any, tmp_path: Path
) -> Rfp:
    return comparison_rfp(buyer_org, vendor_a_org, vendor_b_org, tmp_path)


@pytest.fixture
def no_provider() -> Iterator[None]:
    with evidence_provider.swapped(None):
        yield


def _get(client: Any, rfp: Rfp, suffix: str = "comparison/") -> Any:
    return client.get(f"/rfps/{rfp.public_id}/{suffix}")


def _csv(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def _cell(html: str, slug: str) -> str:
    """The completeness cell of one vendor's row."""
    row = html[html.index(f"comparison-row-{slug}") :]
    cell = row[row.index('data-testid="completeness"') :]
    return cell[: cell.index("</td>")]


def test_page_shows_completeness_from_the_newest_accepted_bundle(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    bundle = Bundle.objects.get(rfp=rfp)

    acme = _cell(_get(client_for(buyer), rfp).content.decode(), "acme-flash")

    assert f'href="/artifacts/bundles/{bundle.public_id}/"' in acme
    assert "1/3 mandatory" in acme
    assert '<code title="The trace">trace</code>, ' in acme
    assert "environment 2/6 · claims in harness 1/1" in acme


def test_page_shows_a_vendor_without_an_accepted_bundle_missing_everything(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    bolt = _cell(_get(client_for(buyer), rfp).content.decode(), "bolt-storage")

    assert "no accepted bundle" in bolt
    assert "missing: " in bolt
    assert [k in bolt for k in (">workload<", ">trace<", ">report<")] == [True] * 3
    assert "cost_model" not in bolt  # optional


def test_page_without_an_evidence_provider_shows_no_bundles(
    client_for: Any, buyer: Any, rfp: Rfp, no_provider: None
) -> None:
    html = _get(client_for(buyer), rfp).content.decode()

    assert "no accepted bundle" in _cell(html, "acme-flash")
    assert "/artifacts/bundles/" not in html


def test_page_explains_how_completeness_is_counted(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    html = _get(client_for(buyer), rfp).content.decode()

    assert "The signed bundle each bid names" in html


def test_a_sealed_rfp_asks_the_provider_for_nothing(
    buyer: Any, rfp: Rfp, vendor_a_org: Organisation
) -> None:
    asked: list[Any] = []

    def provider(
        rfp: Rfp, organisation_ids: Any = None, named: Any = None
    ) -> dict[int, Any]:
        asked.append(organisation_ids)
        return {}

    with evidence_provider.swapped(provider):
        Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
        comparison = comparison_for(buyer, Rfp.objects.get(pk=rfp.pk))

    assert asked == []
    assert {r.evidence.has_bundle for r in comparison.rows} == {False}


def test_csv_export_carries_bundle_completeness(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    bundle = Bundle.objects.get(rfp=rfp)

    acme, bolt = _csv(_get(client_for(buyer), rfp, "comparison.csv"))

    assert acme["bundle_status"] == "accepted"
    assert (acme["bundle_id"], acme["bundle_sha256"]) == (
        str(bundle.public_id),
        bundle.sha256,
    )
    assert (acme["mandatory_artifacts_present"], acme["mandatory_artifacts_total"]) == (
        "1",
        "3",
    )
    assert acme["mandatory_artifacts_missing"] == "trace; report"
    assert (acme["environment_fields_named"], acme["claims_in_harness"]) == ("2", "1")
    assert bolt["bundle_status"] == "no accepted bundle"
    assert (bolt["bundle_id"], bolt["environment_fields_named"]) == ("", "")
    assert bolt["mandatory_artifacts_missing"] == "workload; trace; report"


def test_json_export_says_when_a_vendor_has_no_accepted_bundle(
    client_for: Any, buyer: Any, rfp: Rfp
) -> None:
    response = _get(client_for(buyer), rfp, "comparison.json")

    bolt = json.loads(response.content)["vendors"][1]
    assert bolt["vendor"]["slug"] == "bolt-storage"
    assert bolt["completeness"]["status"] == "no_accepted_bundle"
    assert bolt["completeness"]["bundle"] is None
    assert bolt["completeness"]["mandatory_artifacts"]["present"] == 0
