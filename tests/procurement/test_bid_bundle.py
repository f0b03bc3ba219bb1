"""A bid binds the signed bundle it relies on: the bundle's digests go into the
commitment and the receipt, its claims and cost model become the bid's claims and
cost inputs, and what the vendor types instead is flagged."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from procurement.exceptions import ProcurementError
from procurement.models import Bid, Rfp
from procurement.selectors.evidence_sources import bundles_accepted
from procurement.services.bid_inputs import bid_documents_store
from procurement.services.bids import (
    bid_documents_add,
    bid_reconfirm,
    bids_require_reconfirmation,
)
from tests.artifacts.corpus.build import good_files
from tests.procurement.factories_bids import submit, tender, upload
from tests.procurement.factories_bundles import accepted_bundle

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "acme-flash"
MANIFEST = json.loads((EXAMPLES / "bundle.json").read_text())
COST_MODEL = (EXAMPLES / "cost" / "model.json").read_bytes()
THREE_TYPED = [dict(c) for c in MANIFEST["claims"][:3]]


_BUILT = itertools.count()


def example_bundle(rfp: Rfp, organisation: Organisation, directory: Path) -> Bundle:
    """An accepted bundle with the Acme example's 7 claims and cost model; each
    call's manifest differs (its ``created`` time), so that two are two bundles,
    not the same bytes uploaded twice."""
    files = {**good_files(), "cost/model.json": COST_MODEL}
    created = datetime(2025, 11, 29, 12, tzinfo=UTC) + timedelta(minutes=next(_BUILT))
    return accepted_bundle(
        rfp,
        organisation,
        directory,
        files=files,
        harness=MANIFEST["harness"],
        claims=MANIFEST["claims"],
        created=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def recomputed(contents: dict[str, Any]) -> str:
    text = json.dumps(
        contents, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def rfp(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    clock: Any,
) -> Rfp:
    return tender(buyer_org, vendor_a_org, vendor_b_org)


@pytest.fixture
def bundle(rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path) -> Bundle:
    return example_bundle(rfp, vendor_a_org, tmp_path)


def test_commitment_binds_the_bundle_digests_recomputed_from_the_receipt(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))

    receipt.refresh_from_db()
    assert receipt.contents["bundle"] == {
        "id": str(bundle.public_id),
        "sha256": bundle.sha256,
        "manifest_sha256": bundle.manifest_sha256,
    }
    assert recomputed(receipt.contents) == receipt.commitment
    without = {k: v for k, v in receipt.contents.items() if k != "bundle"}
    assert recomputed(without) != receipt.commitment


def test_bid_stores_the_bundle_it_names(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))

    bid = Bid.objects.get()
    assert str(bid.bundle_public_id) == str(bundle.public_id)
    assert bid.bundle_sha256 == bundle.sha256
    assert bid.bundle_manifest_sha256 == bundle.manifest_sha256


def test_without_a_choice_the_bid_names_the_newest_accepted_bundle(
    rfp: Rfp,
    bundle: Bundle,
    vendor_a: Any,
    vendor_a_org: Organisation,
    tmp_path: Path,
    clock: Any,
) -> None:
    clock.advance(minutes=5)
    newer = example_bundle(rfp, vendor_a_org, tmp_path)

    receipt = submit(rfp, vendor_a, vendor_a_org)

    assert receipt.contents["bundle"]["id"] == str(newer.public_id)


def test_a_bid_without_any_bundle_has_no_bundle_key(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org)

    assert "bundle" not in receipt.contents
    assert Bid.objects.get().bundle_public_id is None
    assert recomputed(receipt.contents) == receipt.commitment


def test_claims_come_from_the_bundle_seven_of_seven_not_three_typed(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org, claims=THREE_TYPED, cost_inputs={})

    bid = Bid.objects.get()
    keys = [(c["metric"], c["stat"], c["scenario"]) for c in bid.claimed_metrics]
    assert keys == [(c["metric"], c["stat"], c["scenario"]) for c in MANIFEST["claims"]]
    assert len(receipt.contents["claims"]) == 7
    assert bid.bundle_differences == {}


def test_cost_inputs_come_from_the_bundles_cost_model(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    receipt = submit(rfp, vendor_a, vendor_a_org, claims=[], cost_inputs={})

    inputs = Bid.objects.get().cost_inputs
    assert inputs.hardware_cost == Decimal("1840000.00")
    assert inputs.rack_units == 8
    assert inputs.delivered_tokens_per_s == Decimal("15360")
    assert receipt.contents["cost_inputs"]["power_draw_kw"] == "9.600"


def test_a_typed_value_that_differs_is_kept_and_flagged(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    typed = [{**MANIFEST["claims"][1], "value": 1900.0}]  # ttft_ms p99 warm-c32-b8

    submit(
        rfp,
        vendor_a,
        vendor_a_org,
        claims=typed,
        cost_inputs={"hardware_cost": "1500000", "rack_units": 8},
    )

    bid = Bid.objects.get()
    flagged = [c for c in bid.claims_with_flags if c["flag"]]
    assert [(c["metric"], c["value"]) for c in flagged] == [("ttft_ms", 1900.0)]
    assert flagged[0]["flag"] == "differs from the signed bundle: bundle says 2400.0 ms"
    assert bid.cost_flags == [
        ("hardware_cost", "differs from the signed bundle: bundle says 1840000.00")
    ]
    assert bid.cost_inputs.hardware_cost == Decimal("1500000.00")


def test_a_typed_claim_the_bundle_does_not_make_is_flagged(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    extra = {"metric": "read_iops", "stat": "mean", "value": 9e5, "unit": "IOPS"}

    submit(rfp, vendor_a, vendor_a_org, claims=[extra])

    bid = Bid.objects.get()
    assert len(bid.claimed_metrics) == 8
    assert bid.bundle_differences["claims"] == {
        "read_iops|mean|": "not in the signed bundle"
    }


@pytest.mark.parametrize("case", ["other_vendor", "other_rfp", "rejected", "unknown"])
def test_a_bundle_the_bid_may_not_name_is_refused_with_a_clear_problem(
    case: str,
    rfp: Rfp,
    buyer_org: Organisation,
    vendor_a: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    tmp_path: Path,
) -> None:
    bundle_id, code = _forbidden_bundle(
        case, rfp, buyer_org, vendor_a_org, vendor_b_org, tmp_path
    )

    with pytest.raises(ProcurementError) as refused:
        submit(rfp, vendor_a, vendor_a_org, bundle=bundle_id)

    assert refused.value.code == code
    assert [p.path for p in refused.value.problems] == ["bundle"]
    assert Bid.objects.count() == 0


def _forbidden_bundle(
    case: str,
    rfp: Rfp,
    buyer_org: Organisation,
    a_org: Organisation,
    b_org: Organisation,
    tmp_path: Path,
) -> tuple[str, str]:
    if case == "other_vendor":
        return str(example_bundle(rfp, b_org, tmp_path).public_id), "bundle_not_found"
    if case == "other_rfp":
        other = tender(buyer_org, a_org)
        return str(example_bundle(other, a_org, tmp_path).public_id), (
            "bundle_other_rfp"
        )
    if case == "rejected":
        bundle = example_bundle(rfp, a_org, tmp_path)
        Bundle.objects.filter(pk=bundle.pk).update(status=Bundle.Status.REJECTED)
        return str(bundle.public_id), "bundle_rejected"
    return "not-a-uuid", "bundle_not_found"


def test_adding_documents_keeps_the_named_bundle(
    rfp: Rfp,
    bundle: Bundle,
    vendor_a: Any,
    vendor_a_org: Organisation,
    tmp_path: Path,
    clock: Any,
) -> None:
    submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))
    clock.advance(minutes=5)
    example_bundle(rfp, vendor_a_org, tmp_path)  # a newer one, not chosen

    receipt = bid_documents_add(
        rfp=rfp,
        organisation=vendor_a_org,
        actor=vendor_a,
        documents=bid_documents_store(uploads=[upload()]),
    )

    assert receipt.contents["bundle"]["id"] == str(bundle.public_id)


def test_reconfirming_binds_the_same_bundle_again(
    rfp: Rfp, bundle: Bundle, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    submit(rfp, vendor_a, vendor_a_org, bundle=str(bundle.public_id))
    bids_require_reconfirmation(rfp=rfp, actor=None, note="addendum 1")

    receipt = bid_reconfirm(rfp=rfp, organisation=vendor_a_org, actor=vendor_a)

    assert receipt.contents["bundle"]["id"] == str(bundle.public_id)
    assert recomputed(receipt.contents) == receipt.commitment


def test_only_accepted_bundles_of_the_rfp_are_offered(
    rfp: Rfp,
    bundle: Bundle,
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    tmp_path: Path,
) -> None:
    rejected = example_bundle(rfp, vendor_a_org, tmp_path)
    Bundle.objects.filter(pk=rejected.pk).update(status=Bundle.Status.REJECTED)
    example_bundle(tender(buyer_org, vendor_a_org), vendor_a_org, tmp_path)

    offered = bundles_accepted(rfp, vendor_a_org.pk)

    assert [b.bundle_id for b in offered] == [str(bundle.public_id)]
    assert offered[0].cost_model == COST_MODEL
    assert offered[0].cost_model_path == "cost/model.json"
