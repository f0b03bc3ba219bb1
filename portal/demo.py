"""The demo data, made through the services (so the trail shows it).

The two example bundles (``examples/acme-flash``, ``examples/bolt-storage``) are
built with ``artifacts.lib.bundle_build``, signed with a throwaway Ed25519 key per
vendor kept under ``VAR_DIR/demo-keys`` (never in the repository; reused by later
seeds), and ingested for RFP-DEMO-1 unless the vendor already has an accepted
bundle there.

RFP-DEMO-2 ("lab validation") is the lab's playground; it takes a bid only with
a bundle covering its mandatory artifacts (container image and runbook
included), which the examples do. Its trail reads as a real tender in order:
published with its submission deadline a few seconds ahead, both vendors bid and
submit the example bundles, the deadline passes
(the seed waits for the real clock, doing the rest of its work meanwhile; a
frozen test clock is moved instead), the deadline service closes it, and two
buyer-side members request and confirm the opening. Every recorded time and
every audit row follows the one before it, all before the seed ends: the
deadline shows as passed, never "in 0 minutes" beside an opened RFP. The lab
pool ``local`` (northwind-lab) is what ``scripts/run``'s embedded lab agent
consumes, so labops can start campaigns on both bundles at once.

With ``lab_in_background`` or ``lab_validation`` (below), the buyer's gate plans
follow once RFP-DEMO-2 is opened, for each vendor, made through the plan services:
v1, the default plan from the vendor's bundle claims and the RFP's terms, frozen;
then v2, in which the buyer accepts the lab's environment as the reference
(``LAB_ENVIRONMENT_NOTE``) and drops lab validation's ``env-drift`` stop-loss (no
demo host is the vendors' declared GPU server, so every run drifts majorly and v1
halts both), frozen, superseding v1.

Then the lab re-runs both bundles for real: a campaign per vendor on pool
``local`` by ``labops``, only the runs of the claimed scenarios executed by the
runner code (the bundle fetched and its harness run in the sandbox), three
repetitions each (the harness's other scenarios are not run), about a minute per
vendor on 2 cores, and lab validation judged on each campaign with v2: Acme Flash
passes; Bolt Storage over-claims its latencies and fails, which raises a re-test
obligation on it. Two ways:

- ``lab_in_background`` (``seed_demo --lab-in-background``, as ``scripts/run``
  seeds): the seed only starts a gate campaign per vendor for lab validation
  (``gate_campaign_start``: the campaign linked to v2's gate, its runs queued on the
  pool), which takes a second; the pool's lab agent (``scripts/run``'s supervisor
  starts it) runs them once everything has started, and when a campaign's last run
  ends ``campaign_ended_judge`` evaluates it, as for any campaign started for a
  gate. The evaluations appear a couple of minutes after the login page answers.
- ``lab_validation`` (``seed_demo --lab-validation``; for tests that need the
  verdicts at once): synchronously in the seed, each run executed here by the lab
  agent's own run path in process (``portal.lab_loopback``: the agent's
  ``execute_run`` through the runner API's views, with a host token of its own for
  the seed, revoked after it) and ``gate_judge`` called on each campaign; a
  campaign and its evaluation commit together, so an interrupted seed leaves no
  half campaign and the next seed runs it again.

Either way a vendor that has any campaign on RFP-DEMO-2 already gets no new one, and
a host where bubblewrap does not work gets no lab runs at all (the seed says so), so
that no lab deviation of a weaker sandbox is judged.

With ``opening_in`` (``seed_demo --opening-in MINUTES``; ``scripts/run`` passes 5),
RFP-DEMO-3 ("opening") is made last: published with its submission deadline that
many minutes ahead, both vendors' bundles and sealed bids in, so that two people on
the buyer side (``buyer`` requests, ``evaluator`` confirms) open its bids by hand
once the deadline has passed. Made once: a later seed leaves it as it is (open
still, or past its deadline and waiting for the opening, or opened)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.exceptions import ApplicationError
from accounts.models import Membership, Organisation, Role
from accounts.selectors import clock
from accounts.services.users import (
    membership_grant,
    organisation_create,
    organisation_engage,
    user_create,
)
from artifacts.lib.bundle_build import build_bundle
from artifacts.lib.signatures.sshkeys import SshPrivateKey, load_private_key
from artifacts.models import Bundle
from artifacts.selectors.bundles import (
    bundle_list_accepted_for,
    signing_key_get_by_fingerprint,
)
from artifacts.services.ingest import bundle_ingest
from artifacts.services.keys import signing_key_register
from benchmarks.lib.queues import EMBEDDED_POOL
from benchmarks.lib.sandbox.capabilities import host_support
from benchmarks.models import Campaign, LabPool, Run
from benchmarks.services.campaigns import campaign_cancel, campaign_start
from benchmarks.services.pools import host_stop, pool_create
from benchmarks.services.runs import FINAL
from gates.models import GatePlan
from gates.services.pipeline import gate_judge
from gates.services.plans import (
    plan_create_default,
    plan_freeze,
    plan_new_version,
    plan_update,
)
from gates.services.runs import gate_campaign_start
from portal.demo_reports import signed_report_files
from portal.demo_scenarios import (
    RESILIENCE_GATE,
    RESILIENCE_REPETITIONS,
    baseline_sources,
    resilience_problem,
    with_resilience_gate,
)
from portal.lab_loopback import LoopbackAgent, loopback_agent
from procurement.lib.defaults import default_configuration
from procurement.models import Rfp
from procurement.selectors.requirements import requirements_document
from procurement.services.bids import bid_submit
from procurement.services.deadlines import rfp_apply_deadlines
from procurement.services.opening import bid_opening_confirm, bid_opening_request
from procurement.services.requirements import rfp_set_requirements
from procurement.services.rfp_lifecycle import rfp_publish
from procurement.services.rfps import rfp_create, rfp_invite_vendor

DEMO_PASSWORD = "reprogate-demo"  # noqa: S105 - documented demo credential, DEBUG only

ORGANISATIONS = [
    ("northwind-ai", "Northwind AI", Organisation.Kind.BUYER),
    ("acme-flash", "Acme Flash", Organisation.Kind.VENDOR),
    ("bolt-storage", "Bolt Storage", Organisation.Kind.VENDOR),
    ("northwind-lab", "Northwind Lab", Organisation.Kind.LAB),
    ("ledger-audit", "Ledger Audit", Organisation.Kind.AUDIT),
]
ACCOUNTS = [
    ("buyer", "northwind-ai", Role.BUYER),
    ("evaluator", "northwind-ai", Role.EVALUATOR),
    ("vendor-a", "acme-flash", Role.VENDOR),
    ("vendor-b", "bolt-storage", Role.VENDOR),
    ("labops", "northwind-lab", Role.LABOPS),
    ("auditor", "ledger-audit", Role.AUDITOR),
]
DEMO_RFP = "RFP-DEMO-1"
LAB_RFP = "RFP-DEMO-2"
OPENING_RFP = "RFP-DEMO-3"
LAB_POOL = EMBEDDED_POOL  # scripts/run's embedded lab agent serves it
SEED_HOST = "seed-demo"  # the synchronous seed's one-shot host on LAB_POOL
# Two bundles and two bids (their signed reports are made before): about 2 s on a
# quiet machine, more on a busy one; a late bid is refused and the RFP would end
# without the lab's second vendor.
LAB_DEADLINE_AHEAD = timedelta(seconds=6)
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
DEMO_BUNDLES = [("acme-flash", "vendor-a"), ("bolt-storage", "vendor-b")]
BUYER = "northwind-ai"  # its baseline bundle is signed with its own demo key
BASELINE_REPETITIONS = 3
BASELINE_CAMPAIGN_NOTE = (
    "Baseline (demo seed): the open harness on today's infrastructure, "
    "3 repetitions each."
)
LAB_GATE = "lab-validation"
# RFP-DEMO-2 takes a bid only with a bundle covering its mandatory artifacts,
# these two among them (the examples hold an image reference and a runbook).
LAB_MANDATORY_KINDS = ("container_image", "runbook")
LAB_REPETITIONS = 3  # the default plan's min_runs
LAB_ENVIRONMENT_NOTE = (
    "Our reference lab (Debian 12, virtio NICs) stands in for the production GPU "
    "servers during lab validation; drift from the vendors' manifests is accepted."
)
LAB_CAMPAIGN_NOTE = (
    "Lab validation (demo seed): the claimed scenarios, 3 repetitions each."
)
Progress = Callable[[str], None]


@dataclass
class SeedReport:
    created: list[str]

    def __str__(self) -> str:
        if not self.created:
            return "Demo data already present; nothing changed."
        return "Created: " + ", ".join(self.created)


def demo_seed(
    *,
    lab_validation: bool = False,
    lab_in_background: bool = False,
    lab_resilience: bool = True,
    progress: Progress | None = None,
    opening_in: timedelta | None = None,
) -> SeedReport:
    """Idempotent: creates only what is missing, never resets passwords or state.
    The bundles are ingested after the rest is committed (ingest writes storage
    before its own transaction). ``lab_validation``: also RFP-DEMO-2's gate plans,
    lab runs and evaluations, here and now (see the module docstring), telling
    ``progress`` each step of the runs. ``lab_in_background``: also the gate plans,
    and the lab's gate campaigns started on pool ``local`` for its lab agent to run
    (the gate is evaluated when they end), telling ``progress`` in one line; not
    both. ``lab_resilience`` False: no campaign for the lab-resilience gate in
    the background. ``opening_in``: also RFP-DEMO-3, whose deadline passes that
    long after this seed, for a two-person opening by hand."""
    if lab_validation and lab_in_background:
        raise ValueError("lab_validation runs the lab here, lab_in_background later")
    report = _seed_records()
    if Rfp.objects.filter(reference=LAB_RFP, status=Rfp.Status.PUBLISHED).exists():
        for vendor, username in DEMO_BUNDLES:  # first: its deadline is near
            # the bundle first: the bid names it and takes its claims
            _seed_bundle(report, vendor=vendor, username=username, reference=LAB_RFP)
            _seed_bid(report, vendor=vendor, username=username)
    for vendor, username in DEMO_BUNDLES:
        _seed_bundle(report, vendor=vendor, username=username)
    _open_lab_rfp(report)
    _seed_baseline_bundle(report)
    if lab_validation or lab_in_background:
        _seed_gate_plans(report)
        if lab_in_background:
            _start_lab_campaigns(
                report, progress or (lambda line: None), lab_resilience
            )
        else:
            _seed_lab_validation(report, progress or (lambda line: None))
    if opening_in is not None:
        _seed_opening_rfp(report, opening_in)
    return report


@transaction.atomic
def _seed_records() -> SeedReport:
    report = SeedReport(created=[])
    orgs: dict[str, Organisation] = {}
    for slug, name, kind in ORGANISATIONS:
        org = Organisation.objects.filter(slug=slug).first()
        if org is None:
            org = organisation_create(slug=slug, name=name, kind=kind, actor=None)
            report.created.append(f"organisation {slug}")
        orgs[slug] = org
    buyer = orgs["northwind-ai"]
    for provider in ("northwind-lab", "ledger-audit"):
        if not buyer.engages.filter(pk=orgs[provider].pk).exists():
            organisation_engage(buyer=buyer, provider=orgs[provider], actor=None)
    users = get_user_model().objects
    for username, org_slug, role in ACCOUNTS:
        user = users.filter(username=username).first()
        if user is None:
            user = user_create(
                username=username,
                password=DEMO_PASSWORD,
                email=f"{username}@{org_slug}.example",
                actor=None,
            )
            report.created.append(f"user {username}")
        if not Membership.objects.filter(
            user=user, organisation=orgs[org_slug], role=role
        ).exists():
            membership_grant(
                user=user, organisation=orgs[org_slug], role=role, actor=None
            )
    if not Rfp.objects.filter(reference=DEMO_RFP).exists():
        _seed_demo_rfp(buyer=buyer, vendors=[orgs["acme-flash"], orgs["bolt-storage"]])
        report.created.append(f"RFP {DEMO_RFP}")
    if not Rfp.objects.filter(reference=LAB_RFP).exists():
        for vendor, _ in DEMO_BUNDLES:  # seconds each: before its deadline runs
            _signed_report(vendor, demo_key(vendor))
        _seed_lab_rfp(buyer=buyer, vendors=[orgs["acme-flash"], orgs["bolt-storage"]])
        report.created.append(f"RFP {LAB_RFP}")
    if not LabPool.objects.filter(name=LAB_POOL).exists():
        pool_create(
            lab_organisation=orgs["northwind-lab"],
            name=LAB_POOL,
            description="This machine: the embedded lab agent of scripts/run.",
            hardware_class="any Linux host",
            actor=None,
        )
        report.created.append(f"lab pool {LAB_POOL}")
    return report


DEMO_DESCRIPTION = """\
Northwind AI runs a **64-GPU inference cluster** (8 hosts with 8 GPUs each) serving
chat and code models to several internal tenants. Long contexts make the
KV cache outgrow GPU memory; we want to **tier it to NVMe over Fabrics** so
that evicted prefixes are reloaded instead of recomputed.

