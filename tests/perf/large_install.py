"""A large installation, for measuring pages and API lists at scale.

``build_base(directory)`` makes one of everything a route can name through the
services (and the test factories that call them): the authorization matrix's
``foreign_world`` (tests/security/world.py), whose buyer, evaluator, vendor, lab
operator and auditor see their own objects, plus an evaluator of the buyer.

``grow(world, scale)`` then adds, with ``bulk_create`` (the services would take
hours for 95,000 metrics and 50,000 audit rows), what a large installation holds
around those objects, up to the scale's counts (calling it again with a larger
scale adds the difference, so one database is measured small, then large):

- ``vendors`` vendor organisations, each with a vendor user, invited to the
  opened and the sealed tender;
- ``rfps`` more RFPs of the same buyer (opened, 6 criteria each);
- ``bids`` bids: one per vendor on the opened tender first, the rest over the
  other RFPs, each with cost inputs-free content and a commitment;
- ``scores``: 3 evaluators' score sheets per RFP, one score per bid and
  criterion, until the count is reached;
- ``bundles`` accepted bundles (one per bid, sharing one archive blob), and
  ``bundle_files`` files in the opened tender's bundle (the bundle page);
- ``runs`` succeeded runs with ``metrics_per_run`` metrics each (the first five
  are those the campaign page charts): a fifth of them in the opened tender's
  campaign (the campaign page), the rest in 10 more campaigns on the same bundle;
- ``audit_events`` audit rows of the buyer, half of them about the opened tender.

What is bulk-created bypasses the services' invariants only where a page reads
nothing of it that a service would have computed (no gate evaluation, no
commitment check): the figures are the pages' cost of reading the rows."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from accounts.models import AuditEvent, Membership, Organisation, Role
from accounts.selectors import clock
from artifacts.models import Bundle, BundleFile
from benchmarks.models import Campaign, Run, RunMetric
from procurement.models import Bid, Criterion, Rfp, Score, ScoreSheet
from tests.security.world import World, foreign_world

PREFIX = "bench"
EVALUATORS = 3
CRITERIA = 6
CAMPAIGNS = 10


@dataclass(frozen=True)
class Scale:
    vendors: int = 50
    rfps: int = 22
    bids: int = 1002
    scores: int = 18000
    bundles: int = 505
    bundle_files: int = 2012
    runs: int = 5010
    metrics_per_run: int = 19
    audit_events: int = 50000

    @classmethod
    def small(cls, vendors: int = 2) -> Scale:
        """A tiny installation of ``vendors`` vendors: every family grows with them."""
        return cls(
            vendors=vendors,
            rfps=vendors,
            bids=vendors * vendors,
            scores=vendors * vendors * CRITERIA,
            bundles=vendors * 2,
            bundle_files=vendors * 5,
            runs=vendors * 5,
            metrics_per_run=4,
            audit_events=vendors * 25,
        )


@dataclass
class Base:
    """The world and who may see what in it."""

    world: World
    users: dict[str, Any]  # role name -> user


def build_base(directory: Path) -> Base:
    world = foreign_world(directory)
    user_model = get_user_model()
    buyer = user_model.objects.get(username="umbrella-buyer")
    buyer_org = Organisation.objects.get(slug="umbrella-buying")
    evaluator = user_model.objects.create(username="umbrella-evaluator")
    Membership.objects.create(
        user=evaluator, organisation=buyer_org, role=Role.EVALUATOR
    )
    users = {
        "buyer": buyer,
        "evaluator": evaluator,
        "vendor": user_model.objects.get(username="zenith-seller"),
        "labops": user_model.objects.get(username="umbrella-labops"),
        "auditor": user_model.objects.get(username="umbrella-auditor"),
    }
    return Base(world=world, users=users)


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


def _vendors(base: Base, scale: Scale) -> list[Organisation]:
    have = Organisation.objects.filter(slug__startswith=f"{PREFIX}-v").count()
    new = [
        Organisation(
            slug=f"{PREFIX}-v{i:03d}", name=f"Bench Vendor {i:03d}", kind="vendor"
        )
        for i in range(have, scale.vendors)
    ]
    Organisation.objects.bulk_create(new)
    user_model = get_user_model()
    users = user_model.objects.bulk_create(
        [user_model(username=f"{org.slug}-seller") for org in new]
    )
    orgs = list(Organisation.objects.filter(slug__in=[o.slug for o in new]))
    by_slug = {o.slug: o for o in orgs}
    Membership.objects.bulk_create(
        [
            Membership(user=u, organisation=by_slug[u.username[: -len("-seller")]],
                       role=Role.VENDOR)
            for u in users
        ]
    )  # fmt: skip
    for rfp in base.world.rfps.values():
        rfp.invited_vendors.add(*orgs)
    return list(
        Organisation.objects.filter(slug__startswith=f"{PREFIX}-v").order_by("slug")
    )


def _rfps(base: Base, scale: Scale) -> list[Rfp]:
    opened = base.world.rfps["opened"]
    have = Rfp.objects.filter(reference__startswith="RFP-BENCH-").count()
    now = clock.now()
    Rfp.objects.bulk_create(
        [
            Rfp(reference=f"RFP-BENCH-{i:03d}", title=f"Bench tender {i:03d}",
                buyer_organisation=opened.buyer_organisation,
                status=Rfp.Status.OPENED, submission_deadline=now - timedelta(days=3))
            for i in range(have, scale.rfps)
        ]
    )  # fmt: skip
    rfps = list(
        Rfp.objects.filter(reference__startswith="RFP-BENCH-").order_by("reference")
    )
    Criterion.objects.bulk_create(
        [
            Criterion(rfp=rfp, name=f"Criterion {k}", weight=100 // CRITERIA,
                      position=k)
            for rfp in rfps[have:]
            for k in range(CRITERIA)
        ]
    )  # fmt: skip
    return rfps


def _bids(
    base: Base, scale: Scale, vendors: list[Organisation], rfps: list[Rfp]
) -> None:
    opened = base.world.rfps["opened"]
    taken = set(Bid.objects.values_list("rfp_id", "vendor_organisation_id"))
    have = Bid.objects.filter(
        vendor_organisation__slug__startswith=f"{PREFIX}-v"
    ).count()
    now = clock.now()
    new: list[Bid] = []
    for rfp in [opened, *rfps]:
        for vendor in vendors:
            if have + len(new) >= scale.bids:
                break
            if (rfp.pk, vendor.pk) in taken:
                continue
            new.append(
                Bid(rfp=rfp, vendor_organisation=vendor, cover_note="Bench bid.",
                    commitment=_digest(rfp.pk, vendor.pk), submitted_at=now)
            )  # fmt: skip
    Bid.objects.bulk_create(new)


def _scores(base: Base, scale: Scale) -> None:
    user_model = get_user_model()
    buyer_org = base.world.rfps["opened"].buyer_organisation
    evaluators = []
    for k in range(EVALUATORS):
        user, made = user_model.objects.get_or_create(
            username=f"{PREFIX}-evaluator-{k}"
        )
        if made:
            Membership.objects.create(
                user=user, organisation=buyer_org, role=Role.EVALUATOR
            )
        evaluators.append(user)
    have = Score.objects.filter(sheet__evaluator__in=evaluators).count()
    scored = set(Score.objects.values_list("sheet_id", "bid_id", "criterion_id"))
    bids = Bid.objects.filter(vendor_organisation__slug__startswith=f"{PREFIX}-v")
    criteria: dict[int, list[int]] = {}
    for rfp_id, criterion_id in Criterion.objects.values_list("rfp_id", "id"):
        criteria.setdefault(rfp_id, []).append(criterion_id)
    now = clock.now()
    new: list[Score] = []
    for bid in bids.order_by("rfp_id", "id"):
        for user in evaluators:
            sheet, _ = ScoreSheet.objects.get_or_create(
                rfp_id=bid.rfp_id, evaluator=user, defaults={"submitted_at": now}
            )
            for criterion_id in criteria.get(bid.rfp_id, []):
                if have + len(new) >= scale.scores:
                    Score.objects.bulk_create(new)
                    return
                if (sheet.pk, bid.pk, criterion_id) not in scored:
                    new.append(
                        Score(sheet=sheet, bid=bid, criterion_id=criterion_id,
                              value=(bid.pk + criterion_id) % 11,
                              justification="Bench.")
                    )  # fmt: skip
    Score.objects.bulk_create(new)


def _bundles(base: Base, scale: Scale) -> Bundle:
    bundle = Bundle.objects.get(public_id=base.world.ids["bundle_id"])
    have = Bundle.objects.filter(filename__startswith=f"{PREFIX}-").count()
    bids = Bid.objects.filter(vendor_organisation__slug__startswith=f"{PREFIX}-v")
    uploader = base.users["vendor"]
    new = [
        Bundle(rfp_id=bid.rfp_id, organisation_id=bid.vendor_organisation_id,
               uploaded_by=uploader, status=Bundle.Status.ACCEPTED,
               filename=f"{PREFIX}-{i:04d}.tar.gz", sha256=_digest("bundle", i),
               size=bundle.size, archive_blob_id=bundle.archive_blob_id,
               manifest=bundle.manifest, manifest_sha256=bundle.manifest_sha256,
               signature_kind=bundle.signature_kind)
        for i, bid in enumerate(bids.order_by("id")[have : scale.bundles])
    ]  # fmt: skip
    Bundle.objects.bulk_create(new)
    files = list(BundleFile.objects.filter(bundle=bundle).order_by("id"))
    template = files[0]
    extra = [
        BundleFile(bundle=bundle, path=f"results/{PREFIX}/file-{i:05d}.json",
                   kind=template.kind, size=template.size, sha256=template.sha256,
                   blob_id=template.blob_id)
        for i in range(len(files), scale.bundle_files)
    ]  # fmt: skip
    BundleFile.objects.bulk_create(extra)
    return bundle


# A run's first metrics are those the campaign page charts (TTFT percentiles,
# throughput, cache-hit rate), as a KV-cache harness reports them; the rest are
# named by their number.
CHARTED: tuple[tuple[str, str], ...] = (
    ("ttft_ms", "p50"), ("ttft_ms", "p90"), ("ttft_ms", "p99"),
    ("output_token_throughput_tps", "mean"), ("cache_hit_rate", "mean"),
)  # fmt: skip


def _metric(k: int) -> tuple[str, str]:
    """The name and statistic of a run's ``k``-th metric."""
    return CHARTED[k] if k < len(CHARTED) else (f"{PREFIX}_metric_{k:02d}", "p99")


