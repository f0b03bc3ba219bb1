"""The re-test obligation API: the caller's visible obligations (a vendor: its
own), paginated, their status by the clock; one obligation; the vendor's request
to re-test with its revised bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.selectors import clock
from artifacts.models import Bundle
from gates.models import Evaluation, RetestObligation
from procurement.models import Rfp
from tests.benchmarks.runner.support import GOOD_HARNESS, accepted_bundle
from tests.gates.api.support import api, owed

pytestmark = pytest.mark.django_db
LIST = "/api/v1/retest-obligations/"


@pytest.fixture
def revised(tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any) -> Bundle:
    """The vendor's revised accepted bundle (ingested while the RFP takes bids)."""
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.PUBLISHED)
    harness = GOOD_HARNESS + b"\n# revised\n"
    return accepted_bundle(
        tmp_path / "revised", rfp, vendor_a_org, vendor_a, harness=harness
    )


def detail(obligation: RetestObligation, action: str = "") -> str:
    return f"{LIST}{obligation.public_id}/{action}"


def test_list_shows_the_vendor_its_obligations(
    evaluation: Evaluation, vendor_a: Any
) -> None:
    obligation = owed(evaluation)

    body = api(vendor_a).get(LIST).json()

    assert body["count"] == 1
    row = body["results"][0]
    assert row["id"] == str(obligation.public_id)
    assert (row["status"], row["attempts_left"], row["cost_bearer"]) == (
        "open",
        2,
        "vendor",
    )
    assert row["evaluation"] == str(evaluation.public_id)
    assert row["criteria"] == ["ttft-p99-cold-c1"]


@pytest.mark.parametrize(
    ("persona", "count"),
    [("buyer", 1), ("labops", 1), ("auditor", 1), ("vendor_b", 0), ("outsider", 0)],
)
def test_list_is_scoped_to_the_caller(
    persona: str, count: int, evaluation: Evaluation, request: pytest.FixtureRequest
) -> None:
    owed(evaluation)
    user = request.getfixturevalue(persona)

    assert api(user).get(LIST).json()["count"] == count


def test_list_is_paginated_soonest_deadline_first(
    evaluation: Evaluation, buyer: Any
) -> None:
    owed(
        evaluation,
        days=30,
        status=RetestObligation.Status.FAILED,
        breached_at=clock.now(),
    )
    soon = owed(evaluation, days=3)

    page = api(buyer).get(LIST, {"limit": 1}).json()

    assert page["count"] == 2
    assert [r["id"] for r in page["results"]] == [str(soon.public_id)]
    assert page["next"] is not None


def test_status_is_read_by_the_clock(
    evaluation: Evaluation, vendor_a: Any, clock: Any
) -> None:
    obligation = owed(evaluation, days=1)
    clock.advance(days=2)

    response = api(vendor_a).get(detail(obligation))

    assert response.json()["status"] == "expired"
    obligation.refresh_from_db()
    assert obligation.status == RetestObligation.Status.OPEN  # reads never write


@pytest.mark.parametrize(("persona", "code"), [("vendor_b", 404), ("outsider", 404)])
def test_detail_is_not_found_for_other_organisations(
    persona: str, code: int, evaluation: Evaluation, request: pytest.FixtureRequest
) -> None:
    obligation = owed(evaluation)
    user = request.getfixturevalue(persona)

    assert api(user).get(detail(obligation)).status_code == code
    assert api().get(detail(obligation)).status_code == 401


# --- asking for the re-test ------------------------------------------------------


def test_request_schedules_the_retest_with_the_revised_bundle(
    evaluation: Evaluation, vendor_a: Any, revised: Bundle
) -> None:
    obligation = owed(evaluation)
    bundle = revised

    response = api(vendor_a).post(
        detail(obligation, "request/"), {"bundle": str(bundle.public_id)}, format="json"
    )

    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["attempts_used"]) == ("scheduled", 1)
    assert body["bundle"] == str(bundle.public_id)


@pytest.mark.parametrize(
    "data",
    [{}, {"bundle": "nope"}, {"bundle": "6b1f3a52-0d1e-4c27-9d7b-0a5f2c9e1d11"}],
)
def test_request_explains_bad_input(
    evaluation: Evaluation, vendor_a: Any, data: dict[str, str]
) -> None:
    obligation = owed(evaluation)

    response = api(vendor_a).post(detail(obligation, "request/"), data, format="json")

    assert response.status_code == 400
    assert [p["path"] for p in response.json()["problems"]] == ["bundle"]
    obligation.refresh_from_db()
    assert obligation.status == RetestObligation.Status.OPEN


def test_request_refuses_the_bundle_already_tested(
    evaluation: Evaluation, vendor_a: Any
) -> None:
    obligation = owed(evaluation)
    data = {"bundle": str(evaluation.campaign.bundle.public_id)}

    response = api(vendor_a).post(detail(obligation, "request/"), data, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "bundle_not_revised"


def test_request_of_a_scheduled_obligation_is_a_conflict(
    evaluation: Evaluation, vendor_a: Any, revised: Bundle
) -> None:
    obligation = owed(evaluation)
    data = {"bundle": str(revised.public_id)}
    api(vendor_a).post(detail(obligation, "request/"), data, format="json")

    again = api(vendor_a).post(detail(obligation, "request/"), data, format="json")

    assert again.status_code == 409


@pytest.mark.parametrize(("persona", "code"), [("buyer", 403), ("vendor_b", 404)])
def test_request_is_the_owing_vendors(
    persona: str, code: int, evaluation: Evaluation, request: pytest.FixtureRequest
) -> None:
    obligation = owed(evaluation)
    data = {"bundle": str(evaluation.campaign.bundle.public_id)}
    user = request.getfixturevalue(persona)

    response = api(user).post(detail(obligation, "request/"), data, format="json")

    assert response.status_code == code
