"""``GET /api/v1/rfps/<id>/gate-board/``: per vendor and gate the latest
evaluation's verdict and id, the decision state and the open re-test
obligations; a vendor sees its own row only, with no trace of the others."""

from __future__ import annotations

from typing import Any

import pytest

from gates.models import Evaluation
from gates.services.decisions import decision_record
from procurement.models import Rfp
from tests.gates.api.support import GATE, api, owed
from tests.gates.support import make_frozen_plan

pytestmark = pytest.mark.django_db


def board(rfp: Rfp, user: Any) -> Any:
    return api(user).get(f"/api/v1/rfps/{rfp.public_id}/gate-board/")


@pytest.fixture
def other_plan(rfp: Rfp, vendor_b_org: Any, buyer: Any) -> Any:
    return make_frozen_plan(rfp, vendor_b_org, buyer)


def test_board_shows_each_vendor_and_gate(
    rfp: Rfp, evaluation: Evaluation, other_plan: Any, buyer: Any
) -> None:
    body = board(rfp, buyer).json()

    rows = {row["vendor"]: row for row in body["vendors"]}
    assert body["reference"] == rfp.reference
    assert set(rows) == {"acme-flash", "bolt-storage"}
    acme = rows["acme-flash"]
    assert acme["plan"] == str(evaluation.plan.public_id)
    assert [g["gate"] for g in acme["gates"]] == [GATE, "pilot", "rollout"]
    latest = acme["gates"][0]["latest_evaluation"]
    assert (latest["id"], latest["verdict"]) == (str(evaluation.public_id), "PASS")
    assert acme["gates"][1]["latest_evaluation"] is None
    assert rows["bolt-storage"]["gates"][0]["latest_evaluation"] is None


def test_board_shows_the_decision_state_and_open_obligations(
    rfp: Rfp, evaluation: Evaluation, buyer: Any
) -> None:
    decision = decision_record(
        plan=evaluation.plan, gate=GATE, kind="promote", rationale="OK", actor=buyer
    )
    obligation = owed(evaluation)

    cell = board(rfp, buyer).json()["vendors"][0]["gates"][0]

    assert cell["decision"] is None  # a promotion is pending its second sign-off
    assert cell["pending_promotion"]["id"] == str(decision.public_id)
    assert cell["open_obligations"] == {"count": 1, "ids": [str(obligation.public_id)]}
    assert cell["lab_deviation"] is False


def test_a_vendor_sees_its_own_row_only(
    rfp: Rfp, evaluation: Evaluation, other_plan: Any, vendor_a: Any, vendor_b: Any
) -> None:
    own = board(rfp, vendor_a)
    other = board(rfp, vendor_b)

    assert [r["vendor"] for r in own.json()["vendors"]] == ["acme-flash"]
    assert b"bolt-storage" not in own.content
    assert [r["vendor"] for r in other.json()["vendors"]] == ["bolt-storage"]
    assert str(evaluation.public_id).encode() not in other.content


def test_board_is_not_found_for_outsiders(
    rfp: Rfp, evaluation: Evaluation, outsider: Any
) -> None:
    assert board(rfp, outsider).status_code == 404
    assert board(rfp, None).status_code == 401
