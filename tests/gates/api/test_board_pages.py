"""The gate board pages its vendors (``count``, ``next``, ``previous`` beside
the RFP's fields); a vendor's board counts its own row only."""

from __future__ import annotations

from typing import Any

import pytest

from gates.models import Evaluation
from procurement.models import Rfp
from tests.api.paging import assert_pages
from tests.gates.api.support import api
from tests.gates.support import make_frozen_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_plan(rfp: Rfp, vendor_b_org: Any, buyer: Any) -> Any:
    return make_frozen_plan(rfp, vendor_b_org, buyer)


def _url(rfp: Rfp) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/gate-board/"


def test_the_board_pages_its_vendors(
    rfp: Rfp, evaluation: Evaluation, other_plan: Any, buyer: Any
) -> None:
    whole = assert_pages(api(buyer), _url(rfp), "vendors")

    assert {row["vendor"] for row in whole["vendors"]} == {
        "acme-flash",
        "bolt-storage",
    }
    assert whole["reference"] == rfp.reference


def test_a_vendors_board_counts_its_own_row_only(
    rfp: Rfp, evaluation: Evaluation, other_plan: Any, vendor_a: Any
) -> None:
    response = api(vendor_a).get(_url(rfp), {"limit": 10_000})

    body = response.json()
    assert body["count"] == 1
    assert [row["vendor"] for row in body["vendors"]] == ["acme-flash"]
    assert "bolt-storage" not in response.content.decode()
