"""The editor's "workloads and metrics" step states the requirements document
with fields and rows (no JSON typing) and saves what the API's PUT takes; the
RFP page shows it to the invited vendors."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.lib import requirements as lib
from procurement.models import Rfp
from procurement.services.requirements import rfp_set_requirements
from procurement.services.rfp_lifecycle import rfp_publish
from tests.procurement.factories_rfps import draft_rfp
from tests.procurement.test_requirements_lib import good
from tests.procurement.test_rfp_authoring import _edit, _formset

pytestmark = pytest.mark.django_db


def _step(**fields: Any) -> dict[str, Any]:
    workload = {
        "id": "chat-70b",
        "model_family": "decoder",
        "params_low": "65",
        "params_high": "80",
        "context_tokens": "8192",
        "concurrency_low": "8",
        "concurrency_high": "64",
        "tenants": "4",
        "scenario_kinds": ["steady", "failover"],
    }
    accelerator = {"vendors": ["nvidia"], "per_node": "8", "sdk": "cuda>=12.2"}
    metrics = [{"name": "ttft_ms", "stats": "p99", "series": "on"}]
    return {
        "workload_requirements": "",
        "approaches": ["nvme-of-appliance"],
        "transports": ["tcp"],
        "pinned": ["kernel", "gpu_driver"],
        "bid_requires_bundle": "on",
        **_formset("workloads", [workload]),
        **_formset("accelerators", [accelerator]),
        **_formset("metrics", metrics),
        **fields,
    }


def _document(user: Any, rfp: Rfp) -> dict[str, Any]:
    api = APIClient()
    api.force_authenticate(user)
    return api.get(f"/api/v1/rfps/{rfp.public_id}/requirements/").json()


def test_the_step_saves_the_document_the_api_reads(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    response = client_for(buyer).post(_edit(rfp, "workloads"), _step())

    assert response.status_code == 302
    doc = _document(buyer, rfp)
    assert doc["approaches"] == ["nvme-of-appliance"]
    assert doc["workloads"] == [
        {
            "id": "chat-70b",
            "model_family": "decoder",
            "params_b": [65, 80],
            "context_tokens": 8192,
            "concurrency": [8, 64],
            "tenants": 4,
            "scenario_kinds": ["steady", "failover"],
        }
    ]
    assert doc["accelerators"] == [
        {"vendors": ["nvidia"], "per_node": 8, "sdk": {"cuda": ">=12.2"}}
    ]
    assert doc["fabric"] == {"transports": ["tcp"], "qos": False}
    assert doc["environment"]["pinned"] == ["kernel", "gpu_driver"]
    assert doc["metrics"] == [{"metric": "ttft_ms", "stats": ["p99"], "series": True}]
    assert doc["artifacts"]["bid_requires_bundle"] is True


def test_the_step_shows_the_saved_document(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    rfp_set_requirements(rfp=rfp, document=good(), actor=buyer)

    html = client_for(buyer).get(_edit(rfp, "workloads")).content.decode()

    assert 'value="chat-70b"' in html
    assert 'value="cuda&gt;=12.2"' in html
    assert 'value="kv-cache-tiering" id="id_approaches_2" checked' in html


def test_the_step_refuses_half_a_range_and_keeps_the_document(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    response = client_for(buyer).post(
        _edit(rfp, "workloads"), _step(**{"workloads-0-params_high": ""})
    )

    assert response.status_code == 200
    assert "Give both ends of the range" in response.content.decode()
    assert _document(buyer, rfp)["workloads"] == []


def test_the_step_refuses_a_low_end_above_the_high_end(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    data = _step(**{"workloads-0-concurrency_low": "128"})

    response = client_for(buyer).post(_edit(rfp, "workloads"), data)

    assert response.status_code == 200
    assert "Needs 1 &lt;= low &lt;= high" in response.content.decode()
    assert _document(buyer, rfp)["workloads"] == []


def test_save_and_add_a_row_offers_a_blank_workload(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    client = client_for(buyer)

    client.post(_edit(rfp, "workloads"), {**_step(), "stay": ""})
    html = client.get(_edit(rfp, "workloads")).content.decode()

    assert 'name="workloads-TOTAL_FORMS" value="2"' in html


def test_the_rfp_page_shows_the_requirements_to_an_invited_vendor(
    buyer: Any,
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Any,
    client_for: Any,
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    rfp_set_requirements(rfp=rfp, document=good(), actor=buyer)
    rfp_publish(rfp=rfp, actor=None)

    html = client_for(vendor_a).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert 'data-testid="requirements"' in html
    assert "chat-70b" in html
    assert "decoder" in html
    assert "65\N{EN DASH}80 B parameters" in html
    assert "nvidia" in html


def test_the_vocabulary_words_are_the_librarys() -> None:
    assert set(lib.APPROACHES) == {
        "nvme-of-appliance",
        "local-nvme",
        "kv-cache-tiering",
    }
