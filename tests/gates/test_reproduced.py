"""``lab_validations_for``: each vendor's lab-validation verdict and, per
claim, the lab's estimate and the criterion's verdict."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organisation
from gates.selectors.reproduced import NOT_REPRODUCED, lab_validations_for
from procurement.models import Rfp
from tests.gates.reproduced_support import (
    HONEST,
    OVERCLAIMING,
    Reproduce,
    evaluate_again,
)

pytestmark = pytest.mark.django_db


def _validations(rfp: Rfp) -> dict[str, Any]:
    bids = rfp.bids.select_related("vendor_organisation")
    found = lab_validations_for(rfp, bids)
    return {b.vendor_organisation.slug: found[b.vendor_organisation_id] for b in bids}


def test_gate_verdict_per_vendor(two_vendors: Rfp) -> None:
    found = _validations(two_vendors)

    assert (found["acme-flash"].verdict, found["acme-flash"].passed) == ("PASS", True)
    assert (found["bolt-storage"].verdict, found["bolt-storage"].chip) == (
        "FAIL",
        "badge-fail",
    )
    assert found["acme-flash"].gate == "lab-validation"
    assert found["acme-flash"].url == (
        f"/gates/rfps/{two_vendors.public_id}/vendors/acme-flash/gates/lab-validation/"
    )


def test_claims_matched_by_metric_stat_and_scenario(two_vendors: Rfp) -> None:
    bid = two_vendors.bids.get(vendor_organisation__slug="bolt-storage")

    claims = _validations(two_vendors)["bolt-storage"].claims(bid.claimed_metrics)

    ttft, tput, iops = claims
    assert (ttft.result.criterion, ttft.result.estimate, ttft.verdict) == (
        "ttft-p99-cold-c1",
        410.0,
        "FAIL",
    )
    assert (ttft.result.ci_low, ttft.result.ci_high, ttft.unit) == (400.0, 420.0, "ms")
    assert (tput.result.estimate, tput.unit, tput.verdict) == (610.0, "tok/s", "FAIL")
    assert ttft.url.endswith("/gates/lab-validation/criteria/ttft-p99-cold-c1/")
    assert iops.result is None
    assert iops.url == ""
    assert not iops.reproduced


def test_claim_of_another_scenario_is_not_matched(two_vendors: Rfp) -> None:
    claim = {"metric": "ttft_ms", "stat": "p99", "scenario": "warm-c1", "value": 1}

    [reproduced] = _validations(two_vendors)["acme-flash"].claims([claim])

    assert reproduced.result is None


def test_vendor_without_evaluation_is_not_yet_reproduced(
    reproduce: Reproduce, vendor_a_org: Organisation, vendor_a: Any
) -> None:
    rfp = reproduce((vendor_a_org, vendor_a, None))

    found = _validations(rfp)["acme-flash"]

    assert (found.evaluation, found.label, found.url) == (None, NOT_REPRODUCED, "")
    assert found.plan is not None
    assert found.claims(rfp.bids.get().claimed_metrics)[0].result is None


def test_latest_evaluation_of_the_first_gate_wins(
    reproduce: Reproduce,
    buyer_org: Organisation,
    labops: Any,
    vendor_a_org: Organisation,
    vendor_a: Any,
) -> None:
    rfp = reproduce((vendor_a_org, vendor_a, OVERCLAIMING))
    latest = evaluate_again(rfp, "acme-flash", buyer_org, labops, HONEST)

    found = _validations(rfp)["acme-flash"]

    assert (found.evaluation.pk, found.verdict) == (latest.pk, "PASS")


def test_nothing_is_read_while_sealed(
    two_vendors: Rfp, django_assert_num_queries: Any
) -> None:
    bids = list(two_vendors.bids.select_related("vendor_organisation"))
    Rfp.objects.filter(pk=two_vendors.pk).update(status=Rfp.Status.CLOSED)
    two_vendors.refresh_from_db()

    with django_assert_num_queries(0):
        found = lab_validations_for(two_vendors, bids)

    assert {v.verdict for v in found.values()} == {""}


def test_three_queries_whatever_the_number_of_vendors(
    reproduce: Reproduce,
    vendor_a_org: Organisation,
    vendor_a: Any,
    two_vendors: Rfp,
    django_assert_num_queries: Any,
) -> None:
    one = reproduce((vendor_a_org, vendor_a, HONEST))

    for rfp in (one, two_vendors):
        bids = list(rfp.bids.select_related("vendor_organisation"))
        with django_assert_num_queries(3):
            found = lab_validations_for(rfp, bids)
        assert all(v.evaluation is not None and v.results for v in found.values())
