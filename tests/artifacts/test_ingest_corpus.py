"""Acceptance 2: every hostile or broken bundle of the corpus, uploaded by
acme-flash to RFP-DEMO-1 through ``bundle_ingest``, is rejected with exactly its
problem codes, and leaves nothing behind but the rejection record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from accounts.models import AuditEvent, Organisation
from artifacts.lib.problems import PROBLEM_CODES
from artifacts.models import Blob, Bundle, BundleFile
from tests.artifacts.corpus.build import CORPUS, CorpusCase, good_bundle
from tests.artifacts.ingest_support import (
    ingest,
    open_rfp,
    register_corpus_keys,
    storage_names,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus_world(vendor_a: Any, vendor_a_org: Organisation, vendor_b_org: Organisation):
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    return open_rfp(vendor_a_org, vendor_b_org)


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_corpus_case_is_rejected_with_exactly_its_codes_and_nothing_kept(
    tmp_path: Path, case: CorpusCase, corpus_world: Any, vendor_a: Any,
    vendor_a_org: Organisation,
) -> None:  # fmt: skip
    path = case.build(tmp_path)

    bundle = ingest(corpus_world, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.REJECTED
    assert {p["code"] for p in bundle.problems} == case.codes
    assert all(p["message"] and p["code"] in PROBLEM_CODES for p in bundle.problems)
    assert storage_names() == []
    assert not Blob.objects.exists()
    assert not BundleFile.objects.exists()
    assert Bundle.objects.get().archive_blob is None


def test_the_good_bundle_passes_the_same_setup(
    tmp_path: Path, corpus_world: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    bundle = ingest(corpus_world, vendor_a_org, vendor_a, good_bundle(tmp_path))

    assert bundle.problems == []
    assert bundle.status == Bundle.Status.ACCEPTED


def test_a_rejection_is_audited_for_the_vendor_only(
    tmp_path: Path, corpus_world: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    case = next(c for c in CORPUS if c.name == "revoked_key")

    bundle = ingest(corpus_world, vendor_a_org, vendor_a, case.build(tmp_path))

    event = AuditEvent.objects.get(action="bundle.rejected")
    assert event.organisation == vendor_a_org
    assert event.target_id == str(bundle.pk)
    assert event.data["codes"] == ["signature_key_revoked"]
    assert bundle.signing_key is not None
    assert bundle.signing_key.revoked_at is not None
