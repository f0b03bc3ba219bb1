"""Real signed bundles for procurement tests: built from the corpus's good files,
signed with a corpus key registered to the vendor, and ingested through
``bundle_ingest`` (the RFP is made to accept uploads for the moment, then put back:
factories set state directly)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from accounts.models import Organisation, Role
from accounts.selectors import clock
from artifacts.lib.signatures.sshkeys import parse_public_key_line
from artifacts.models import Bundle, SigningKey
from artifacts.services.keys import signing_key_register
from procurement.models import Rfp
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.artifacts.corpus.build import (
    CORPUS_KEYS,
    ORGANISATION_KEY_PREFIX,
    corpus_key,
    good_files,
    good_manifest,
    manifest_bytes,
)
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.procurement.factories_evaluation import (
    CostModelInputFactory,
    RequiredArtifactFactory,
    RequiredMetricFactory,
    bid_of,
    opened_rfp,
)

# The good files without raw traces and signed reports (two mandatory kinds).
PARTIAL_FILES = {
    path: data
    for path, data in good_files().items()
    if not path.startswith(("traces/", "reports/"))
}


def _uploader(organisation: Organisation) -> Any:
    user = UserFactory.create(username=f"up-{organisation.slug}-{uuid.uuid4().hex[:6]}")
    MembershipFactory.create(user=user, organisation=organisation, role=Role.VENDOR)
    return user


def _fingerprint(name: str) -> str:
    return parse_public_key_line(corpus_key(name).public_line).fingerprint


def _key_name(organisation: Organisation) -> str:
    """The corpus key the vendor signs with. A public key is registered by one
    organisation only, so: the corpus key it holds already (registered by this
    factory or by the test, e.g. ``vendor_a`` for acme-flash); else the corpus's
    own key for it, or ``vendor_a`` (the key the runner's test bundles are signed
    with), while no organisation holds them; else one of its own."""
    own = f"{ORGANISATION_KEY_PREFIX}{organisation.slug}"
    named = [
        k.name
        for k in CORPUS_KEYS.values()
        if k.organisation == organisation.slug and k.state == "valid"
    ]
    candidates = [*named, "vendor_a", own]
    held = dict(
        SigningKey.objects.filter(
            fingerprint__in=[_fingerprint(name) for name in candidates]
        ).values_list("fingerprint", "organisation_id")
    )
    for name in candidates:
        if held.get(_fingerprint(name)) == organisation.pk:
            return name
    for name in [*named, "vendor_a"]:
        if _fingerprint(name) not in held:
            return name
    return own


def _ensure_key(organisation: Organisation, actor: Any) -> str:
    """Register the vendor's corpus key unless it holds it; returns its name."""
    name = _key_name(organisation)
    if SigningKey.objects.filter(
        organisation=organisation, fingerprint=_fingerprint(name)
    ).exists():
        return name
    signing_key_register(
        organisation=organisation,
        public_key_line=corpus_key(name).public_line,
        valid_from=clock.now() - timedelta(days=30),
        actor=actor,
    )
    return name


def accepted_bundle(
    rfp: Rfp,
    organisation: Organisation,
    directory: Path,
    *,
    files: dict[str, bytes] | None = None,
    **manifest_changes: Any,
) -> Bundle:
    """An accepted bundle of ``organisation`` on ``rfp``; ``manifest_changes``
    replace top-level manifest keys (e.g. ``claims``)."""
    files = good_files() if files is None else files
    user = _uploader(organisation)
    key = _ensure_key(organisation, user)
    manifest = good_manifest(
        files, rfp=rfp.reference, vendor=organisation.slug, **manifest_changes
    )
    path = build_bundle(
        directory / f"{organisation.slug}-{uuid.uuid4().hex[:8]}",
        files,
        key=key,
        manifest=manifest_bytes(manifest),
    )
    saved = Rfp.objects.filter(pk=rfp.pk).values("status", "submission_deadline")[0]
    Rfp.objects.filter(pk=rfp.pk).update(
        status=Rfp.Status.PUBLISHED,
        submission_deadline=clock.now() + timedelta(days=7),
    )
    try:
        bundle = ingest(Rfp.objects.get(pk=rfp.pk), organisation, user, path)
    finally:
        Rfp.objects.filter(pk=rfp.pk).update(**saved)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return bundle


def comparison_rfp(
    buyer_org: Organisation, acme: Organisation, bolt: Organisation, directory: Path
) -> Rfp:
    """An opened RFP with ``workload``, ``trace`` and ``report`` mandatory and
    ``cost_model`` optional. Acme bids with a ttft_ms claim and cost inputs, and its
    newest accepted bundle lacks traces and reports; Bolt has no bundle."""
    rfp = opened_rfp(buyer_org, [acme, bolt])
    RequiredMetricFactory.create(rfp=rfp, name="ttft_ms")
    for kind in ("workload", "trace", "report"):
        RequiredArtifactFactory.create(rfp=rfp, kind=kind, title=f"The {kind}")
    RequiredArtifactFactory.create(rfp=rfp, kind="cost_model", mandatory=False)
    bid = bid_of(rfp, acme)
    bid.claimed_metrics = [
        {
            "metric": "ttft_ms",
            "stat": "p99",
            "value": 180.0,
            "unit": "ms",
            "scenario": "cold-c32",
        }
    ]
    bid.save()
    CostModelInputFactory.create(bid=bid)
    accepted_bundle(rfp, acme, directory, files=PARTIAL_FILES)
    return rfp
