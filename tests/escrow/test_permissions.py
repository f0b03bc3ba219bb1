"""Who sees escrow: the depositing vendor at any time; the buyer side (buyers,
evaluators, and the lab and auditors the buyer engaged) once the RFP is opened;
nobody else (404). Legal hold and retention: the buyer's buyers and its
auditors only (403 for others who see the deposit)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from artifacts.models import Deposit, EscrowEvent
from tests.escrow.conftest import open_bids

pytestmark = pytest.mark.django_db

SEALED = {
    "vendor_a": 200,
    "vendor_b": 404,
    "buyer": 404,
    "evaluator": 404,
    "labops": 404,
    "auditor": 404,
    "outsider": 404,
}
OPENED = {**SEALED, "buyer": 200, "evaluator": 200, "labops": 200, "auditor": 200}


def _client(request: Any, persona: str) -> Client:
    client = Client()
    client.force_login(request.getfixturevalue(persona))
    return client


def _urls(deposit: Deposit) -> list[str]:
    return [
        f"/api/v1/bundles/{deposit.bundle.public_id}/evidence/",
        f"/api/v1/escrow/deposits/{deposit.public_id}/",
        f"/artifacts/escrow/deposits/{deposit.public_id}/",
    ]


@pytest.mark.parametrize("persona", sorted(SEALED))
def test_sealed_deposit_is_seen_by_its_vendor_only(
    request: Any, deposit: Deposit, persona: str
) -> None:
    client = _client(request, persona)

    codes = [client.get(url).status_code for url in _urls(deposit)]

    assert codes == [SEALED[persona]] * 3
    visible = client.get("/api/v1/escrow/deposits/").json()["count"]
    assert visible == (1 if SEALED[persona] == 200 else 0)


@pytest.mark.parametrize("persona", sorted(OPENED))
def test_opened_deposit_is_seen_by_the_buyer_side(
    request: Any, deposit: Deposit, persona: str
) -> None:
    open_bids(deposit.rfp)
    client = _client(request, persona)

    codes = [client.get(url).status_code for url in _urls(deposit)]

    assert codes == [OPENED[persona]] * 3
    listed = client.get("/artifacts/escrow/").content.decode()
    assert (f"#{deposit.log_index}</a>" in listed) == (OPENED[persona] == 200)


def test_refused_downloads_leave_no_trace(request: Any, deposit: Deposit) -> None:
    for persona in ("vendor_b", "buyer", "auditor", "outsider"):
        _client(request, persona).get(_urls(deposit)[0])

    assert not EscrowEvent.objects.exists()


def test_anonymous_callers_get_nothing(deposit: Deposit) -> None:
    api, detail_api, page = _urls(deposit)
    client = Client()

    assert client.get(api).status_code in (401, 403)
    assert client.get(detail_api).status_code in (401, 403)
    assert client.get(page).status_code == 302  # to the login page


HOLDERS = {
    "buyer": 200,
    "auditor": 200,
    "evaluator": 403,
    "labops": 403,
    "vendor_a": 403,
    "vendor_b": 404,
    "outsider": 404,
}


@pytest.mark.parametrize("persona", sorted(HOLDERS))
def test_who_may_place_a_legal_hold(
    request: Any, deposit: Deposit, persona: str
) -> None:
    open_bids(deposit.rfp)
    client = _client(request, persona)
    url = f"/api/v1/escrow/deposits/{deposit.public_id}/legal-hold/"

    response = client.post(
        url, {"hold": True, "reason": "dispute"}, content_type="application/json"
    )

    assert response.status_code == HOLDERS[persona]
    deposit.refresh_from_db()
    assert deposit.legal_hold is (HOLDERS[persona] == 200)


def test_the_buyer_cannot_hold_a_sealed_deposit(request: Any, deposit: Deposit) -> None:
    client = _client(request, "buyer")
    url = f"/api/v1/escrow/deposits/{deposit.public_id}/legal-hold/"

    response = client.post(
        url, {"hold": True, "reason": "x"}, content_type="application/json"
    )

    assert response.status_code == 404


@pytest.mark.parametrize("persona", ["vendor_a", "evaluator", "vendor_b"])
def test_the_hold_page_refuses_others(
    request: Any, deposit: Deposit, persona: str
) -> None:
    open_bids(deposit.rfp)
    client = _client(request, persona)
    url = f"/artifacts/escrow/deposits/{deposit.public_id}/legal-hold/"

    response = client.post(url, {"hold": "on", "reason": "x"})

    assert response.status_code == (404 if persona == "vendor_b" else 403)
    deposit.refresh_from_db()
    assert deposit.legal_hold is False