def _runs(base: Base, scale: Scale, bundle: Bundle) -> None:
    main = Campaign.objects.get(public_id=base.world.ids["campaign_id"])
    campaigns = [main]
    for k in range(CAMPAIGNS):
        note = f"{PREFIX} campaign {k}"
        campaign = Campaign.objects.filter(note=note).first()
        campaigns.append(
            campaign
            or Campaign.objects.create(
                rfp=main.rfp, bundle=bundle, pool=main.pool, started_by=main.started_by,
                repetitions=main.repetitions, scenarios=main.scenarios, note=note,
            )
        )  # fmt: skip
    have = Run.objects.filter(scenario_name__startswith=PREFIX).count()
    now = clock.now()
    runs = []
    for i in range(have, scale.runs):
        # A fifth of the runs in the main campaign, the rest spread over the others.
        campaign = main if i % 5 == 0 else campaigns[1 + i % CAMPAIGNS]
        runs.append(
            Run(campaign=campaign, position=1000 + i,
                scenario_name=f"{PREFIX}-{i // 100}", repetition=1 + i % 100,
                state=Run.State.SUCCEEDED, wall_limit_s=600, started_at=now,
                finished_at=now, duration_s=42.0, exit_code=0, progress=1.0)
        )  # fmt: skip
    runs = Run.objects.bulk_create(runs, batch_size=1000)
    metrics = [
        RunMetric(run=run, attempt=1, name=_metric(k)[0], stat=_metric(k)[1],
                  value=100.0 + k + run.position % 7, unit="ms",
                  source_path="results/metrics.json", source_key=f"metrics[{k}].value",
                  method="json", scenario=run.scenario_name)
        for run in runs
        for k in range(scale.metrics_per_run)
    ]  # fmt: skip
    RunMetric.objects.bulk_create(metrics, batch_size=5000)


