"""What artifacts gives procurement without procurement importing artifacts: the
evidence provider (``procurement.selectors.evidence_sources``) that turns each vendor's
newest
accepted bundle's completeness report (``artifacts.lib.completeness``) into an
``EvidenceSummary``, and the bundle source that lists a vendor's own bundles with
their manifest claims and cost model (``SignedBundle``) for its bid (its
``evidence_provider`` and ``bundle_source`` registries), filled in by
``ArtifactsConfig.ready()``."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from django.urls import reverse

from artifacts.models import Bundle, BundleFile
from artifacts.selectors.bundles import bundle_latest_accepted_completeness
from artifacts.storage.blobs import blob_open
from procurement.lib.fidelity import Declared
from procurement.models import Rfp
from procurement.selectors.evidence_sources import (
    EvidenceSummary,
    SignedBundle,
)

COST_MODEL_KIND = "cost_model"
COST_MODEL_PATH = "cost/model.json"  # preferred when a bundle has several
COST_MODEL_MAX_BYTES = 64 * 1024  # a cost model is a few hundred bytes
OWN_BUNDLES_LIMIT = 50


def _part(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    part = report.get(key)
    return part if isinstance(part, Mapping) else {}


def _strings(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


def _kinds_counted(artifacts: Mapping[str, Any]) -> tuple[str, ...]:
    """The kinds that count: a report only with a valid signature (reports made
    before signatures were checked list ``kinds_present`` only)."""
    counted = artifacts.get("kinds_counted", artifacts.get("kinds_present"))
    return _strings(counted)


def evidence_summary(bundle: Bundle) -> EvidenceSummary:
    """The bundle's completeness report in short. Read tolerantly: a report
    missing a part counts that part as nothing found."""
    report = bundle.completeness if isinstance(bundle.completeness, Mapping) else {}
    environment, claims = _part(report, "environment"), _part(report, "claims")
    fields = [f for f in environment.get("fields", []) if isinstance(f, Mapping)]
    claim_rows = [c for c in claims.get("claims", []) if isinstance(c, Mapping)]
    score = _part(report, "score")
    return EvidenceSummary(
        bundle_id=str(bundle.public_id),
        url=reverse("artifacts:bundle_detail", args=[bundle.public_id]),
        sha256=bundle.sha256,
        uploaded_at=bundle.created_at,
        kinds_present=_kinds_counted(_part(report, "artifacts")),
        environment_named=sum(1 for f in fields if f.get("found") is True),
        environment_total=len(fields),
        environment_missing=tuple(
            str(f.get("label", f.get("key", ""))) for f in fields if not f.get("found")
        ),
        claims_in_harness=sum(1 for c in claim_rows if c.get("scenario_in_harness")),
        claims_total=len(claim_rows),
        unknown_scenarios=_strings(claims.get("unknown_scenarios")),
        metrics_missing=_strings(_part(report, "metrics").get("missing")),
        checks_passed=int(score.get("passed", 0)),
        checks_total=int(score.get("total", 0)),
        kinds_failing=_strings(_part(report, "content").get("failed")),
        signed_kinds_verified=tuple(
            str(item.get("kind"))
            for item in _part(report, "artifacts").get("required", [])
            if isinstance(item, Mapping) and item.get("signature") == "valid"
        ),
    )


def _named_accepted(rfp: Rfp, named: Mapping[int, str]) -> dict[int, Bundle]:
    """organisation id -> the accepted bundle on ``rfp`` named for it (a name
    that is not one of its accepted bundles there is left out)."""
    ids = {}
    for organisation_id, public_id in named.items():
        try:
            ids[uuid.UUID(str(public_id))] = organisation_id
        except ValueError:
            continue
    rows = Bundle.objects.filter(
        rfp=rfp, status=Bundle.Status.ACCEPTED, public_id__in=list(ids)
    ).defer("manifest", "problems")
    return {b.organisation_id: b for b in rows if ids[b.public_id] == b.organisation_id}


def bundle_evidence(
    rfp: Rfp,
    organisation_ids: Collection[int] | None = None,
    named: Mapping[int, str] | None = None,
) -> dict[int, EvidenceSummary]:
    """The evidence provider: one query whatever the number of vendors, and one
    more for the bundles ``named`` by bids."""
    latest = bundle_latest_accepted_completeness(rfp, organisation_ids)
    if named:
        latest |= _named_accepted(rfp, named)
    return {org: evidence_summary(bundle) for org, bundle in latest.items()}


# --- the bundle source ----------------------------------------------------------------


def _cost_files(bundles: list[Bundle]) -> dict[int, BundleFile]:
    """bundle pk -> its cost model file (``cost/model.json`` first, then by path)."""
    files = BundleFile.objects.filter(
        bundle__in=[b for b in bundles if b.status == Bundle.Status.ACCEPTED],
        kind=COST_MODEL_KIND,
    ).select_related("blob")
    chosen: dict[int, BundleFile] = {}
    for file in sorted(files, key=lambda f: (f.path != COST_MODEL_PATH, f.path)):
        chosen.setdefault(file.bundle_id, file)
    return chosen


def _read_cost_model(file: BundleFile | None) -> bytes | None:
    if file is None or file.size > COST_MODEL_MAX_BYTES:
        return None
    with blob_open(file.blob) as handle:
        return handle.read(COST_MODEL_MAX_BYTES + 1)[:COST_MODEL_MAX_BYTES]


def _claims(bundle: Bundle) -> tuple[Mapping[str, Any], ...]:
    manifest = bundle.manifest if isinstance(bundle.manifest, Mapping) else {}
    claims = manifest.get("claims")
    if not isinstance(claims, list):
        return ()
    return tuple(dict(c) for c in claims if isinstance(c, Mapping))


def signed_bundle(bundle: Bundle, cost_file: BundleFile | None) -> SignedBundle:
    return SignedBundle(
        bundle_id=str(bundle.public_id),
        url=reverse("artifacts:bundle_detail", args=[bundle.public_id]),
        rfp_id=bundle.rfp_id,
        rfp_reference=bundle.rfp.reference,
        accepted=bundle.status == Bundle.Status.ACCEPTED,
        sha256=bundle.sha256,
        manifest_sha256=bundle.manifest_sha256,
        uploaded_at=bundle.created_at,
        claims=_claims(bundle),
        cost_model_path=cost_file.path if cost_file is not None else "",
        cost_model=_read_cost_model(cost_file),
    )


def own_bundles(
    organisation_id: int,
    *,
    rfp: Rfp | None = None,
    public_id: str = "",
    accepted_only: bool = False,
) -> list[SignedBundle]:
    """The bundle source: one organisation's bundles, newest first (at most
    ``OWN_BUNDLES_LIMIT``); three queries and one small read per accepted one."""
    bundles = Bundle.objects.filter(organisation_id=organisation_id)
    if rfp is not None:
        bundles = bundles.filter(rfp=rfp)
    if accepted_only:
        bundles = bundles.filter(status=Bundle.Status.ACCEPTED)
    if public_id:
        try:
            bundles = bundles.filter(public_id=uuid.UUID(str(public_id)))
        except ValueError:
            return []
    rows = list(
        bundles.select_related("rfp")
        .defer("problems", "completeness")
        .order_by("-created_at", "-id")[:OWN_BUNDLES_LIMIT]
    )
    cost_files = _cost_files(rows)
    return [signed_bundle(b, cost_files.get(b.pk)) for b in rows]


# --- the declared source (the fidelity matrix) ---------------------------------------


def declared_of(bundle: Bundle) -> Declared:
    """What an accepted bundle declares: its manifest (approach, workloads,
    claims), the kinds of its files, and the environment manifest's structured
    fields as ingest kept them in the completeness report."""
    manifest = bundle.manifest if isinstance(bundle.manifest, Mapping) else {}
    files = manifest.get("files")
    kinds = {
        str(f.get("kind")) for f in files or [] if isinstance(f, Mapping)
    } if isinstance(files, list) else set()  # fmt: skip
    report = bundle.completeness if isinstance(bundle.completeness, Mapping) else {}
    environment = _part(report, "environment").get("declared")
    return Declared(
        bundle=str(bundle.public_id),
        manifest=manifest,
        kinds=tuple(sorted(kinds)),
        environment=environment if isinstance(environment, Mapping) else {},
    )


def bundle_declarations(
    rfp: Rfp,
    organisation_ids: Collection[int],
    named: Mapping[int, str] | None = None,
) -> dict[int, Declared]:
    """The declared source: three queries whatever the number of vendors."""
    chosen = bundle_latest_accepted_completeness(rfp, organisation_ids)
    if named:
        wanted = {k: v for k, v in named.items() if k in set(organisation_ids)}
        chosen |= _named_accepted(rfp, wanted)
    rows = Bundle.objects.filter(pk__in=[b.pk for b in chosen.values()]).only(
        "pk", "public_id", "organisation_id", "manifest", "completeness"
    )
    return {bundle.organisation_id: declared_of(bundle) for bundle in rows}
