"""What the pages and the API show of an update bundle and the re-validation it
raised: the vendor's dashboard, the gate board, the bundle page, the bundle
detail and gate board APIs; vendor B never sees vendor A's update."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Organisation
from artifacts.models import Bundle
from gates.models import GatePlan
from procurement.models import Rfp
from tests.gates.api.support import api
from tests.gates.support import evaluate_fixture  # noqa: F401
from tests.gates.update_support import DRIVER, passed_and_awarded, update_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def update(
    tmp_path: Path, evaluate: Any, frozen_plan: GatePlan, rfp: Rfp,
    vendor_a_org: Organisation, vendor_a: Any, buyer: Any, gate_bundle: Bundle,
) -> Bundle:  # fmt: skip
    """Vendor A won after its lab validation passed, then deposited a driver
    update of the accepted bundle."""
    passed_and_awarded(evaluate, frozen_plan, rfp, vendor_a_org, buyer)
    bundle = update_bundle(
        tmp_path, rfp, vendor_a_org, vendor_a, supersedes=gate_bundle.sha256,
        changes=[DRIVER],
    )  # fmt: skip
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return bundle


def test_vendor_dashboard_shows_revalidation_and_update(
    update: Bundle, vendor_a: Any, client_for: Any
) -> None:
    page = client_for(vendor_a).get(reverse("portal:dashboard")).content.decode()

    assert "Re-validation of the lab-validation gate due after your update" in page
    assert 'data-testid="update-deposit"' in page
    assert update.sha256[:12] in page


def test_other_vendor_dashboard_shows_none_of_it(
    update: Bundle, vendor_b: Any, client_for: Any
) -> None:
    page = client_for(vendor_b).get(reverse("portal:dashboard")).content.decode()

    assert "Re-validation" not in page
    assert update.sha256[:12] not in page
    assert 'data-testid="update-deposit"' not in page


def test_gate_board_page_says_revalidation_due(
    update: Bundle, rfp: Rfp, buyer: Any, client_for: Any
) -> None:
    url = reverse("gates:board", args=[rfp.public_id])

    page = client_for(buyer).get(url).content.decode()

    assert page.count('data-testid="revalidation-due"') == 1


def test_bundle_page_shows_what_the_update_supersedes_and_changes(
    update: Bundle, gate_bundle: Bundle, buyer: Any, client_for: Any
) -> None:
    url = reverse("artifacts:bundle_detail", args=[update.public_id])

    page = client_for(buyer).get(url).content.decode()

    assert 'data-testid="bundle-supersedes"' in page
    assert gate_bundle.sha256[:12] in page
    assert "gpu_driver" in page
    assert "560.35.03" in page


def test_bundle_api_gives_supersedes_and_changes(
    update: Bundle, gate_bundle: Bundle, vendor_a: Any
) -> None:
    url = reverse("bundle-detail", args=[update.public_id])

    body = api(vendor_a).get(url).json()

    assert body["supersedes"] == gate_bundle.sha256
    assert body["supersedes_id"] == str(gate_bundle.public_id)
    assert body["changes"] == [DRIVER]


def test_plain_bundle_api_supersedes_nothing(
    gate_bundle: Bundle, vendor_a: Any
) -> None:
    url = reverse("bundle-detail", args=[gate_bundle.public_id])

    body = api(vendor_a).get(url).json()

    assert (body["supersedes"], body["supersedes_id"], body["changes"]) == (
        None,
        None,
        [],
    )


def test_gate_board_api_flags_revalidation_due(
    update: Bundle, rfp: Rfp, vendor_a: Any
) -> None:
    url = reverse("gate-board", args=[rfp.public_id])

    body = api(vendor_a).get(url).json()

    gates = {g["gate"]: g for g in body["vendors"][0]["gates"]}
    assert gates["lab-validation"]["revalidation_due"] is True
    assert gates["pilot"]["revalidation_due"] is False


def test_other_vendor_never_sees_the_update_or_its_obligation(
    update: Bundle, rfp: Rfp, vendor_b: Any
) -> None:
    client = api(vendor_b)

    detail = client.get(reverse("bundle-detail", args=[update.public_id]))
    obligations = client.get(reverse("retest-obligation-list")).json()
    board = client.get(reverse("gate-board", args=[rfp.public_id]))

    assert detail.status_code == 404
    assert obligations["results"] == []
    assert board.status_code == 404 or board.json()["vendors"] == []


def test_obligation_api_names_kind_and_no_evaluation(
    update: Bundle, vendor_a: Any
) -> None:
    body = api(vendor_a).get(reverse("retest-obligation-list")).json()

    [obligation] = body["results"]
    assert obligation["kind"] == "update_revalidation"
    assert obligation["evaluation"] is None
    assert obligation["bundle"] == str(update.public_id)


def test_obligation_page_says_what_raised_it(
    update: Bundle, vendor_a: Any, labops: Any, client_for: Any
) -> None:
    obligation = update.retest_obligations.get()
    url = reverse("gates:retest", args=[obligation.public_id])

    page = client_for(vendor_a).get(url).content.decode()
    lab = client_for(labops).get(reverse("portal:dashboard")).content.decode()

    assert 'data-testid="retest-revalidation"' in page
    assert update.sha256[:12] in page
    assert "Start the re-validation of Acme Flash" in lab
    assert client_for(vendor_a).get(reverse("gates:retests")).status_code == 200


def test_upload_page_tells_the_awarded_vendor_to_name_what_it_updates(
    update: Bundle, rfp: Rfp, vendor_a: Any, client_for: Any
) -> None:
    url = reverse("artifacts:bundle_upload", args=[rfp.public_id])

    page = client_for(vendor_a).get(url).content.decode()

    assert 'data-testid="upload-update"' in page
    assert "supersedes" in page