def _audit(base: Base, scale: Scale) -> None:
    opened = base.world.rfps["opened"]
    buyer = base.users["buyer"]
    have = AuditEvent.objects.filter(action__startswith=f"{PREFIX}.").count()
    rfp_type = ContentType.objects.get_for_model(Rfp)
    events = [
        AuditEvent(actor=buyer, actor_repr=buyer.username,
                   organisation=opened.buyer_organisation,
                   action=f"{PREFIX}.recorded", target_type=rfp_type,
                   target_id=str(opened.pk), target_repr=opened.reference,
                   data={"n": i},
                   rfp_reference=opened.reference if i % 2 == 0 else "")
        for i in range(have, scale.audit_events)
    ]  # fmt: skip
    AuditEvent.objects.bulk_create(events, batch_size=5000)


def grow(base: Base, scale: Scale) -> None:
    """Add what ``scale`` holds and the database does not yet."""
    vendors = _vendors(base, scale)
    rfps = _rfps(base, scale)
    _bids(base, scale, vendors, rfps)
    _scores(base, scale)
    bundle = _bundles(base, scale)
    _runs(base, scale, bundle)
    _audit(base, scale)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # the planner's statistics see the new rows


def counts() -> dict[str, int]:
    """What the database holds, for the table's heading."""
    return {
        "vendors": Organisation.objects.filter(kind="vendor").count(),
        "rfps": Rfp.objects.count(),
        "bids": Bid.objects.count(),
        "scores": Score.objects.count(),
        "bundles": Bundle.objects.count(),
        "runs": Run.objects.count(),
        "metrics": RunMetric.objects.count(),
        "audit events": AuditEvent.objects.count(),
    }
