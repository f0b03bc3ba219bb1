"""GET/PUT /api/v1/rfps/<id>/requirements/: the document round-trips, is split
over the RFP's rows, is refused after publication and is seen only by those who
may know the RFP."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organisation
from procurement.lib import requirements as lib
from procurement.models import RequiredArtifact, RequiredMetric, Rfp
from procurement.services.rfp_lifecycle import rfp_publish
from tests.procurement.factories_rfps import draft_rfp
from tests.procurement.test_requirements_lib import good

pytestmark = pytest.mark.django_db


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/requirements/"


def test_put_then_get_returns_the_same_document(buyer: Any, buyer_org: Any) -> None:
    rfp = draft_rfp(buyer_org)

    put = _api(buyer).put(_url(rfp), good(), format="json")
    got = _api(buyer).get(_url(rfp))

    assert put.status_code == 200
    assert got.json() == put.json() == lib.canonical(good())


def test_put_splits_the_document_over_the_rows(buyer: Any, buyer_org: Any) -> None:
    rfp = draft_rfp(buyer_org)

    _api(buyer).put(_url(rfp), good(), format="json")

    rfp.refresh_from_db()
    assert set(rfp.requirements) == set(lib.STORED_SECTIONS)
    assert rfp.requirements["fabric"] == {"transports": ["tcp", "rdma"], "qos": True}
    assert rfp.bid_requires_bundle is True
    metrics = RequiredMetric.objects.filter(rfp=rfp)
    assert [(m.name, m.stats, m.series) for m in metrics] == [
        ("ttft_ms", "p99,p99.9", False),
        ("cache_hit_rate", "", True),
    ]
    mandatory = RequiredArtifact.objects.filter(rfp=rfp, mandatory=True)
    assert sorted(mandatory.values_list("kind", flat=True)) == ["harness", "workload"]
    assert RequiredArtifact.objects.filter(rfp=rfp, kind="trace").exists()  # optional


def test_put_writes_one_audit_row_naming_the_changes(
    buyer: Any, buyer_org: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    _api(buyer).put(_url(rfp), good(), format="json")
    _api(buyer).put(_url(rfp), good(), format="json")  # unchanged: nothing written

    (event,) = AuditEvent.objects.filter(action="rfp.requirements_changed")
    assert "workloads[chat-70b]" in event.data["changed"]
    assert "fabric.transports" in event.data["changed"]


def test_put_refuses_a_bad_document_naming_each_path(
    buyer: Any, buyer_org: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    bad = good()
    bad["workloads"][0]["concurrency"] = [64, 8]
    bad["metrics"].append({"metric": "ttft_ms"})

    response = _api(buyer).put(_url(rfp), bad, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_requirements"
    paths = [p["path"] for p in response.json()["problems"]]
    assert paths == ["workloads[0].concurrency", "metrics[2].metric"]
    rfp.refresh_from_db()
    assert rfp.requirements == {}  # nothing written


def test_put_refuses_an_unknown_vocabulary_word(buyer: Any, buyer_org: Any) -> None:
    rfp = draft_rfp(buyer_org)

    response = _api(buyer).put(
        _url(rfp), {**good(), "approaches": ["tape"]}, format="json"
    )

    assert response.status_code == 400


def test_put_on_a_published_rfp_is_a_conflict(
    buyer: Any, buyer_org: Any, vendor_a_org: Organisation
) -> None:
    rfp = rfp_publish(rfp=draft_rfp(buyer_org, vendor_a_org), actor=None)

    response = _api(buyer).put(_url(rfp), good(), format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "not_draft"
    assert "addendum" in response.json()["message"]


def test_invited_vendor_reads_a_published_rfps_requirements(
    buyer: Any, buyer_org: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)
    _api(buyer).put(_url(rfp), good(), format="json")
    rfp_publish(rfp=rfp, actor=None)

    response = _api(vendor_a).get(_url(rfp))

    assert response.status_code == 200
    assert response.json()["workloads"][0]["id"] == "chat-70b"


def test_invited_vendor_may_not_put(
    buyer_org: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = rfp_publish(rfp=draft_rfp(buyer_org, vendor_a_org), actor=None)

    response = _api(vendor_a).put(_url(rfp), good(), format="json")

    assert response.status_code == 403


def test_uninvited_vendor_and_outsider_get_404(
    buyer_org: Any, vendor_a_org: Organisation, vendor_b: Any, outsider: Any
) -> None:
    rfp = rfp_publish(rfp=draft_rfp(buyer_org, vendor_a_org), actor=None)

    assert _api(vendor_b).get(_url(rfp)).status_code == 404
    assert _api(outsider).get(_url(rfp)).status_code == 404
    assert _api(outsider).put(_url(rfp), good(), format="json").status_code == 404


def test_invited_vendor_cannot_read_a_draft(
    buyer_org: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org, vendor_a_org)

    assert _api(vendor_a).get(_url(rfp)).status_code == 404