We buy on evidence anyone can re-run. Every claim in a bid must come with:

- the workloads, environment manifests and harness that produced it;
- raw traces, so that our lab can recompute every percentile;
- signed, time-stamped reports.

| Today | Target |
|---|---|
| TTFT p99 at 32 concurrent streams: 2.4 s | ≤ 0.8 s |
| Prefix recomputation share: 38 % | ≤ 10 % |

Acceptance is gate-based: our lab re-runs your harness on the delivered
system before each roll-out stage.
"""


def _seed_demo_rfp(*, buyer: Organisation, vendors: list[Organisation]) -> None:
    actor = get_user_model().objects.get(username="buyer")
    now = clock.now().replace(second=0, microsecond=0)
    configuration = {
        **default_configuration(),
        "description": DEMO_DESCRIPTION,
        "min_bids": 2,
    }
    rfp = rfp_create(
        reference=DEMO_RFP,
        title="KV-cache tiering over NVMe-oF for a 64-GPU inference cluster",
        buyer_organisation=buyer,
        questions_deadline=now + timedelta(days=20),
        submission_deadline=now + timedelta(days=30),
        configuration=configuration,
        actor=actor,
    )
    _set_demo_requirements(rfp, actor)
    for vendor in vendors:
        rfp_invite_vendor(rfp=rfp, vendor=vendor, actor=actor)
    rfp_publish(rfp=rfp, actor=actor)


# What both demo RFPs demand (reprogate.rfp-requirements/v1, less the metrics and
# artifacts, which stay the RFP's rows): the chat-70b story the examples tell.
DEMO_REQUIREMENTS: Final[dict[str, Any]] = {
    "approaches": ["nvme-of-appliance", "kv-cache-tiering"],
    "workloads": [
        {
            "id": "chat-70b",
            "model_family": "decoder",
            "params_b": [65, 80],
            "context_tokens": 8192,
            "concurrency": [8, 64],
            "tenants": 4,
            "scenario_kinds": ["steady", "interference", "failover", "warmup"],
        }
    ],
    "accelerators": [{"vendors": ["nvidia"], "per_node": 8, "sdk": {"cuda": ">=12.2"}}],
    "fabric": {"transports": ["tcp", "rdma"], "qos": True},
    "environment": {"pinned": ["kernel", "gpu_driver", "nvme_firmware"]},
}


def _set_demo_requirements(rfp: Rfp, actor: object) -> None:
    document = {**requirements_document(rfp), **DEMO_REQUIREMENTS}
    rfp_set_requirements(rfp=rfp, document=document, actor=actor)  # type: ignore[arg-type]


# --- example bundles -----------------------------------------------------------------


def demo_key(vendor: str) -> SshPrivateKey:
    """The vendor's throwaway demo key: ``VAR_DIR/demo-keys/<vendor>`` (made once)."""
    path = Path(settings.VAR_DIR) / "demo-keys" / vendor
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        data = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
    return load_private_key(path.read_bytes(), comment=f"demo@{vendor}")


