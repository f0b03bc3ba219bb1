"""The evaluation API: own score sheet, submit, consensus, comparison, TCO formula
versions and award, with the same permission rules as the pages."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.models import Award, Bid, Rfp, Score
from tests.procurement.factories_evaluation import (
    BidFactory,
    bid_of,
    evaluator_in,
    opened_rfp,
    score_all,
)

pytestmark = pytest.mark.django_db

RATIONALE = "Best reproducibility evidence and the lowest cost per million tokens."
READ_PATHS = [
    "scores/",
    "consensus/",
    "comparison/",
    "comparison.csv",
    "tco-formulas/",
    "award/",
    "award/request/",
]


@pytest.fixture
def rfp(buyer_org: Organisation, vendor_a_org: Any, vendor_b_org: Any) -> Rfp:
    return opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _url(rfp: Rfp, suffix: str) -> str:
    return f"/api/v1/rfps/{rfp.public_id}/{suffix}"


def _sheet(rfp: Rfp, value: int = 7) -> dict[str, Any]:
    return {
        "scores": [
            {
                "bid": str(b.public_id),
                "criterion": c.pk,
                "value": value,
                "justification": "Re-ran it.",
            }
            for b in rfp.bids.all()
            for c in rfp.criteria.all()
        ]
    }


def test_get_scores_starts_with_everything_missing(evaluator: Any, rfp: Rfp) -> None:
    body = _api(evaluator).get(_url(rfp, "scores/")).json()

    assert (body["status"], body["editable"]) == ("not_started", True)
    assert len(body["missing"]) == 4
    assert [c["name"] for c in body["criteria"]] == ["Reproducibility", "TCO"]
    assert {b["vendor"]["slug"] for b in body["bids"]} == {"acme-flash", "bolt-storage"}


def test_put_scores_saves_a_draft(evaluator: Any, rfp: Rfp) -> None:
    data = _sheet(rfp)
    data["scores"] = data["scores"][:3]

    body = _api(evaluator).put(_url(rfp, "scores/"), data, format="json").json()

    assert body["status"] == "draft"
    assert len(body["scores"]) == 3
    assert len(body["missing"]) == 1


def test_put_scores_rejects_an_out_of_range_score(evaluator: Any, rfp: Rfp) -> None:
    data = _sheet(rfp, value=11)

    response = _api(evaluator).put(_url(rfp, "scores/"), data, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "scores[0].value"
    assert not Score.objects.exists()


def test_put_scores_rejects_a_bid_of_another_rfp(
    evaluator: Any, rfp: Rfp, buyer_org: Any
) -> None:
    data = _sheet(rfp)
    data["scores"][0]["bid"] = str(
        BidFactory.create(rfp=opened_rfp(buyer_org, [])).public_id
    )

    response = _api(evaluator).put(_url(rfp, "scores/"), data, format="json")

    assert response.status_code == 400
    assert response.json()["problems"] == [
        {
            "code": "invalid_score",
            "message": "No such bid on this RFP.",
            "path": "scores[0]",
        }
    ]


def test_scores_are_for_evaluators_only(buyer: Any, rfp: Rfp) -> None:
    assert _api(buyer).get(_url(rfp, "scores/")).status_code == 403
    assert (
        _api(buyer).put(_url(rfp, "scores/"), _sheet(rfp), format="json").status_code
        == 403
    )


def test_submit_lists_what_is_missing(evaluator: Any, rfp: Rfp) -> None:
    response = _api(evaluator).post(_url(rfp, "scores/submit/"))

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "sheet_incomplete"
    assert len(body["problems"]) == 4


def test_submit_locks_the_sheet(evaluator: Any, rfp: Rfp) -> None:
    api = _api(evaluator)
    api.put(_url(rfp, "scores/"), _sheet(rfp), format="json")

    body = api.post(_url(rfp, "scores/submit/")).json()

    assert (body["status"], body["editable"]) == ("submitted", False)
    response = api.put(_url(rfp, "scores/"), _sheet(rfp, 1), format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "sheet_submitted"


def test_scores_are_409_while_sealed(evaluator: Any, rfp: Rfp) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)

    response = _api(evaluator).get(_url(rfp, "scores/"))

    assert response.status_code == 409
    assert response.json()["code"] == "rfp_sealed"


def test_consensus_is_403_for_an_evaluator_before_submitting(
    evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 9)

    response = _api(evaluator).get(_url(rfp, "consensus/"))

    assert response.status_code == 403
    assert "submitted your own score sheet" in response.json()["message"]


def test_consensus_after_submitting(
    evaluator: Any, rfp: Rfp, buyer_org: Organisation
) -> None:
    score_all(rfp, evaluator_in(buyer_org, "eve"), 9)
    score_all(rfp, evaluator, 5)

    body = _api(evaluator).get(_url(rfp, "consensus/")).json()

    assert (body["provisional"], body["submitted_sheets"], body["evaluators"]) == (
        False,
        2,
        2,
    )
    cell = body["rows"][0]["cells"][0]
    assert (cell["mean"], cell["spread"], cell["stdev"], cell["disagreement"]) == (
        "7.00",
        4,
        "2.00",
        True,
    )
    assert {s["evaluator"] for s in cell["scores"]} == {"eve", "evaluator"}
    assert body["rows"][0]["weighted_total"] == "70.00"


def test_buyer_sees_a_provisional_consensus(
    buyer: Any, evaluator: Any, rfp: Rfp, buyer_org: Any
) -> None:
    evaluator_in(buyer_org, "eve")
    score_all(rfp, evaluator, 6)

    body = _api(buyer).get(_url(rfp, "consensus/")).json()

    assert (body["provisional"], body["submitted_sheets"]) == (True, 1)
    assert [row["rank"] for row in body["rows"]] == [1, 1]


def test_comparison_json_and_csv(buyer: Any, evaluator: Any, rfp: Rfp) -> None:
    score_all(rfp, evaluator, {"acme-flash": 8, "bolt-storage": 6})
    api = _api(buyer)

    body = api.get(_url(rfp, "comparison/")).json()
    csv_response = api.get(_url(rfp, "comparison.csv"))

    assert [v["vendor"]["slug"] for v in body["vendors"]] == [
        "acme-flash",
        "bolt-storage",
    ]
    assert body["vendors"][0]["scores"]["rank"] == 1
    assert csv_response["Content-Type"] == "text/csv; charset=utf-8"
    assert csv_response["Content-Disposition"].startswith("attachment;")
    assert (
        csv_response.content.decode().splitlines()[0].startswith("vendor,vendor_slug")
    )


def test_tco_formulas_list_the_unrecorded_defaults(evaluator: Any, rfp: Rfp) -> None:
    body = _api(evaluator).get(_url(rfp, "tco-formulas/")).json()["results"]

    assert body == [
        {
            "version": 1,
            "recorded": False,
            "pue": "1.40",
            "utilisation": "0.600",
            "hours_per_year": 8760,
            "created_at": None,
            "created_by": None,
        }
    ]


def test_buyer_records_a_tco_formula_version(buyer: Any, rfp: Rfp) -> None:
    data = {"pue": "1.25", "utilisation": "0.7", "hours_per_year": 8000}

    response = _api(buyer).post(_url(rfp, "tco-formulas/"), data, format="json")

    assert response.status_code == 201
    assert (response.json()["version"], response.json()["created_by"]) == (2, "buyer")


def test_tco_formula_input_is_validated(buyer: Any, rfp: Rfp) -> None:
    data = {"pue": "0.5", "utilisation": "1.5", "hours_per_year": 0}

    response = _api(buyer).post(_url(rfp, "tco-formulas/"), data, format="json")

    assert response.status_code == 400
    paths = {p["path"] for p in response.json()["problems"]}
    assert paths == {"pue", "utilisation", "hours_per_year"}


def test_evaluators_may_not_change_the_tco_formula(evaluator: Any, rfp: Rfp) -> None:
    data = {"pue": "1.25", "utilisation": "0.7", "hours_per_year": 8000}

    assert (
        _api(evaluator)
        .post(_url(rfp, "tco-formulas/"), data, format="json")
        .status_code
        == 403
    )


def test_award_via_api(buyer: Any, evaluator: Any, rfp: Rfp, vendor_a_org: Any) -> None:
    score_all(rfp, evaluator, 7)
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": RATIONALE}

    response = _api(buyer).post(_url(rfp, "award/request/"), data, format="json")
    _api(evaluator).post(_url(rfp, "award/confirm/"))

    assert response.status_code == 201
    assert response.json()["bid"]["vendor"]["slug"] == "acme-flash"
    assert _api(evaluator).get(_url(rfp, "award/")).json()["rationale"] == RATIONALE


def test_award_before_opening_is_409(buyer: Any, rfp: Rfp, vendor_a_org: Any) -> None:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.CLOSED)
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": RATIONALE}

    response = _api(buyer).post(_url(rfp, "award/request/"), data, format="json")

    assert response.status_code == 409
    assert not Award.objects.exists()


def test_award_of_a_withdrawn_bid_is_400(
    buyer: Any, evaluator: Any, rfp: Rfp, vendor_b_org: Any
) -> None:
    score_all(rfp, evaluator, 7)
    Bid.objects.filter(vendor_organisation=vendor_b_org).update(status="withdrawn")
    data = {"bid": str(bid_of(rfp, vendor_b_org).public_id), "rationale": RATIONALE}

    response = _api(buyer).post(_url(rfp, "award/request/"), data, format="json")

    assert response.status_code == 400
    assert not Award.objects.exists()


def test_award_of_a_bid_of_another_rfp_is_400(
    buyer: Any, evaluator: Any, rfp: Rfp, buyer_org: Any
) -> None:
    score_all(rfp, evaluator, 7)
    stranger = BidFactory.create(rfp=opened_rfp(buyer_org, []))
    data = {"bid": str(stranger.public_id), "rationale": RATIONALE}

    response = _api(buyer).post(_url(rfp, "award/request/"), data, format="json")

    assert response.status_code == 400
    assert response.json()["problems"][0]["path"] == "bid"


def test_evaluators_may_not_award(evaluator: Any, rfp: Rfp, vendor_a_org: Any) -> None:
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": RATIONALE}

    assert (
        _api(evaluator)
        .post(_url(rfp, "award/request/"), data, format="json")
        .status_code
        == 403
    )


@pytest.mark.parametrize("suffix", READ_PATHS)
def test_vendors_and_outsiders_get_404(
    vendor_a: Any, vendor_b: Any, outsider: Any, evaluator: Any, rfp: Rfp, suffix: str
) -> None:
    score_all(rfp, evaluator, 7)

    for user in (vendor_a, vendor_b, outsider):
        assert _api(user).get(_url(rfp, suffix)).status_code == 404


@pytest.mark.parametrize("suffix", READ_PATHS)
def test_auditors_get_403(auditor: Any, rfp: Rfp, suffix: str) -> None:
    assert _api(auditor).get(_url(rfp, suffix)).status_code == 403


def test_vendor_cannot_write_scores_or_award(
    vendor_a: Any, rfp: Rfp, vendor_a_org: Any
) -> None:
    api = _api(vendor_a)
    data = {"bid": str(bid_of(rfp, vendor_a_org).public_id), "rationale": RATIONALE}

    assert api.put(_url(rfp, "scores/"), _sheet(rfp), format="json").status_code == 404
    assert api.post(_url(rfp, "scores/submit/")).status_code == 404
    assert api.post(_url(rfp, "award/request/"), data, format="json").status_code == 404
