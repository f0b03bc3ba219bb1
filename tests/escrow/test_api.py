"""Escrow API: deposits with filters, one deposit's leaf and inclusion proof
(which a client can check itself), legal hold and retention changes with the
the API's error shape."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from artifacts.lib.transparency.merkle import leaf_hash, verify_inclusion
from artifacts.lib.transparency.note import open_checkpoint
from artifacts.models import Deposit
from artifacts.services.transparency import checkpoint_publish
from tests.escrow.conftest import open_bids

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(auditor: Any, deposit: Deposit) -> APIClient:
    open_bids(deposit.rfp)
    client = APIClient()
    client.force_authenticate(auditor)
    return client


def _url(deposit: Deposit, suffix: str = "") -> str:
    return f"/api/v1/escrow/deposits/{deposit.public_id}/{suffix}"


def test_deposit_list_with_filters(api: APIClient, deposit: Deposit) -> None:
    listed = api.get("/api/v1/escrow/deposits/?vendor=acme-flash&kind=bundle").json()
    none = api.get("/api/v1/escrow/deposits/?rfp=RFP-OTHER").json()

    assert listed["count"] == 1
    item = listed["results"][0]
    assert item["id"] == str(deposit.public_id)
    assert item["log_index"] == deposit.log_index
    assert (
        item["evidence_url"] == f"/api/v1/bundles/{deposit.bundle.public_id}/evidence/"
    )
    assert none["count"] == 0


def test_deposit_detail_before_a_checkpoint_says_its_proof_is_pending(
    api: APIClient, deposit: Deposit
) -> None:
    body = api.get(_url(deposit)).json()

    assert body["inclusion"] is None
    assert "published within a minute" in body["inclusion_pending"]
    assert body["log_index"] == deposit.log_index


def test_deposit_detail_proof_checks_out_on_the_client(
    api: APIClient, deposit: Deposit
) -> None:
    checkpoint_publish()

    body = api.get(_url(deposit)).json()
    key = api.get("/api/v1/log/key").content.decode().strip()

    inclusion = body["inclusion"]
    checkpoint = open_checkpoint(inclusion["checkpoint"], key)
    leaf = base64.b64decode(body["leaf"])
    verify_inclusion(
        leaf_hash(leaf),
        body["log_index"],
        checkpoint.size,
        [base64.b64decode(h) for h in inclusion["proof"]],
        checkpoint.root_hash,
    )
    assert inclusion["verified"] is True
    assert body["record"]["deposit"] == str(deposit.public_id)
    assert len(body["blobs"]) == deposit.items.count()


def test_legal_hold_twice_is_a_conflict(api: APIClient, deposit: Deposit) -> None:
    body = {"hold": True, "reason": "x"}
    first = api.post(_url(deposit, "legal-hold/"), body, format="json")
    second = api.post(_url(deposit, "legal-hold/"), body, format="json")

    assert first.status_code == 200
    assert first.json()["legal_hold"] is True
    assert second.status_code == 409
    assert second.json()["code"] == "hold_unchanged"


def test_legal_hold_needs_a_reason(api: APIClient, deposit: Deposit) -> None:
    response = api.post(_url(deposit, "legal-hold/"), {"hold": True}, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "reason"


def test_retention_is_extended_never_shortened(
    api: APIClient, deposit: Deposit
) -> None:
    later = deposit.retain_until + timedelta(days=30)
    earlier = deposit.retain_until - timedelta(days=30)

    extended = api.post(
        _url(deposit, "retention/"), {"retain_until": later.isoformat(), "reason": "r"}
    )
    refused = api.post(
        _url(deposit, "retention/"),
        {"retain_until": earlier.isoformat(), "reason": "r"},
    )

    assert extended.status_code == 200
    assert refused.status_code == 400
    assert refused.json()["code"] == "retention_not_extended"
    deposit.refresh_from_db()
    assert deposit.retain_until == later


@pytest.mark.parametrize("value", ["", "tomorrow", "2030-13-40T00:00:00Z"])
def test_retention_rejects_bad_dates(
    api: APIClient, deposit: Deposit, value: str
) -> None:
    response = api.post(
        _url(deposit, "retention/"), {"retain_until": value, "reason": "r"}
    )

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_unknown_deposit_is_404(api: APIClient) -> None:
    response = api.get("/api/v1/escrow/deposits/00000000-0000-0000-0000-000000000000/")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
