"""Bundle evidence for procurement: the provider registry
(``procurement.selectors.evidence_sources``),
the provider artifacts registers (``artifacts.selectors.procurement_hooks``) and the
checklist a vendor's newest accepted bundle gives against the RFP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation
from artifacts.models import Bundle
from artifacts.selectors.procurement_hooks import bundle_evidence, evidence_summary
from procurement.models import Rfp
from procurement.selectors.evidence_sources import (
    ChecklistItem,
    checklist_of,
    evidence_for,
    evidence_provider,
)
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_bundles import (
    PARTIAL_FILES,
    _uploader,
    accepted_bundle,
)
from tests.procurement.factories_evaluation import (
    RequiredArtifactFactory,
    RequiredMetricFactory,
    vendor_orgs,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_provider() -> Iterator[None]:
    with evidence_provider.swapped(None):
        yield


@pytest.fixture
def rfp(vendor_a_org: Organisation, vendor_b_org: Organisation) -> Rfp:
    rfp = RfpFactory.create(published=True, invited=[vendor_a_org, vendor_b_org])
    for kind in ("workload", "trace", "report"):
        RequiredArtifactFactory.create(rfp=rfp, kind=kind, title=f"The {kind}")
    RequiredArtifactFactory.create(rfp=rfp, kind="cost_model", mandatory=False)
    RequiredMetricFactory.create(rfp=rfp, name="ttft_ms", stats="p99")
    RequiredMetricFactory.create(rfp=rfp, name="tokens_per_s", stats="mean")
    return rfp


def test_artifacts_registers_its_provider_when_django_starts() -> None:
    assert evidence_provider.get() is bundle_evidence


def test_without_a_provider_nobody_has_evidence(
    no_provider: None, rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    accepted_bundle(rfp, vendor_a_org, tmp_path)

    assert evidence_for(rfp) == {}
    assert evidence_for(rfp, [vendor_a_org.pk]) == {}


def test_summary_of_a_real_bundle_reads_its_completeness_report(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)

    summary = evidence_for(rfp)[vendor_a_org.pk]

    assert (summary.bundle_id, summary.sha256) == (str(bundle.public_id), bundle.sha256)
    assert summary.url == f"/artifacts/bundles/{bundle.public_id}/"
    assert summary.kinds_present == ("cost_model", "environment", "harness", "workload")
    assert (summary.environment_named, summary.environment_total) == (2, 6)
    assert "Topology" in summary.environment_missing
    assert (summary.claims_in_harness, summary.claims_total) == (1, 1)
    assert summary.metrics_missing == ("tokens_per_s",)
    assert summary.environment_ok is False
    assert summary.claims_ok is True


def test_the_newest_accepted_bundle_counts_and_rejected_ones_do_not(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)
    newest = accepted_bundle(rfp, vendor_a_org, tmp_path)
    wrong_rfp = build_bundle(tmp_path / "rejected")  # names RFP-DEMO-1
    rejected = ingest(rfp, vendor_a_org, _uploader(vendor_a_org), wrong_rfp)
    assert rejected.status == Bundle.Status.REJECTED

    summary = evidence_for(rfp)[vendor_a_org.pk]

    assert summary.bundle_id == str(newest.public_id)
    assert "trace" in summary.kinds_present


def test_only_the_organisations_asked_about_are_answered(
    rfp: Rfp, vendor_a_org: Organisation, vendor_b_org: Organisation, tmp_path: Path
) -> None:
    accepted_bundle(rfp, vendor_a_org, tmp_path)
    accepted_bundle(rfp, vendor_b_org, tmp_path)

    assert set(evidence_for(rfp, [vendor_b_org.pk])) == {vendor_b_org.pk}
    assert set(evidence_for(rfp)) == {vendor_a_org.pk, vendor_b_org.pk}
    assert evidence_for(rfp, []) == {}


def test_bundles_on_another_rfp_do_not_count(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    other = RfpFactory.create(
        published=True, reference="RFP-T-OTHER", invited=[vendor_a_org]
    )
    accepted_bundle(other, vendor_a_org, tmp_path)

    assert evidence_for(rfp) == {}


def test_the_provider_answers_in_one_query_whatever_the_number_of_vendors(
    vendor_a_org: Organisation, tmp_path: Path, django_assert_num_queries: Any
) -> None:
    vendors = vendor_orgs(6)
    rfp = RfpFactory.create(published=True, invited=vendors)
    accepted_bundle(rfp, vendors[0], tmp_path)
    with CaptureQueriesContext(connection) as one:
        assert len(bundle_evidence(rfp)) == 1
    for vendor in vendors[1:]:
        accepted_bundle(rfp, vendor, tmp_path)
        accepted_bundle(rfp, vendor, tmp_path)

    with django_assert_num_queries(len(one)):
        assert len(bundle_evidence(rfp)) == 6
    assert len(one) == 1


def test_a_report_missing_parts_counts_them_as_nothing_found() -> None:
    bundle = Bundle(sha256="a" * 64, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    bundle.completeness = {"artifacts": "not a dict", "claims": {"claims": [1]}}

    summary = evidence_summary(bundle)

    assert summary.kinds_present == ()
    assert (summary.environment_named, summary.environment_total) == (0, 0)
    assert (summary.claims_in_harness, summary.claims_total) == (0, 0)
    assert (summary.checks_passed, summary.checks_total) == (0, 0)
    assert summary.environment_ok is False


def test_checklist_without_a_bundle_misses_every_required_artifact(rfp: Rfp) -> None:
    evidence = checklist_of(rfp.artifacts.all(), None)

    assert evidence.has_bundle is False
    assert [i.kind for i in evidence.mandatory_missing] == [
        "workload",
        "trace",
        "report",
    ]
    assert (evidence.mandatory_present, evidence.mandatory_total) == (0, 3)


def test_checklist_marks_artifacts_present_by_kind(
    rfp: Rfp, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)
    summary = evidence_for(rfp)[vendor_a_org.pk]

    evidence = checklist_of(rfp.artifacts.all(), summary)

    assert [(i.kind, i.present) for i in evidence.checklist] == [
        ("workload", True),
        ("trace", False),
        ("report", False),
        ("cost_model", True),
    ]
    assert (evidence.mandatory_present, evidence.mandatory_total) == (1, 3)


@pytest.mark.parametrize(
    ("kind", "present", "unverified"),
    [("report", True, True), ("report", False, False), ("trace", True, False)],
)
def test_a_supplied_report_has_its_signature_unverified(
    kind: str, present: bool, unverified: bool
) -> None:
    item = ChecklistItem(kind, "Signed benchmark reports", True, present)

    assert item.signature_unverified is unverified


def test_a_report_whose_signature_validated_is_not_unverified() -> None:
    item = ChecklistItem(
        "report", "Signed benchmark reports", True, True, signature_verified=True
    )

    assert item.signature_unverified is False