def _register_demo_key(
    report: SeedReport, organisation: Organisation, key: SshPrivateKey, actor: object
) -> None:
    public = key.public
    if signing_key_get_by_fingerprint(organisation, public.fingerprint) is None:
        signing_key_register(
            organisation=organisation,
            public_key_line=f"{public.openssh} {public.comment}",
            actor=actor,  # type: ignore[arg-type]
        )
        report.created.append(f"signing key {organisation.slug}")


def _seed_bundle(
    report: SeedReport, *, vendor: str, username: str, reference: str = DEMO_RFP
) -> None:
    rfp = Rfp.objects.filter(reference=reference).first()
    organisation = Organisation.objects.get(slug=vendor)
    if rfp is None or bundle_list_accepted_for(rfp, organisation).exists():
        return
    user = get_user_model().objects.get(username=username)
    on = "" if reference == DEMO_RFP else f" on {reference}"
    key = demo_key(vendor)
    _register_demo_key(report, organisation, key, user)
    with tempfile.TemporaryDirectory(prefix="reprogate-demo-") as folder:
        output = Path(folder) / f"{vendor}.tar.gz"
        build_bundle(
            _with_signed_report(Path(folder), vendor, key),
            key=key,
            output=output,
            rfp=reference,
            vendor=vendor,
        )
        try:
            bundle = bundle_ingest(
                rfp=rfp, organisation=organisation, uploaded_by=user,
                upload_path=output, filename=output.name,
            )  # fmt: skip
        except ApplicationError as error:  # RFP no longer open: leave it be
            report.created.append(f"no bundle for {vendor}{on} ({error.code})")
            return
    report.created.append(f"bundle {vendor}{on} ({bundle.status})")


