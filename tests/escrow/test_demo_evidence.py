"""Acceptance 2 on the demo data: the evidence package of each demo bundle
(examples/, seeded by ``seed_demo``) verifies with ``reprogate evidence
verify``, and a single flipped byte in its archive makes it fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from artifacts.models import Bundle
from portal.demo import DEMO_BUNDLES, demo_seed
from reprogate_cli.main import main
from tests.escrow.package_support import download_to, flip, members, replaced

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def demo(settings: Any, tmp_path: Path) -> list[Bundle]:
    settings.VAR_DIR = tmp_path / "var"
    demo_seed()
    bundles = list(Bundle.objects.filter(status=Bundle.Status.ACCEPTED))
    assert all(bundle.deposits.exists() for bundle in bundles)  # by the ingest
    return bundles


@pytest.mark.parametrize(("vendor", "username"), DEMO_BUNDLES)
def test_demo_bundle_evidence_verifies_and_a_flip_fails(
    demo: list[Bundle], tmp_path: Path, capsys: Any, vendor: str, username: str
) -> None:
    bundle = next(b for b in demo if b.organisation.slug == vendor)
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    package = download_to(client, bundle, tmp_path / f"{vendor}.zip")
    archive = f"blobs/{bundle.sha256}"
    tampered = replaced(
        package, tmp_path / "t.zip", archive, flip(members(package)[archive], 100)
    )

    assert main(["evidence", "verify", str(package)]) == 0
    assert main(["evidence", "verify", str(tampered)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL  {archive}: has SHA-256" in out
