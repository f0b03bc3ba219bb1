"""An opened RFP where the lab has reproduced vendors' claims: each vendor's
signed runner bundle, a submitted bid claiming TTFT p99 and output-token
throughput in ``cold-c1`` (and one IOPS claim no criterion judges), a frozen
plan judging both claims, and the lab-validation gate evaluated by
``gate_judge`` on a campaign whose runs finished at chosen values.

The fixtures ``reproduce`` (the builder) and ``two_vendors`` (Acme passes, Bolt
fails) are loaded under ``tests/gates`` by its ``conftest.py``; other test
folders import them from here."""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.models import Bundle
from benchmarks.models import Campaign
from gates.models import Evaluation, GatePlan
from gates.services.pipeline import gate_judge
from procurement.models import Bid, Rfp
from tests.artifacts.ingest_support import build_bundle, ingest, open_rfp
from tests.artifacts.ingest_support import register_corpus_keys as register_keys
from tests.benchmarks.runner.support import (
    bundle_files,
    finish,
    make_pool,
    runner_manifest,
    start,
)
from tests.gates.support import CRITERION, make_frozen_plan, plan_document
from tests.procurement.factories import BidFactory

THROUGHPUT: dict[str, Any] = {
    **CRITERION,
    "id": "tput-mean-cold-c1",
    "metric": "output_token_throughput_tps",
    "stat": "mean",
    "direction": "higher",
    "claim": 1100.0,
}
CLAIMS: list[dict[str, Any]] = [
    {"metric": "ttft_ms", "stat": "p99", "scenario": "cold-c1", "value": 180.0}
    | {"unit": "ms"},
    {"metric": "output_token_throughput_tps", "stat": "mean", "scenario": "cold-c1"}
    | {"value": 1100.0, "unit": "tok/s"},
    {"metric": "read_iops", "stat": "mean", "scenario": "cold-c1", "value": 9000.0}
    | {"unit": "IO/s"},
]
KEYS = {"acme-flash": "vendor_a", "bolt-storage": "vendor_b"}
# (TTFT p99 ms, throughput tok/s) of the three runs
HONEST = ([170.0, 172.0, 175.0], [1050.0, 1060.0, 1070.0])
OVERCLAIMING = ([400.0, 410.0, 420.0], [600.0, 610.0, 620.0])


def lab_rfp(buyer_org: Organisation, *vendors: Organisation, actor: Any) -> Rfp:
    """A published RFP inviting ``vendors`` (corpus keys registered)."""
    register_keys([v for v in vendors if not v.signing_keys.exists()], actor)
    reference = f"RFP-LAB-{uuid.uuid4().hex[:6].upper()}"
    return open_rfp(*vendors, reference=reference, buyer=buyer_org)


def runner_bundle(directory: Path, rfp: Rfp, vendor: Organisation, user: Any) -> Bundle:
    files = bundle_files()
    manifest = runner_manifest(files, rfp, vendor)
    path = build_bundle(
        directory / vendor.slug, files, key=KEYS[vendor.slug], manifest=manifest
    )
    bundle = ingest(rfp, vendor, user, path)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return bundle


def bid_with_claims(rfp: Rfp, vendor: Organisation) -> Bid:
    return BidFactory.create(
        rfp=rfp, vendor_organisation=vendor, claimed_metrics=copy.deepcopy(CLAIMS)
    )


def open_bids(rfp: Rfp) -> Rfp:
    Rfp.objects.filter(pk=rfp.pk).update(status=Rfp.Status.OPENED)
    rfp.refresh_from_db()
    return rfp


def lab_plan(rfp: Rfp, vendor: Organisation, buyer: Any) -> GatePlan:
    document = plan_document(
        rfp.reference, vendor.slug, criteria=[CRITERION, THROUGHPUT]
    )
    return make_frozen_plan(rfp, vendor, buyer, document)


def lab_campaign(
    bundle: Bundle, buyer_org: Organisation, labops: Any, values: tuple
) -> Campaign:
    bundle.rfp.refresh_from_db()
    lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
    pool = make_pool(lab, name=f"pool-{uuid.uuid4().hex[:8]}")
    campaign = start(bundle, pool, labops, repetitions=3)
    runs = campaign.runs.filter(scenario_name="cold-c1").order_by("repetition")
    for run, ttft, tput in zip(runs, *values, strict=True):
        metrics = [
            {"name": "ttft_ms", "stat": "p99", "value": ttft},
            {"name": "output_token_throughput_tps", "stat": "mean", "value": tput}
            | {"unit": "tok/s"},
        ]
        finish(run, metrics=metrics)
    return campaign


def evaluate_lab(
    plan: GatePlan, campaign: Campaign, actor: Any | None = None
) -> Evaluation:
    return gate_judge(plan=plan, gate="lab-validation", campaign=campaign, actor=actor)


def evaluate_again(
    rfp: Rfp, vendor: str, buyer_org: Organisation, labops: Any, values: tuple
) -> Evaluation:
    """The vendor's frozen plan evaluated again, on a new campaign of its bundle
    whose runs finish at ``values``."""
    plan = GatePlan.objects.get(rfp=rfp, vendor_organisation__slug=vendor)
    bundle = Bundle.objects.get(rfp=rfp, organisation=plan.vendor_organisation)
    return evaluate_lab(plan, lab_campaign(bundle, buyer_org, labops, values))


def reproduced_rfp(
    tmp_path: Path,
    buyer_org: Organisation,
    buyer: Any,
    labops: Any,
    vendors: list[tuple[Organisation, Any, tuple | None]],
) -> Rfp:
    """The opened RFP: per (vendor, a user of it, run values or None for "not
    evaluated yet") a bundle, a bid and a plan, evaluated where values are given."""
    rfp = lab_rfp(buyer_org, *[v for v, _, _ in vendors], actor=vendors[0][1])
    bundles = [runner_bundle(tmp_path, rfp, v, user) for v, user, _ in vendors]
    for vendor, _, _ in vendors:
        bid_with_claims(rfp, vendor)
    rfp = open_bids(rfp)
    for bundle, (vendor, _, values) in zip(bundles, vendors, strict=True):
        plan = lab_plan(rfp, vendor, buyer)
        if values is not None:
            evaluate_lab(plan, lab_campaign(bundle, buyer_org, labops, values))
    return rfp


Reproduce = Callable[..., Rfp]


@pytest.fixture(name="reproduce")
def reproduce_fixture(
    tmp_path: Path, buyer_org: Organisation, buyer: Any, labops: Any
) -> Reproduce:
    """``reproduce((vendor_org, vendor_user, values or None), ...)``:
    :func:`reproduced_rfp` of the buyer and the lab operator, each call's bundles
    in a folder of their own."""
    calls = itertools.count()

    def make(*vendors: tuple[Organisation, Any, tuple | None]) -> Rfp:
        folder = tmp_path / f"reproduced-{next(calls)}"
        return reproduced_rfp(folder, buyer_org, buyer, labops, list(vendors))

    return make


@pytest.fixture(name="two_vendors")
def two_vendors_fixture(
    reproduce: Reproduce,
    vendor_a_org: Organisation,
    vendor_a: Any,
    vendor_b_org: Organisation,
    vendor_b: Any,
) -> Rfp:
    """Acme's runs reproduce its claims (PASS); Bolt over-claims (FAIL)."""
    return reproduce(
        (vendor_a_org, vendor_a, HONEST), (vendor_b_org, vendor_b, OVERCLAIMING)
    )