def _with_signed_report(folder: Path, vendor: str, key: SshPrivateKey) -> Path:
    """A copy of the vendor's example in ``folder`` with its signed benchmark
    report and the statement beside it (``portal.demo_reports``)."""
    source = folder / vendor
    shutil.copytree(EXAMPLES_DIR / vendor, source)
    for path, data in _signed_report(vendor, key).items():
        (source / path).write_bytes(data)
    return source


_SIGNED_REPORTS: dict[tuple[str, str], dict[str, bytes]] = {}


def _signed_report(vendor: str, key: SshPrivateKey) -> dict[str, bytes]:
    """The vendor's signed report files, made once a process: drawing and
    signing the PDF takes seconds, more than RFP-DEMO-2's deadline leaves, so
    they are made before that RFP is published (``_seed_records``)."""
    cached = (vendor, key.public.fingerprint)
    if cached not in _SIGNED_REPORTS:
        organisation = Organisation.objects.get(slug=vendor)
        _SIGNED_REPORTS[cached] = signed_report_files(
            EXAMPLES_DIR / vendor, name=organisation.name, slug=vendor, key=key
        )
    return _SIGNED_REPORTS[cached]


# --- RFP-DEMO-2: opened, both bundles accepted, for the lab ---------------------------


def _seed_lab_rfp(*, buyer: Organisation, vendors: list[Organisation]) -> None:
    actor = get_user_model().objects.get(username="buyer")
    now = clock.now().replace(microsecond=0)
    configuration = {
        **default_configuration(),
        "description": "The lab re-runs both vendors' harnesses on its own hosts.",
        "min_bids": 2,
        "bid_requires_bundle": True,
    }
    for artifact in configuration["artifacts"]:  # the lab needs these to re-run
        if artifact["kind"] in LAB_MANDATORY_KINDS:
            artifact["mandatory"] = True
    rfp = rfp_create(
        reference=LAB_RFP,
        title="Lab validation of the KV-cache tiering bids",
        buyer_organisation=buyer,
        questions_deadline=now + LAB_DEADLINE_AHEAD / 2,
        submission_deadline=now + LAB_DEADLINE_AHEAD,
        configuration=configuration,
        actor=actor,
    )
    _set_demo_requirements(rfp, actor)
    for vendor in vendors:
        rfp_invite_vendor(rfp=rfp, vendor=vendor, actor=actor)
    rfp_publish(rfp=rfp, actor=actor)


