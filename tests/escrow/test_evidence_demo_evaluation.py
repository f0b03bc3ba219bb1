"""The demo's gate evaluations (``seed_demo --lab-validation``: real lab runs of
both example bundles, lab validation judged on them) have evidence packages that
``reprogate evidence verify`` accepts, re-evaluating each gate from the deposited
plan and results; a results.json changed in the package is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from benchmarks.sandbox.capabilities import host_support
from gates.models import Evaluation
from portal.demo import LAB_RFP, demo_seed
from tests.benchmarks.runner.support import runner_work_dir  # noqa: F401 (fixture)
from tests.escrow.package_support import flip, members, replaced
from tests.escrow.test_evidence_evaluation import _blob_of, download_to, verify

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _runner(settings: Any, tmp_path: Path, runner_work_dir: Path) -> None:  # noqa: F811
    settings.VAR_DIR = tmp_path
    settings.REPROGATE_REPORT_KEYS_DIR = str(tmp_path / "keys" / "reports")
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(
        tmp_path / "keys" / "reports" / "statement.pem"
    )
    if not host_support().bwrap_works:
        pytest.fail("the demo's lab runs need bubblewrap (apt-get install bubblewrap)")


def test_the_demo_evaluations_packages_verify_and_a_change_is_named(
    tmp_path: Path,
) -> None:
    demo_seed(lab_validation=True)
    evaluations = {
        e.vendor_organisation.slug: e
        for e in Evaluation.objects.filter(rfp__reference=LAB_RFP)
    }
    assert sorted(evaluations) == ["acme-flash", "bolt-storage"]
    client = Client()
    client.force_login(get_user_model().objects.get(username="auditor"))

    for vendor, evaluation in evaluations.items():
        package = download_to(client, evaluation, tmp_path / f"{vendor}.zip")
        status, out = verify(package)
        assert status == 0, out
        assert f"byte for byte ({evaluation.verdict})" in out

    package = tmp_path / "acme-flash.zip"
    files = members(package)
    name = _blob_of(files, "evaluation", "results.json")
    position = files[name].index(b'"value":') + len(b'"value":')
    tampered = replaced(package, tmp_path / "t.zip", name, flip(files[name], position))
    status, out = verify(tampered)
    assert status == 1
    assert f"results.json ({name}) has SHA-256" in out
