"""The seeded RFP-DEMO-2 shows what the RFP demands, checked: its requirements
document against what each example bundle declares (the fidelity matrix: Acme
Flash meets most rows and lacks one, Bolt Storage's model contradicts the chat
workload), each row with its sources, a vendor seeing only its own; both bids name
a bundle covering the mandatory kinds; each bundle's report PDF validates and
names its vendor as the signer; an SBOM's components are counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from artifacts.models import Bundle
from portal.demo import LAB_RFP, demo_seed
from procurement.models import Rfp

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _fidelity(username: str) -> Any:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    rfp = Rfp.objects.get(reference=LAB_RFP)
    response = client.get(f"/api/v1/rfps/{rfp.public_id}/fidelity/")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def lab_rfp(settings: Any, tmp_path: Path) -> Rfp:
    settings.VAR_DIR = tmp_path
    demo_seed()
    return Rfp.objects.get(reference=LAB_RFP)


def test_each_vendor_meets_some_requirements_and_not_others(lab_rfp: Rfp) -> None:
    body = _fidelity("buyer")

    vendors = {v["vendor"]: v for v in body["vendors"]}
    assert set(vendors) == {"acme-flash", "bolt-storage"}
    acme, bolt = vendors["acme-flash"], vendors["bolt-storage"]
    assert acme["counts"]["met"] >= 1
    assert acme["counts"]["missing"] + acme["counts"]["contradicted"] >= 1
    assert bolt["counts"]["met"] >= 1
    assert bolt["counts"]["contradicted"] >= 1
    for vendor in (acme, bolt):
        for row in vendor["rows"]:
            assert row["required"]["source"], row
            if row["declared"] is not None:
                assert row["declared"]["source"], row
    family = next(r for r in bolt["rows"] if r["id"].endswith("model_family"))
    assert family["verdict"] == "contradicted"
    # a vendor sees only its own matrix
    own = _fidelity("vendor-a")
    assert [v["vendor"] for v in own["vendors"]] == ["acme-flash"]


def test_the_bids_met_the_bundle_condition_and_the_reports_validate(
    lab_rfp: Rfp,
) -> None:
    assert lab_rfp.bid_requires_bundle
    assert lab_rfp.bids.count() == 2
    for bundle in Bundle.objects.filter(rfp=lab_rfp, status="accepted").exclude(
        organisation=lab_rfp.buyer_organisation
    ):
        report = bundle.completeness["signed_reports"]
        assert report["valid"] == 1, report
        [signed] = [f for f in report["files"] if f["status"] == "valid"]
        signer = signed["signatures"][0]["signer"]
        assert signer["organisation"] == bundle.organisation.name
        assert signed["statement"]["status"] == "valid", signed["statement"]
        assert bundle.completeness["artifacts"]["complete"], bundle.completeness
        sbom = bundle.completeness["content"]["kinds"]["sbom"]
        assert sbom["ok"], sbom
        assert sbom["components"] >= 1