def _example_json(vendor: str, name: str) -> dict[str, object]:
    return json.loads((EXAMPLES_DIR / vendor / name).read_text(encoding="utf-8"))


def _seed_bid(
    report: SeedReport, *, vendor: str, username: str, reference: str = LAB_RFP
) -> None:
    """The vendor's bid on RFP-DEMO-2 (or ``reference``): the example's claims and
    cost model."""
    rfp = Rfp.objects.filter(reference=reference, status=Rfp.Status.PUBLISHED).first()
    organisation = Organisation.objects.get(slug=vendor)
    if rfp is None or rfp.bids.filter(vendor_organisation=organisation).exists():
        return
    manifest = _example_json(vendor, "bundle.json")
    try:
        bid_submit(
            rfp=rfp,
            organisation=organisation,
            actor=get_user_model().objects.get(username=username),
            cover_note=str(manifest.get("x-description", "")),
            claims=manifest.get("claims", []),  # type: ignore[arg-type]
            cost_inputs=_example_json(vendor, "cost/model.json"),
        )
    except ApplicationError as error:  # deadline passed meanwhile: leave it be
        report.created.append(f"no {reference} bid for {vendor} ({error.code})")
        return
    report.created.append(f"{reference} bid {vendor}")


def _reach(moment: datetime) -> None:
    """Let the procurement clock reach ``moment``: the real clock is waited for
    (RFP-DEMO-2's deadline is seconds ahead), a frozen one (tests) moved there."""
    if clock.frozen_at() is not None:
        clock.travel_to(max(clock.now(), moment))
        return
    remaining = (moment - clock.now()).total_seconds()
    if remaining > 0:
        time.sleep(remaining)


def _tick() -> None:
    """A frozen clock moves a second between two steps (the real one moves)."""
    if clock.frozen_at() is not None:
        clock.travel_to(clock.now() + timedelta(seconds=1))


def _open_lab_rfp(report: SeedReport) -> None:
    """Close RFP-DEMO-2 once its deadline has passed (as the sweep would) and open
    its bids: requested by ``buyer``, then confirmed by ``evaluator``, each step
    after the one before (a frozen clock advances a second per step)."""
    rfp = Rfp.objects.filter(reference=LAB_RFP).first()
    if rfp is None or rfp.status not in (Rfp.Status.PUBLISHED, Rfp.Status.CLOSED):
        return
    users = get_user_model().objects
    frozen = clock.frozen_at()  # put back as it was (tests freeze the clock)
    try:
        _reach(rfp.submission_deadline + timedelta(milliseconds=1))
        with transaction.atomic():
            rfp = rfp_apply_deadlines(rfp=rfp)  # closes it, unless the sweep did
            if rfp.status == Rfp.Status.CLOSED and not hasattr(rfp, "opening"):
                _tick()
                bid_opening_request(rfp=rfp, actor=users.get(username="buyer"))
            if rfp.status == Rfp.Status.CLOSED:
                _tick()
                bid_opening_confirm(rfp=rfp, actor=users.get(username="evaluator"))
    finally:
        clock.travel_to(frozen)
    rfp.refresh_from_db()
    report.created.append(f"{LAB_RFP} {rfp.status}")


