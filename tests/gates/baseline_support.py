"""The buyer's baseline for the gates and comparison tests: a bundle of the
buyer's own harness, signed with a key of the buyer organisation, run by its lab
with chosen values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from accounts.models import Organisation
from artifacts.models import Bundle, SigningKey
from artifacts.services.keys import signing_key_register
from benchmarks.models import Campaign
from procurement.models import Rfp
from tests.artifacts.corpus.build import corpus_key
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.benchmarks.runner.support import (
    bundle_files,
    make_pool,
    runner_manifest,
    start,
)
from tests.gates.support import finish_runs


def baseline_bundle(directory: Path, rfp: Rfp, buyer: Any) -> Bundle:
    """The buyer organisation's accepted bundle (its key registered first)."""
    org: Organisation = rfp.buyer_organisation
    key = corpus_key(f"org-{org.slug}")
    if not SigningKey.objects.filter(organisation=org).exists():
        signing_key_register(
            organisation=org, public_key_line=key.public_line, actor=buyer
        )
    files = bundle_files()
    manifest = runner_manifest(files, rfp, org)
    archive = build_bundle(directory, files, key=key.name, manifest=manifest)
    bundle = ingest(rfp, org, buyer, archive)
    assert bundle.status == Bundle.Status.ACCEPTED, bundle.problems
    return bundle


def run_baseline(
    directory: Path, rfp: Rfp, buyer: Any, labops: Any, values: dict[str, list[float]]
) -> Campaign:
    """A baseline campaign of the buyer's bundle whose runs of each scenario
    finished at ``values`` (ttft_ms p99), as many repetitions as the longest."""
    bundle = baseline_bundle(directory, rfp, buyer)
    lab = rfp.buyer_organisation.engages.get(kind=Organisation.Kind.LAB)
    pool = make_pool(lab, name=f"baseline-{directory.name}")
    repetitions = max(len(v) for v in values.values())
    campaign = start(bundle, pool, labops, repetitions=repetitions)
    finish_runs(campaign, values)
    return campaign
