"""The OpenAPI document describes the answers the API really gives: the paginated
lists as pages, nullable fields as nullable, and the error answers with the one
error shape."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from tests.api.conftest import World
from tests.api.openapi import openapi_document, response_problems
from tests.procurement.factories import RfpFactory

pytestmark = pytest.mark.django_db


def _client(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def _check(
    document: dict[str, Any], client: APIClient, path: str, url: str, status: int
) -> list[str]:
    response = client.get(url)
    assert response.status_code == status, response.content
    return response_problems(document, path, "GET", status, response.json())


@pytest.mark.parametrize(
    ("role", "path"),
    [
        ("buyer", "/api/v1/campaigns/"),
        ("buyer", "/api/v1/escrow/deposits/"),
        ("vendor", "/api/v1/rfps/{rfp_id}/bundles/"),
        ("buyer", "/api/v1/rfps/{rfp_id}/tco-formulas/"),
    ],
)
def test_list_answers_match_their_schema(world: World, role: str, path: str) -> None:
    document = openapi_document()
    client = _client(world.tokens[role])
    url = path.format(rfp_id=world.rfp.public_id)

    response = client.get(url)

    assert response.status_code == 200, response.content
    body = response.json()
    rows = body["results"] if isinstance(body, dict) else body
    assert rows, "the world has a row in each list"
    assert response_problems(document, path, "GET", 200, body) == []


def test_error_answers_are_documented_with_the_error_shape(world: World) -> None:
    document = openapi_document()
    missing = "00000000-0000-0000-0000-000000000000"
    anonymous = APIClient()
    vendor = _client(world.tokens["vendor"])
    buyer = _client(world.tokens["buyer"])

    problems = [
        *_check(document, anonymous, "/api/v1/campaigns/", "/api/v1/campaigns/", 401),
        *_check(
            document,
            vendor,
            "/api/v1/rfps/{rfp_id}/tco-formulas/",
            f"/api/v1/rfps/{missing}/tco-formulas/",
            404,
        ),
    ]
    response = buyer.post(
        f"/api/v1/rfps/{world.rfp.public_id}/tco-formulas/", {}, format="json"
    )
    problems += response_problems(
        document,
        "/api/v1/rfps/{rfp_id}/tco-formulas/",
        "POST",
        response.status_code,
        response.json(),
    )

    assert response.status_code == 400
    assert problems == []


@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        (
            "/api/v1/escrow/releases/00000000-0000-0000-0000-000000000000/package/"
            "?format=zip",
            404,
            "not_found",
        ),
        (
            "/api/v1/rfps/00000000-0000-0000-0000-000000000000/comparison.csv"
            "?format=csv",
            404,
            "not_found",
        ),
        (
            # the buyer manages its organisation's keys: no such organisation
            "/api/v1/signing-keys/allowed_signers?format=txt&organisation=nowhere",
            404,
            "not_found",
        ),
    ],
)
def test_an_error_is_json_whatever_format_was_asked(
    world: World, url: str, status: int, code: str
) -> None:
    response = _client(world.tokens["buyer"]).get(url)

    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == code


def test_every_rfp_read_on_a_sealed_rfp_answers_a_documented_status(
    world: World, buyer_org: Organisation
) -> None:
    """Before the bids are opened, the evaluation and award reads answer 409:
    each answer of each read of a sealed RFP is one its operation documents."""
    document = openapi_document()
    sealed = RfpFactory.create(buyer_organisation=buyer_org, published=True)
    buyer = _client(world.tokens["buyer"])
    reads = [
        path
        for path, operations in document["paths"].items()
        if path.startswith("/api/v1/rfps/{rfp_id}/")
        and "get" in operations
        and path.count("{") == 1
    ]
    problems: list[str] = []
    statuses: dict[str, int] = {}

    for path in reads:
        response = buyer.get(path.format(rfp_id=sealed.public_id))
        statuses[path] = response.status_code
        body = (
            response.json() if response["Content-Type"] == "application/json" else None
        )
        problems += response_problems(document, path, "GET", response.status_code, body)

    assert statuses["/api/v1/rfps/{rfp_id}/award/"] == 409
    assert statuses["/api/v1/rfps/{rfp_id}/award/request/"] == 409
    assert problems == []


def test_the_schema_states_what_the_input_fields_refuse() -> None:
    document = openapi_document()
    inputs = document["components"]["schemas"]
    username = inputs["AuthTokenInput"]["properties"]["username"]
    password = inputs["AuthTokenInput"]["properties"]["password"]
    rfp_list = document["paths"]["/api/v1/rfps/"]["get"]["parameters"]
    paging = {p["name"]: p["schema"] for p in rfp_list if p["in"] == "query"}

    assert username["minLength"] == 1
    assert re.fullmatch(username["pattern"], "  ") is None  # trimmed: blank
    assert re.fullmatch(password["pattern"], "  ")  # not trimmed
    assert re.fullmatch(password["pattern"], "a\x00b") is None
    reference = inputs["RfpCreateInput"]["properties"]["reference"]["pattern"]
    assert re.fullmatch(reference, "RFP-2026-07")
    assert re.fullmatch(reference, "rfp 1") is None
    pue = inputs["TcoFormulaInput"]["properties"]["pue"]["pattern"]
    assert [bool(re.fullmatch(pue, v)) for v in ("1", "1.25", "0.99", "100")] == [
        True,
        True,
        False,
        False,
    ]
    assert inputs["BidDocumentUploadInput"]["properties"]["file"]["format"] == "binary"
    assert paging["limit"]["minimum"] == 1
    assert paging["offset"]["minimum"] == 0


def test_a_decimal_input_pattern_needs_a_digit_and_a_title_one_line() -> None:
    inputs = openapi_document()["components"]["schemas"]
    cost = inputs["BidCostInputsInput"]["properties"]["hardware_cost"]["pattern"]
    tolerance = inputs["AddendumChangesInput"]["properties"]["retest_tolerance_pct"]
    title = inputs["RfpCreateInput"]["properties"]["title"]["pattern"]

    # DRF refuses "", "." and "-" as "a valid number is required"
    assert [bool(re.fullmatch(cost, v)) for v in ("", ".", "-", "12", ".5", "3.")] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert [
        bool(re.fullmatch(tolerance["pattern"], v))
        for v in ("", "0", "100", "100.00", "100.01", "12.5", "12.345", "101")
    ] == [False, True, True, True, False, True, False, False]
    # DRF trims the text first; only a break inside it is refused
    assert [
        bool(re.fullmatch(title, v))
        for v in ("Cache tier", " Cache tier\n", "Cache\ntier", "Cache\x85tier", " ")
    ] == [True, True, False, False, False]