# --- RFP-DEMO-3: sealed bids whose deadline passes minutes after the seed -------------


def _seed_opening_rfp(report: SeedReport, opening_in: timedelta) -> None:
    """RFP-DEMO-3, once: published with its deadline ``opening_in`` ahead, then both
    vendors' bundles and bids while it takes them (an interrupted seed completes them
    before the deadline; after it, the RFP is left as it is)."""
    if not Rfp.objects.filter(reference=OPENING_RFP).exists():
        actor = get_user_model().objects.get(username="buyer")
        now = clock.now().replace(microsecond=0)
        with transaction.atomic():
            rfp = rfp_create(
                reference=OPENING_RFP,
                title="Sealed bids to open: KV-cache tiering, second site",
                buyer_organisation=Organisation.objects.get(slug="northwind-ai"),
                questions_deadline=now + opening_in / 2,
                submission_deadline=now + opening_in,
                configuration={
                    **default_configuration(),
                    "description": (
                        "Both vendors have bid. Once the deadline has passed, two "
                        "people on the buyer side open the bids: `buyer` requests "
                        "the opening, `evaluator` confirms it."
                    ),
                    "min_bids": 2,
                },
                actor=actor,
            )
            for slug, _ in DEMO_BUNDLES:
                rfp_invite_vendor(
                    rfp=rfp, vendor=Organisation.objects.get(slug=slug), actor=actor
                )
            rfp_publish(rfp=rfp, actor=actor)
        report.created.append(f"RFP {OPENING_RFP}")
    rfp = Rfp.objects.get(reference=OPENING_RFP)
    if rfp.status != Rfp.Status.PUBLISHED or clock.now() >= rfp.submission_deadline:
        return
    for vendor, username in DEMO_BUNDLES:
        _seed_bundle(report, vendor=vendor, username=username, reference=OPENING_RFP)
        _seed_bid(report, vendor=vendor, username=username, reference=OPENING_RFP)


# --- RFP-DEMO-2: gate plans, lab runs and lab validation ------------------------------


def lab_plan_document(plan: GatePlan) -> dict[str, object]:
    """The buyer's edit of ``plan`` for v2: lab validation without the
    ``env-drift`` stop-loss (pilot and rollout keep it: they run on the delivered
    system, which must match the vendor's manifest), and the lab's resilience
    gate after it (``portal.demo_scenarios.resilience_gate``: a failover, an
    interference and a warm-up criterion)."""
    document = plan.plan
    for gate in document["gates"]:
        if gate["name"] == LAB_GATE:
            gate["stop_loss"] = [s for s in gate["stop_loss"] if s["id"] != "env-drift"]
    return with_resilience_gate(document, after=LAB_GATE)


def _seed_gate_plans(report: SeedReport) -> None:
    """v1 (default, frozen) and v2 (lab environment accepted, frozen) per vendor
    that has no plan on RFP-DEMO-2 yet; each vendor's four steps commit together."""
    rfp = Rfp.objects.filter(reference=LAB_RFP).first()
    if rfp is None or rfp.is_sealed:
        return
    buyer = get_user_model().objects.get(username="buyer")
    for vendor, _ in DEMO_BUNDLES:
        organisation = Organisation.objects.get(slug=vendor)
        if GatePlan.objects.filter(rfp=rfp, vendor_organisation=organisation).exists():
            continue
        if not bundle_list_accepted_for(rfp, organisation).exists():
            continue
        with transaction.atomic():
            first = plan_create_default(rfp=rfp, vendor=organisation, actor=buyer)
            first = plan_freeze(plan=first, actor=buyer)
            draft = plan_new_version(plan=first, actor=buyer)
            draft = plan_update(
                plan=draft,
                document=lab_plan_document(first),
                actor=buyer,
                lab_environment_accepted=True,
                lab_environment_note=LAB_ENVIRONMENT_NOTE,
            )
            plan_freeze(plan=draft, actor=buyer)
        report.created.append(f"{LAB_RFP} gate plans v1, v2 {vendor}")


def sandbox_problem() -> str | None:
    """Why this host runs no demo lab runs (None: bubblewrap works here)."""
    support = host_support()
    if support.bwrap_works:
        return None
    found = "is not installed" if support.bwrap is None else "does not work"
    return (
        f"bubblewrap (bwrap) {found} on this host, so the lab's harness sandbox "
        f"is weaker than a lab host's: {LAB_RFP}'s lab runs were not executed and "
        "lab validation is not evaluated. Install it (apt-get install bubblewrap) "
        "and run scripts/manage seed_demo --lab-validation, or start the campaigns as "
        "labops on /lab/campaigns/."
    )


