"""The demo seeding builds, signs and ingests the two example bundles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from artifacts.models import Bundle, SigningKey
from portal.demo import DEMO_RFP, demo_key, demo_seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.mark.slow
def test_seeding_ingests_two_accepted_bundles_signed_by_registered_keys(
    var_dir: Path,
) -> None:
    demo_seed()

    bundles = Bundle.objects.filter(rfp__reference=DEMO_RFP)
    assert sorted(b.organisation.slug for b in bundles) == [
        "acme-flash",
        "bolt-storage",
    ]
    assert {b.status for b in bundles} == {Bundle.Status.ACCEPTED}
    assert all(b.signing_key.organisation_id == b.organisation_id for b in bundles)


@pytest.mark.slow
def test_seeding_twice_adds_no_bundle_and_no_key(var_dir: Path) -> None:
    demo_seed()

    report = demo_seed()

    assert str(report) == "Demo data already present; nothing changed."
    # RFP-DEMO-1 and RFP-DEMO-2, two each, and the buyer's baseline on RFP-DEMO-2
    assert Bundle.objects.count() == 5
    assert SigningKey.objects.count() == 3


def test_demo_keys_live_under_var_dir_and_are_reused(var_dir: Path) -> None:
    first = demo_key("acme-flash")

    again = demo_key("acme-flash")

    assert (var_dir / "demo-keys" / "acme-flash").stat().st_mode & 0o077 == 0
    assert again.public.fingerprint == first.public.fingerprint


@pytest.mark.slow
def test_a_rejected_demo_bundle_is_retried_by_the_next_seed(var_dir: Path) -> None:
    demo_seed()
    Bundle.objects.filter(organisation__slug="bolt-storage").update(
        status=Bundle.Status.REJECTED
    )

    report = demo_seed()

    assert "bundle bolt-storage (accepted)" in report.created
