"""The authorization matrix's worlds.

``foreign_world``: a buyer (Umbrella Buying) with its own lab and audit firm and
two vendors, none of them related to the personas of ``tests/conftest.py``, owning
one of everything a route can name: a draft RFP and a template, a published RFP
still sealed (bids with documents, receipts and a signed bundle), an opened and
awarded RFP (bundle, deposit, breach release, clarification, campaign with runs and
an output, frozen gate plan, evaluation, decision, re-test obligation, an open
dispute of the verdict), a signing
key, an API token and a fixity run. Its distinctive strings must never show to a
persona.

``sealed_world``: a published RFP of the personas' own buyer, still sealed, bid on
by two vendors that are not personas: what the bidding adds (cover notes, claims,
prices, the bundle named) must not show to any buyer-side persona."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from accounts.models import Organisation, Role
from accounts.selectors import clock
from accounts.services.users import api_token_issue
from artifacts.models import Bundle, Deposit, FixityFinding, FixityRun, SigningKey
from artifacts.services.transparency import checkpoint_publish
from benchmarks.models import LabHost, LabPool, Run, RunOutput
from benchmarks.services.host_tokens import host_token_issue
from gates.models import Dispute, RetestObligation
from procurement.models import Bid, BidDocument, BidReceipt, Rfp, RfpTemplate
from tests.accounts.factories import MembershipFactory, OrganisationFactory, UserFactory
from tests.benchmarks.runner import support as runner
from tests.escrow.release_support import award_to, request_breach
from tests.gates.read_support import decide, evaluate, oblige
from tests.gates.support import make_frozen_plan
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_bids import (
    COST_INPUTS,
    submit,
    tender,
    upload,
)
from tests.procurement.factories_bundles import accepted_bundle
from tests.procurement.factories_clarifications import ClarificationFactory

GATE = "lab-validation"
CRITERION = "ttft-p99-cold-c1"


def _signing_host(pool: LabPool, run: Run) -> LabHost:
    """A host of the pool with a pinned key and another one offered, whose
    signed statement the run carries (so the key and statement routes answer)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from artifacts.lib.signatures.statement import fingerprint, public_key_pem
    from artifacts.storage.blobs import blob_put

    key, offered = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    now = clock.now()
    host = LabHost.objects.create(
        pool=pool,
        worker_name="umbrella-agent@umbrella-lab",
        hostname="umbrella-lab",
        registered_at=now,
        last_heartbeat_at=now,
        signing_key=public_key_pem(key).decode("ascii"),
        signing_key_fingerprint=fingerprint(key),
        signing_key_pinned_at=now,
        pending_signing_key=public_key_pem(offered).decode("ascii"),
        pending_signing_key_fingerprint=fingerprint(offered),
        pending_signing_key_at=now,
    )
    envelope = b'{"payloadType": "umbrella-statement"}'
    blob = blob_put(envelope, hashlib.sha256(envelope).hexdigest(), len(envelope))
    Run.objects.filter(pk=run.pk).update(host=host, statement_blob=blob)
    return host


@dataclass
class World:
    """The ids a route's parameters take, and the strings that must not show."""

    ids: dict[str, str]
    secrets: list[str]
    rfps: dict[str, Rfp] = field(default_factory=dict)
    targets: list[Any] = field(default_factory=list)


def _member(org: Organisation, role: str, username: str) -> Any:
    user = UserFactory.create(username=username)
    MembershipFactory.create(user=user, organisation=org, role=role)
    return user


def _org(slug: str, name: str, kind: str) -> Organisation:
    return OrganisationFactory.create(slug=slug, name=name, kind=kind)