def _lab_todo() -> list[tuple[str, GatePlan, Bundle]]:
    """Each vendor the lab has not run yet on RFP-DEMO-2, with its frozen plan and
    its latest accepted bundle."""
    rfp = Rfp.objects.filter(reference=LAB_RFP).first()
    if rfp is None or rfp.is_sealed:
        return []
    todo = []
    for vendor, _ in DEMO_BUNDLES:
        plan = GatePlan.objects.filter(
            rfp=rfp, vendor_organisation__slug=vendor, status=GatePlan.Status.FROZEN
        ).first()
        accepted = bundle_list_accepted_for(rfp, Organisation.objects.get(slug=vendor))
        bundle = accepted.order_by("-created_at", "-id").first()
        if plan is None or bundle is None:
            continue
        if Campaign.objects.filter(
            rfp=rfp, bundle__organisation=plan.vendor_organisation
        ).exists():
            continue  # the seed's own (evaluated or not), or one labops started
        todo.append((vendor, plan, bundle))
    return todo


def _lab_sandbox_works(report: SeedReport, progress: Progress) -> bool:
    problem = sandbox_problem()
    if problem is not None:
        progress(problem)
        report.created.append(f"no {LAB_RFP} lab runs (bubblewrap missing)")
    return problem is None


def _claimed_scenarios(bundle: Bundle) -> list[str]:
    return sorted({c["scenario"] for c in (bundle.manifest or {}).get("claims", [])})


def _start_lab_campaigns(
    report: SeedReport, progress: Progress, lab_resilience: bool = True
) -> None:
    """A gate campaign for lab validation per vendor the lab has not run yet, with
    its frozen plan (v2), on pool ``local``, started by ``labops``: the gate's
    scenarios (v2's criteria are the claims), 3 repetitions each, queued for the
    pool's lab agent; the gate is evaluated when the campaign's last run ends. Each
    vendor's start commits alone (``gate_campaign_start``: campaign, gate link and
    audit row together). Then, with ``lab_resilience`` and where the host can
    inject faults, one for the lab-resilience gate too; and the buyer's baseline
    campaign, once."""
    todo = _lab_todo()
    if not (todo or _baseline_due()) or not _lab_sandbox_works(report, progress):
        return
    labops = get_user_model().objects.get(username="labops")
    pool = LabPool.objects.get(name=LAB_POOL)
    runs = 0
    resilience = resilience_problem() if lab_resilience else None
    for vendor, plan, _bundle in todo:  # the plan names its bundle
        gates = [(LAB_GATE, LAB_REPETITIONS, LAB_CAMPAIGN_NOTE, "campaign")]
        wanted = lab_resilience and RESILIENCE_GATE in plan.gate_names
        if wanted and resilience is None:
            said = f"{RESILIENCE_GATE} campaign"
            gates.append((RESILIENCE_GATE, RESILIENCE_REPETITIONS, "", said))
        for gate, repetitions, note, said in gates:
            link = gate_campaign_start(
                plan=plan,
                gate=gate,
                pool=pool,
                actor=labops,
                repetitions=repetitions,
                note=note,
            )
            runs += link.campaign.runs.count()
            report.created.append(f"{LAB_RFP} {said} {vendor} (queued)")
    baseline = _start_baseline_campaign(report, pool, labops)
    runs += baseline
    if todo and resilience is not None:
        progress(resilience)
    if runs:
        progress(
            f"The lab re-runs {LAB_RFP}'s bundles in the background once ReproGate "
            f"has started ({runs} runs on pool {LAB_POOL}, a few minutes, then the "
            "gates are judged): watch them as labops on /lab/campaigns/"
        )


def _seed_lab_validation(report: SeedReport, progress: Progress) -> None:
    todo = _lab_todo()
    if not todo or not _lab_sandbox_works(report, progress):
        return
    pool = LabPool.objects.get(name=LAB_POOL)
    worker = ""
    try:
        with loopback_agent(pool, SEED_HOST) as agent:
            worker = agent.terms.worker_name
            for vendor, plan, bundle in todo:
                _lab_campaign(report, progress, vendor, plan, bundle, agent)
    finally:
        if worker:  # a one-shot host: retired once its runs are over
            host_stop(worker_name=worker, pool_names=[LAB_POOL], retire=True)


