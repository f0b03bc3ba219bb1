"""The fidelity matrix on the pages: the comparison (bids grouped by approach,
beside the evaluators' fidelity and transparency scores), the scoring form (each
vendor's summary) and the gate board (a column per vendor)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.lib.fidelity import Declared
from procurement.models import Rfp
from procurement.selectors.fidelity_sources import declared_source
from tests.procurement.factories_evaluation import opened_rfp, score_all

pytestmark = pytest.mark.django_db

REQUIREMENTS = {
    "approaches": ["kv-cache-tiering", "nvme-of-appliance"],
    "fabric": {"transports": ["tcp"]},
}


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
) -> Iterator[Rfp]:
    """Acme declares kv-cache-tiering over tcp; Bolt an appliance over rdma."""
    criteria = (("Workload fidelity", 50), ("Transparency", 30), ("TCO", 20))
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org], criteria=criteria)
    Rfp.objects.filter(pk=rfp.pk).update(requirements=REQUIREMENTS)
    rfp.refresh_from_db()
    declared = {
        vendor_a_org.pk: ("kv-cache-tiering", "tcp"),
        vendor_b_org.pk: ("nvme-of-appliance", "rdma"),
    }

    def source(
        rfp: Rfp,
        organisation_ids: Collection[int],
        named: Mapping[int, str] | None = None,
    ) -> dict[int, Declared]:
        return {
            i: Declared(
                manifest={"approach": declared[i][0]},
                environment={
                    "file": "env.json",
                    "fabric": {"transport": declared[i][1]},
                },
            )
            for i in organisation_ids
        }

    with declared_source.swapped(source):
        yield rfp


def test_the_comparison_groups_bids_by_approach_with_their_matrix(
    client_for: Any, buyer: Any, evaluator: Any, rfp: Rfp
) -> None:
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    url = reverse("procurement:rfp_comparison", args=[rfp.public_id])

    html = client_for(buyer).get(url).content.decode()

    assert 'data-testid="approach-group-kv-cache-tiering"' in html
    assert 'data-testid="approach-group-nvme-of-appliance"' in html
    group = html.split('data-testid="approach-group-nvme-of-appliance"')[1]
    assert 'data-testid="fidelity-vendor-bolt-storage"' in group.split("</section>")[0]
    assert 'data-testid="fidelity-contradicted-bolt-storage"' in html
    assert "env.json:fabric.transport" in html
    assert "Workload fidelity: <strong>8" in html
    assert "Transparency: <strong>8" in html


def test_the_scoring_form_shows_each_vendors_summary(
    client_for: Any, evaluator: Any, rfp: Rfp
) -> None:
    # the evidence the score sheet loads after it, into each bid's place
    url = reverse("procurement:rfp_evaluation_evidence", args=[rfp.public_id])

    html = client_for(evaluator).get(url).content.decode()

    assert 'data-testid="fidelity-summary-acme-flash"' in html
    assert "2 met" in html
    assert 'data-testid="fidelity-contradicted-bolt-storage"' in html


def test_the_gate_board_has_a_fidelity_column(
    client_for: Any, buyer: Any, vendor_a: Any, rfp: Rfp
) -> None:
    url = reverse("gates:board", args=[rfp.public_id])

    buyer_html = client_for(buyer).get(url).content.decode()
    vendor_html = client_for(vendor_a).get(url).content.decode()

    assert 'data-testid="fidelity-bolt-storage"' in buyer_html
    assert 'data-testid="fidelity-contradicted-bolt-storage"' in buyer_html
    assert 'data-testid="fidelity-acme-flash"' in vendor_html
    assert "bolt-storage" not in vendor_html


def test_the_comparison_json_gives_each_vendors_fidelity_in_short(
    buyer: Any, rfp: Rfp
) -> None:
    api = APIClient()
    api.force_authenticate(buyer)

    body = api.get(f"/api/v1/rfps/{rfp.public_id}/comparison/").json()

    fidelity = {v["vendor"]["slug"]: v["fidelity"] for v in body["vendors"]}
    assert fidelity["bolt-storage"]["contradicted_mandatory"] == ["fabric.transports"]
    assert fidelity["acme-flash"]["counts"]["met"] == 2
