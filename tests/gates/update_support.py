"""Update bundles after the award: the RFP of the gates tests with a lab
validation PASS of vendor A's accepted bundle, awarded to vendor A, and update
bundles built from the runner bundle's files with ``supersedes`` and
``changes`` added to the manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from accounts.models import Organisation
from artifacts.models import Bundle
from artifacts.services.ingest import bundle_ingest
from gates.models import GatePlan
from procurement.models import Rfp
from tests.artifacts.corpus.build import manifest_bytes
from tests.artifacts.ingest_support import build_bundle
from tests.benchmarks.runner.support import ENVIRONMENT, bundle_files, runner_manifest
from tests.escrow.release_support import award_to
from tests.gates.support import PASS

DRIVER = {"component": "gpu_driver", "from": "550.54.15", "to": "560.35.03"}


def update_bundle(
    directory: Path,
    rfp: Rfp,
    vendor: Organisation,
    user: Any,
    *,
    supersedes: str | None,
    changes: list[dict[str, str]] | None = None,
    environment: dict[str, Any] | None = None,
    key: str = "vendor_a",
) -> Bundle:
    """Ingest a bundle of the runner's files (``environment`` replacing the
    declared one) whose manifest names ``supersedes`` and lists ``changes``."""
    files = bundle_files()
    if environment is not None:
        files["environment/manifest.json"] = json.dumps(environment).encode()
    manifest = json.loads(runner_manifest(files, rfp, vendor))
    if supersedes is not None:
        manifest["supersedes"] = supersedes
        manifest["changes"] = changes or []
    path = build_bundle(directory, files, manifest=manifest_bytes(manifest), key=key)
    return bundle_ingest(
        rfp=rfp, organisation=vendor, uploaded_by=user, upload_path=path,
        filename=path.name,
    )  # fmt: skip


def newer_driver() -> dict[str, Any]:
    return {**ENVIRONMENT, "gpu": {"driver": DRIVER["to"]}}


def passed_and_awarded(
    evaluate: Any, plan: GatePlan, rfp: Rfp, vendor: Organisation, buyer: Any
) -> None:
    """The lab validation of ``plan`` passes, then ``rfp`` is awarded."""
    assert evaluate(plan, PASS).verdict == "PASS"
    award_to(rfp, vendor, buyer)
