"""The re-test pages: a vendor sees only its own obligations and asks for the
re-test with a revised bundle; the buyer side and the engaged lab see the RFP's;
the lab operator starts the re-test campaign; the status is read by the clock
(the page never writes); other organisations get 404."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from artifacts.models import Bundle, Release
from benchmarks.services.pools import host_register
from gates.models import GatePlan, RetestObligation
from gates.services.obligations import obligation_request_retest
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.benchmarks.runner.support import (
    GOOD_HARNESS,
    accepted_bundle,
    make_pool,
    worker,
)
from tests.escrow.release_support import award_to
from tests.gates.support import finish_runs

pytestmark = pytest.mark.django_db

OB = RetestObligation.Status


@pytest.fixture
def obligation(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any, clock: Any
) -> RetestObligation:
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": [230.0, 241.0, 236.5]})
    gate_judge(plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer)
    return RetestObligation.objects.get()


@pytest.fixture
def revised(tmp_path: Path, rfp: Rfp, vendor_a_org: Any, vendor_a: Any) -> Bundle:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.PUBLISHED)
    harness = GOOD_HARNESS + b"\n# revised\n"
    return accepted_bundle(
        tmp_path / "revised", rfp, vendor_a_org, vendor_a, harness=harness
    )


def detail(obligation: RetestObligation) -> str:
    return reverse("gates:retest", args=[obligation.public_id])


@pytest.mark.parametrize("who", ["vendor_a", "buyer", "evaluator", "labops", "auditor"])
def test_list_shows_the_obligation_to_its_vendor_and_the_buyers_side(
    who: str, obligation: RetestObligation, client_for: Any, request: Any
) -> None:
    body = client_for(request.getfixturevalue(who)).get(reverse("gates:retests"))

    assert detail(obligation) in body.content.decode()


@pytest.mark.parametrize("who", ["vendor_b", "outsider"])
def test_others_see_an_empty_list_and_404(
    who: str, obligation: RetestObligation, client_for: Any, request: Any
) -> None:
    client = client_for(request.getfixturevalue(who))

    listed = client.get(reverse("gates:retests")).content.decode()
    assert 'data-testid="retest-empty"' in listed
    assert detail(obligation) not in listed
    assert client.get(detail(obligation)).status_code == 404


def test_vendor_page_shows_terms_and_the_request_form(
    obligation: RetestObligation, revised: Bundle, client_for: Any, vendor_a: Any
) -> None:
    body = client_for(vendor_a).get(detail(obligation)).content.decode()

    assert "0 of 2 used (2 left)" in body
    assert "borne by the vendor" in body
    assert "ttft-p99-cold-c1: " in body
    assert 'data-testid="retest-request-form"' in body
    assert str(revised.public_id) in body
    assert reverse("artifacts:bundle_upload", args=[obligation.rfp.public_id]) in body
    criterion = reverse(
        "gates:criterion",
        args=[
            obligation.rfp.public_id,
            "acme-flash",
            obligation.gate,
            "ttft-p99-cold-c1",
        ],
    )
    assert criterion in body
    assert "Re-test obligation raised" in body  # the history, labelled


def test_vendor_requests_the_retest(
    obligation: RetestObligation, revised: Bundle, client_for: Any, vendor_a: Any
) -> None:
    url = reverse("gates:retest_request", args=[obligation.public_id])

    response = client_for(vendor_a).post(url, {"bundle": str(revised.public_id)})

    assert response.status_code == 302
    obligation.refresh_from_db()
    assert (obligation.status, obligation.bundle) == (OB.SCHEDULED, revised)


def test_only_the_vendor_requests_and_only_its_revised_bundles(
    obligation: RetestObligation, client_for: Any, vendor_a: Any, buyer: Any
) -> None:
    url = reverse("gates:retest_request", args=[obligation.public_id])
    failed_bundle = obligation.evaluation.campaign.bundle

    assert client_for(buyer).post(url, {"bundle": "x"}).status_code == 403
    client_for(vendor_a).post(url, {"bundle": str(failed_bundle.public_id)})

    obligation.refresh_from_db()
    assert obligation.status == OB.OPEN


def test_lab_operator_starts_the_retest_campaign(
    obligation: RetestObligation,
    revised: Bundle,
    client_for: Any,
    vendor_a: Any,
    labops: Any,
) -> None:
    obligation_request_retest(obligation=obligation, bundle=revised, actor=vendor_a)
    pool = make_pool(obligation.rfp.buyer_organisation.engages.get(kind="lab"), "rt")
    client = client_for(labops)
    assert (
        'data-testid="retest-start-form"'
        in client.get(detail(obligation)).content.decode()
    )
    url = reverse("gates:retest_campaign_start", args=[obligation.public_id])

    assert (
        client_for(vendor_a).post(url, {"pool": str(pool.public_id)}).status_code == 403
    )
    response = client.post(url, {"pool": str(pool.public_id)})

    obligation.refresh_from_db()
    assert obligation.campaign is not None
    assert response["Location"] == reverse(
        "benchmarks:campaign_detail", args=[obligation.campaign.public_id]
    )


def test_page_reads_expiry_by_the_clock_without_writing(
    obligation: RetestObligation, client_for: Any, vendor_a: Any, clock: Any
) -> None:
    clock.advance(days=31)

    body = client_for(vendor_a).get(detail(obligation)).content.decode()

    assert "Expired · breach" in body
    assert 'data-testid="retest-request-form"' not in body
    obligation.refresh_from_db()
    assert (obligation.status, obligation.breached_at) == (OB.OPEN, None)


def test_release_request_form_offers_the_vendors_breach(
    obligation: RetestObligation,
    client_for: Any,
    buyer: Any,
    rfp: Rfp,
    vendor_a_org: Any,
    clock: Any,
) -> None:
    award_to(rfp, vendor_a_org, buyer)
    url = reverse("artifacts:release_request", args=[rfp.public_id])
    assert (
        'data-testid="release-breach"'
        not in client_for(buyer).get(url).content.decode()
    )
    clock.advance(days=31)

    body = client_for(buyer).get(url).content.decode()
    response = client_for(buyer).post(
        url,
        {"condition": "breach", "statement": "", "breach": str(obligation.public_id)},
    )

    assert 'data-testid="release-breach"' in body
    assert "Re-test of lab-validation expired" in body
    assert response.status_code == 302
    release = Release.objects.get()
    assert release.statement.startswith(f"Re-test obligation {obligation.public_id}")


def test_the_retest_form_chooses_a_pool_with_an_online_host(
    obligation: RetestObligation,
    revised: Bundle,
    client_for: Any,
    vendor_a: Any,
    labops: Any,
    clock: Any,
) -> None:
    obligation_request_retest(obligation=obligation, bundle=revised, actor=vendor_a)
    lab = obligation.rfp.buyer_organisation.engages.get(kind="lab")
    lost = make_pool(lab, "a-lost")  # alphabetically first, its host silent
    host_register(pool=lost, worker=worker("w0@old-host"))
    clock.advance(hours=1)
    host_register(pool=make_pool(lab, "z-online"), worker=worker())

    body = " ".join(client_for(labops).get(detail(obligation)).content.decode().split())

    options = body.split('data-testid="retest-pool">')[1].split("</select>")[0]
    first, *others = options.split("</option>")[:-1]
    assert "selected" in first
    assert "z-online · 1 host online" in first
    assert any("a-lost · no host online" in o for o in others)
    assert not any("selected" in o for o in others)
