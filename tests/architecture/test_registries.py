"""The seam through which procurement reads what the lab reproduced without
importing gates (``procurement.selectors.reproduced``): gates fills it in at startup,
its
objects read as procurement's protocols say, and without it every vendor is
"not yet reproduced" and no RFP uses lab validation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gates.selectors import reproduced as gates_reproduced
from procurement.models import Bid, Rfp
from procurement.selectors.comparison import comparison_for
from procurement.selectors.reproduced import (
    NOT_REPRODUCED,
    LabValidation,
    ReproducedClaim,
    lab_validations_for,
    register_lab_validation_source,
    rfp_uses_lab_validation,
)
from tests.gates.reproduced_support import (  # noqa: F401 (fixtures)
    reproduce_fixture,
    two_vendors_fixture,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def without_gates() -> Iterator[None]:
    previous = register_lab_validation_source(None, None)
    yield
    register_lab_validation_source(*previous)


def _bids(rfp: Rfp) -> list[Bid]:
    return list(rfp.bids.select_related("vendor_organisation"))


def test_gates_registers_its_source_when_django_starts() -> None:
    previous = register_lab_validation_source(None, None)
    register_lab_validation_source(*previous)

    assert previous == (
        gates_reproduced.lab_validations_for,
        gates_reproduced.rfp_uses_lab_validation,
    )


def test_gates_lab_validations_read_as_procurement_expects(two_vendors: Rfp) -> None:
    bids = _bids(two_vendors)

    labs = lab_validations_for(two_vendors, bids)

    assert sorted(lab.verdict for lab in labs.values()) == ["FAIL", "PASS"]
    assert all(isinstance(lab, LabValidation) for lab in labs.values())
    claims = [
        c
        for b in bids
        for c in labs[b.vendor_organisation_id].claims(b.claimed_metrics)
    ]
    assert claims
    assert all(isinstance(c, ReproducedClaim) for c in claims)
    assert rfp_uses_lab_validation(two_vendors) is True


def test_without_gates_nothing_is_reproduced(
    two_vendors: Rfp, buyer: Any, without_gates: None
) -> None:
    bids = _bids(two_vendors)

    labs = lab_validations_for(two_vendors, bids)
    comparison = comparison_for(buyer, two_vendors)

    assert {lab.label for lab in labs.values()} == {NOT_REPRODUCED}
    assert all(isinstance(lab, LabValidation) for lab in labs.values())
    claims = [
        c
        for b in bids
        for c in labs[b.vendor_organisation_id].claims(b.claimed_metrics)
    ]
    assert claims
    assert {(c.result, c.reproduced) for c in claims} == {(None, False)}
    assert comparison.lab_in_use is False
    assert {row.lab.label for row in comparison.rows} == {NOT_REPRODUCED}
    assert {row.tco_detail.basis for row in comparison.rows} <= {"claimed", ""}
