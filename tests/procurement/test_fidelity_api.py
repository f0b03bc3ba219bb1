"""``GET /api/v1/rfps/<id>/fidelity/``: the buyer side sees every vendor that bid
(once opened), a vendor only its own rows, outsiders 404."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from benchmarks.models import Campaign, LabPool, Run
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.procurement.factories_bundles import accepted_bundle
from tests.procurement.factories_evaluation import opened_rfp

pytestmark = pytest.mark.django_db

REQUIREMENTS = {
    "schema": "reprogate.rfp-requirements/v1",
    "approaches": ["kv-cache-tiering"],
    "fabric": {"transports": ["tcp"], "qos": False},
    "environment": {"pinned": ["kernel"]},
}
ENVIRONMENT = {
    "fabric": {"transport": "tcp"},
    "pinned": {"kernel": "5.15.0-125-generic"},
}


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/fidelity/"


@pytest.fixture
def rfp(
    tmp_path: Path,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
) -> Rfp:
    """Opened; acme's bundle declares kv-cache-tiering over tcp, bolt's local-nvme."""
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])
    Rfp.objects.filter(pk=rfp.pk).update(requirements=REQUIREMENTS)
    environment = json.dumps(ENVIRONMENT).encode()
    files = {**good_files(), "environment/manifest.json": environment}
    accepted_bundle(
        rfp, vendor_a_org, tmp_path, files=files, approach="kv-cache-tiering"
    )
    accepted_bundle(rfp, vendor_b_org, tmp_path, approach="local-nvme")
    rfp.refresh_from_db()
    return rfp


def _verdicts(vendor: dict[str, Any]) -> dict[str, str]:
    return {row["id"]: row["verdict"] for row in vendor["rows"]}


def test_the_buyer_side_sees_every_vendor_that_bid(buyer: Any, rfp: Rfp) -> None:
    answer = _api(buyer).get(_url(rfp))

    assert answer.status_code == 200
    vendors = {v["vendor"]: v for v in answer.json()["vendors"]}
    assert set(vendors) == {"acme-flash", "bolt-storage"}
    assert _verdicts(vendors["acme-flash"])["approaches"] == "met"
    assert _verdicts(vendors["bolt-storage"])["approaches"] == "contradicted"
    assert _verdicts(vendors["bolt-storage"])["fabric.transports"] == "missing"
    assert vendors["acme-flash"]["approach"] == "kv-cache-tiering"


def test_a_vendor_sees_only_its_own_rows(vendor_a: Any, rfp: Rfp) -> None:
    answer = _api(vendor_a).get(_url(rfp))

    assert answer.status_code == 200
    assert [v["vendor"] for v in answer.json()["vendors"]] == ["acme-flash"]
    assert "bolt-storage" not in answer.content.decode()


def test_outsiders_get_404_and_the_lab_403(
    outsider: Any, labops: Any, rfp: Rfp
) -> None:
    assert _api(outsider).get(_url(rfp)).status_code == 404
    assert _api(labops).get(_url(rfp)).status_code == 403


def test_the_buyer_side_sees_nothing_while_sealed(buyer: Any, rfp: Rfp) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED, opened_at=None)

    answer = _api(buyer).get(_url(rfp))

    assert answer.json() == {
        "rfp": rfp.reference,
        "sealed": True,
        "vendors": [],
        "count": 0,
        "next": None,
        "previous": None,
    }


def test_the_lab_capture_contradicts_a_declared_kernel(
    buyer: Any, labops: Any, rfp: Rfp, vendor_a_org: Organisation
) -> None:
    bundle = rfp.bundles.get(organisation=vendor_a_org)
    pool = LabPool.objects.create(
        name="gpu-a", lab_organisation=Organisation.objects.get(slug="northwind-lab")
    )
    campaign = Campaign.objects.create(
        rfp=rfp, bundle=bundle, pool=pool, started_by=labops, repetitions=1
    )
    run = Run.objects.create(
        campaign=campaign, position=0, scenario_name="cold-c32", repetition=1,
        wall_limit_s=60, environment={"kernel": {"release": "6.1.0-28-amd64"}},
    )  # fmt: skip

    answer = _api(buyer).get(_url(rfp))

    acme = next(v for v in answer.json()["vendors"] if v["vendor"] == "acme-flash")
    row = next(r for r in acme["rows"] if r["id"] == "environment.pinned.kernel")
    assert row["verdict"] == "contradicted"
    assert row["captured"] == {
        "value": "6.1.0-28-amd64",
        "source": f"run {run.public_id}: kernel.release",
    }
    assert acme["run"] == str(run.public_id)