def foreign_world(directory: Path) -> World:
    buyer_org = _org("umbrella-buying", "Umbrella Buying", Organisation.Kind.BUYER)
    lab_org = _org("umbrella-lab", "Umbrella Testhaus", Organisation.Kind.LAB)
    audit_org = _org("umbrella-audit", "Umbrella Prufer", Organisation.Kind.AUDIT)
    buyer_org.engages.add(lab_org, audit_org)
    zenith = _org("zenith-store", "Zenith Storeworks", Organisation.Kind.VENDOR)
    quasar = _org("quasar-cache", "Quasar Cacheline", Organisation.Kind.VENDOR)
    ubuyer = _member(buyer_org, Role.BUYER, "umbrella-buyer")
    ulab = _member(lab_org, Role.LABOPS, "umbrella-labops")
    uauditor = _member(audit_org, Role.AUDITOR, "umbrella-auditor")
    uvendor = _member(zenith, Role.VENDOR, "zenith-seller")
    qvendor = _member(quasar, Role.VENDOR, "quasar-seller")

    draft = RfpFactory.create(
        buyer_organisation=buyer_org,
        reference="RFP-UMB-DRAFT",
        title="Umbrella Draft Tender",
        invited=[zenith],
    )
    template = RfpTemplate.objects.create(
        buyer_organisation=buyer_org, name="Umbrella Template Gamma", data={}
    )

    # Sealed: both vendors bid, Zenith with a document and its signed bundle.
    sealed = tender(
        buyer_org,
        zenith,
        quasar,
        reference="RFP-UMB-SEALED",
        title="Umbrella Sealed Tender",
    )
    sealed_bundle = accepted_bundle(sealed, zenith, directory)
    submit(
        sealed,
        uvendor,
        zenith,
        files=(upload("zenith-sizing.pdf"),),
        bundle=str(sealed_bundle.public_id),
        cover_note="Umbrella Obsidian cover",
    )
    submit(sealed, qvendor, quasar, cover_note="Umbrella Basalt cover")
    sealed_bid = Bid.objects.get(rfp=sealed, vendor_organisation=zenith)
    sealed_doc = BidDocument.objects.filter(bid=sealed_bid).first()
    assert sealed_doc is not None
    sealed_receipt = BidReceipt.objects.filter(bid=sealed_bid).first()
    assert sealed_receipt is not None

    # Opened: a runnable bundle, a campaign, a gate plan judged on it, an award.
    opened = RfpFactory.create(
        buyer_organisation=buyer_org,
        reference="RFP-UMB-OPEN",
        title="Umbrella Opened Tender",
        published=True,
        invited=[zenith, quasar],
    )
    bundle = runner.accepted_bundle(directory / "runner", opened, zenith, uvendor)
    pool = runner.make_pool(lab_org, name="umbrella-pool")
    campaign = runner.start(bundle, pool, ulab, repetitions=3)
    plan = make_frozen_plan(opened, zenith, ubuyer)
    evaluation = evaluate(plan, campaign, ubuyer, [230.0, 241.0, 236.5])
    run = campaign.runs.order_by("position").first()
    assert run is not None
    runner.finish(run, outputs={"umbrella-out.txt": b"umbrella output\n"})
    output = RunOutput.objects.filter(run=run).first()
    assert output is not None
    host = _signing_host(pool, run)
    decision = decide(evaluation, ubuyer)
    obligation = RetestObligation.objects.filter(evaluation=evaluation).first()
    obligation = obligation or oblige(evaluation)
    dispute = Dispute.objects.create(
        evaluation=evaluation,
        rfp=opened,
        plan=plan,
        gate=evaluation.gate,
        vendor_organisation=zenith,
        reason="Umbrella dispute: the lab host was loaded.",
        opened_by=uvendor,
        opened_at=clock.now(),
    )
    clarification = ClarificationFactory.create(
        rfp=opened,
        asked_by_organisation=zenith,
        asked_by=uvendor,
        question="Umbrella question about NVMe-oF?",
        answered=True,
    )
    award_to(opened, zenith, ubuyer)
    opened_bid = Bid.objects.get(rfp=opened, vendor_organisation=zenith)
    release = request_breach(opened, ubuyer)
    deposit = Deposit.objects.filter(rfp=opened).first()
    assert deposit is not None
    key = SigningKey.objects.filter(organisation=zenith).first()
    assert key is not None
    token, _ = api_token_issue(user=ubuyer, name="umbrella-token")
    host_token = host_token_issue(pool=pool, name="umbrella-host", actor=ulab).token
    now = clock.now()
    fixity = FixityRun.objects.create(
        trigger=FixityRun.Trigger.values[0],
        started_at=now,
        finished_at=now,
        findings_count=1,
    )
    FixityFinding.objects.create(
        run=fixity,
        kind=FixityFinding.Kind.BLOB_MISSING,
        subject=f"Umbrella blob {deposit.public_id}",
        detail="Umbrella's deposit lost a blob.",
        buyer_organisation=buyer_org,
        rfp_reference=opened.reference,
    )
    checkpoint_publish()  # the log's checkpoint covers the deposits

    ids = {
        "rfp_id": str(opened.public_id),
        "template_id": str(template.public_id),
        "token_id": str(token.public_id),
        "vendor_slug": zenith.slug,
        "vendor": zenith.slug,
        "clarification_id": str(clarification.public_id),
        "bid_id": str(opened_bid.public_id),
        "sha256": sealed_doc.sha256,
        "receipt_id": str(sealed_receipt.public_id),
        "bundle_id": str(bundle.public_id),
        "key_id": str(key.public_id),
        "deposit_id": str(deposit.public_id),
        "release_id": str(release.public_id),
        "run_id": str(run.public_id),
        "run_pk": str(run.pk),  # the runner API's messages name runs by their row
        "path": "results/out.json",  # an output a runner uploads
        "output_id": str(output.pk),
        "gate": GATE,
        "criterion": CRITERION,
        "evaluation_id": str(evaluation.public_id),
        "name": "evaluation",
        "plan_id": str(plan.public_id),
        "decision_id": str(decision.public_id),
        "obligation_id": str(obligation.public_id),
        "dispute_id": str(dispute.public_id),
        "campaign_id": str(campaign.public_id),
        "pool_id": str(pool.public_id),
        "pool_name": pool.name,
        "host_token_id": str(host_token.public_id),
        "host_id": str(host.public_id),
        "fixity_run_id": str(fixity.public_id),
        "sealed_rfp_id": str(sealed.public_id),
        "sealed_bid_id": str(sealed_bid.public_id),
        "sealed_bundle_id": str(sealed_bundle.public_id),
        # The admin's object ids: the opened RFP's row.
        "object_id": str(opened.pk),
        "content_type_id": "1",
        "id": str(ubuyer.pk),
        "app_label": "procurement",
    }
    secrets = [
        "RFP-UMB",
        "Umbrella",
        "umbrella-",
        "zenith-store",
        "Zenith Storeworks",
        "quasar-cache",
        "Quasar Cacheline",
        host_token.prefix,
        *(
            str(b.public_id)
            for b in Bundle.objects.filter(rfp__buyer_organisation=buyer_org)
        ),
        *(b.sha256 for b in Bundle.objects.filter(rfp__buyer_organisation=buyer_org)),
    ]
    world = World(ids=ids, secrets=secrets)
    world.rfps = {"draft": draft, "sealed": sealed, "opened": opened}
    world.targets = [
        draft,
        sealed,
        opened,
        template,
        sealed_bid,
        opened_bid,
        sealed_doc,
        clarification,
        bundle,
        sealed_bundle,
        deposit,
        release,
        campaign,
        run,
        plan,
        evaluation,
        decision,
        obligation,
        dispute,
        key,
        token,
        host_token,
        fixity,
        buyer_org,
        zenith,
        ubuyer,
        uauditor,
    ]
    return world