def _lab_campaign(
    report: SeedReport,
    progress: Progress,
    vendor: str,
    plan: GatePlan,
    bundle: Bundle,
    agent: LoopbackAgent,
) -> None:
    """One vendor's campaign, its claimed runs executed here, and lab validation
    evaluated on it: one transaction (the runs' messages go to the pool's queue
    after it commits, when they are final: the lab agent skips them)."""
    labops = get_user_model().objects.get(username="labops")
    pool = LabPool.objects.get(name=LAB_POOL)
    began = time.monotonic()
    with transaction.atomic():
        campaign = campaign_start(
            bundle=bundle,
            pool=pool,
            repetitions=LAB_REPETITIONS,
            actor=labops,
            note=LAB_CAMPAIGN_NOTE,
            scenarios=_claimed_scenarios(bundle),
        )
        runs = list(campaign.runs.order_by("position"))
        for done, run in enumerate(runs, start=1):
            progress(
                f"Running {vendor} lab runs: {done}/{len(runs)} "
                f"({run.scenario_name}, repetition {run.repetition})"
            )
            agent.execute(run)
        executed = Run.objects.filter(pk__in=[r.pk for r in runs])
        if executed.exclude(state__in=FINAL).exists():  # a run the runner never took
            campaign_cancel(campaign=campaign, actor=labops)
        failed = [r for r in executed if r.state != Run.State.SUCCEEDED]
        elapsed = time.monotonic() - began
        if failed:
            first = failed[0]
            progress(
                f"{vendor}: {len(failed)} of {len(runs)} lab runs did not succeed "
                f"({first.scenario_name}: {first.get_state_display().lower()}, "
                f"{first.reason or 'no reason given'}); lab validation is not "
                "evaluated (the campaign is on /lab/campaigns/)."
            )
            report.created.append(f"{LAB_RFP} campaign {vendor} (runs failed)")
            return
        evaluation = gate_judge(
            plan=plan, gate=LAB_GATE, campaign=campaign, actor=labops
        )
    progress(
        f"{vendor}: {len(runs)} lab runs in {elapsed:.0f} s; "
        f"lab validation {evaluation.verdict}"
    )
    report.created.append(f"{LAB_RFP} {LAB_GATE} {vendor} {evaluation.verdict}")


# --- RFP-DEMO-2: the buyer's baseline on today's infrastructure -----------------------


def _seed_baseline_bundle(report: SeedReport) -> None:
    """The buyer's baseline bundle on RFP-DEMO-2 (``portal.demo_scenarios``), once:
    signed with the buyer organisation's own demo key, uploaded by ``buyer``."""
    rfp = (
        Rfp.objects.filter(reference=LAB_RFP)
        .exclude(status=Rfp.Status.CANCELLED)
        .first()
    )
    organisation = Organisation.objects.get(slug=BUYER)
    if rfp is None or bundle_list_accepted_for(rfp, organisation).exists():
        return
    user = get_user_model().objects.get(username="buyer")
    key = demo_key(BUYER)
    _register_demo_key(report, organisation, key, user)
    with tempfile.TemporaryDirectory(prefix="reprogate-demo-") as folder:
        output = Path(folder) / f"{BUYER}-baseline.tar.gz"
        build_bundle(
            baseline_sources(Path(folder)),
            key=key,
            output=output,
            rfp=LAB_RFP,
            vendor=BUYER,
        )
        try:
            bundle = bundle_ingest(
                rfp=rfp, organisation=organisation, uploaded_by=user,
                upload_path=output, filename=output.name,
            )  # fmt: skip
        except ApplicationError as error:
            report.created.append(f"no baseline bundle on {LAB_RFP} ({error.code})")
            return
    report.created.append(f"baseline bundle on {LAB_RFP} ({bundle.status})")


def _start_baseline_campaign(report: SeedReport, pool: LabPool, labops: object) -> int:
    """The baseline campaign of the buyer's bundle on pool ``local``, queued for
    its lab agent, unless RFP-DEMO-2 has one; how many runs it queued."""
    bundle = _baseline_due()
    if bundle is None:
        return 0
    campaign = campaign_start(
        bundle=bundle,
        pool=pool,
        repetitions=BASELINE_REPETITIONS,
        actor=labops,  # type: ignore[arg-type]
        note=BASELINE_CAMPAIGN_NOTE,
    )
    report.created.append(f"{LAB_RFP} baseline campaign (queued)")
    return campaign.runs.count()


def _baseline_due() -> Bundle | None:
    """The buyer's baseline bundle on RFP-DEMO-2 while it has no baseline
    campaign yet (None: none to start)."""
    rfp = Rfp.objects.filter(reference=LAB_RFP).first()
    if rfp is None or rfp.is_sealed:
        return None
    if Campaign.objects.filter(rfp=rfp, role=Campaign.Role.BASELINE).exists():
        return None
    organisation = Organisation.objects.get(slug=BUYER)
    return bundle_list_accepted_for(rfp, organisation).order_by("-id").first()