# What the bidding adds to the personas' own sealed tender (the invited vendors'
# names are the buyer's own act and may show).
SEALED_SECRETS = (
    "Obsidian-5",
    "Basalt-3",
    "163.77",
    "7654321",
    "92.41",
    "1234987",
)


def sealed_world(buyer_org: Organisation, directory: Path) -> World:
    """A sealed tender of the personas' buyer, bid on by two non-persona
    vendors (invited by a factory, so that only the bidding names them)."""
    tide = _org("tidewater-nvme", "Tidewater Nvme", Organisation.Kind.VENDOR)
    kestrel = _org("kestrel-flash", "Kestrel Flash", Organisation.Kind.VENDOR)
    tide_user = _member(tide, Role.VENDOR, "tide-seller")
    kestrel_user = _member(kestrel, Role.VENDOR, "kestrel-seller")
    rfp = RfpFactory.create(
        buyer_organisation=buyer_org,
        reference="RFP-NW-SEALED",
        title="Northwind sealed tender",
        published=True,
        submission_deadline=clock.now() + timedelta(days=14),
        invited=[tide, kestrel],
    )
    bundle = accepted_bundle(rfp, tide, directory / "sealed")
    claims = [{"metric": "ttft_ms", "stat": "p99", "value": 163.77, "unit": "ms"}]
    submit(
        rfp,
        tide_user,
        tide,
        files=(upload("tidewater-sizing.pdf"),),
        bundle=str(bundle.public_id),
        cover_note="Obsidian-5 appliance",
        claims=claims,
        cost_inputs={**COST_INPUTS, "hardware_cost": Decimal("7654321.00")},
    )
    submit(
        rfp,
        kestrel_user,
        kestrel,
        cover_note="Basalt-3 array",
        claims=[{"metric": "ttft_ms", "stat": "p99", "value": 92.41, "unit": "ms"}],
        cost_inputs={**COST_INPUTS, "hardware_cost": Decimal("1234987.00")},
    )
    checkpoint_publish()  # the log's checkpoint covers the bundle's deposit
    bid = Bid.objects.get(rfp=rfp, vendor_organisation=tide)
    document = BidDocument.objects.get(bid=bid)
    receipt = BidReceipt.objects.filter(bid=bid).first()
    assert receipt is not None
    ids = {
        "rfp_id": str(rfp.public_id),
        "bid_id": str(bid.public_id),
        "sha256": document.sha256,
        "receipt_id": str(receipt.public_id),
        "bundle_id": str(bundle.public_id),
        "vendor_slug": tide.slug,
        "vendor": tide.slug,
    }
    secrets = [
        *SEALED_SECRETS,
        str(bundle.public_id),
        bundle.sha256,
        bundle.sha256[:14],
    ]
    return World(ids=ids, secrets=secrets, rfps={"sealed": rfp}, targets=[rfp, bid])
