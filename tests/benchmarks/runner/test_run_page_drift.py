"""The run page explains each drift line: the value the vendor declared in its
bundle (naming the vendor), the value the host captured, the severity, and the
drift policy's rule that set it (the RFP's own rule or the default one)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from benchmarks.models import Campaign, LabPool, Run
from tests.benchmarks.runner.support import runs_of, start

pytestmark = pytest.mark.django_db


def _drift(**fields: Any) -> dict[str, Any]:
    return {"field": "hosts.gpu.gpu.count", "declared": "8", "captured": "0",
            "severity": "major", "message": "GPU count: declared 8, this host has 0",
            **fields}  # fmt: skip


def _page_text(run: Run, client_for: Any, user: Any) -> str:
    page = client_for(user).get(reverse("benchmarks:run_detail", args=[run.public_id]))
    assert page.status_code == 200
    return " ".join(
        html.unescape(re.sub(r"<[^>]+>", " ", page.content.decode())).split()
    )


@pytest.fixture
def run(bundle: Any, pool: LabPool, labops: Any) -> Run:
    campaign: Campaign = start(bundle, pool, labops)
    return runs_of(campaign)[0]


def test_a_drift_line_names_the_vendor_the_rule_and_its_policy(
    run: Run, client_for: Any, buyer: Any
) -> None:
    reference = run.campaign.rfp.reference
    drift = [
        _drift(rule="accelerator.count", policy="default"),
        _drift(field="hosts.gpu.gpu.vbios", severity="info", declared="96.00.99",
               captured="96.00.98", rule="accelerator.firmware.patch",
               policy=reference),
    ]  # fmt: skip
    Run.objects.filter(pk=run.pk).update(drift=drift, environment={"gpus": []})

    text = _page_text(run, client_for, buyer)

    vendor = run.campaign.bundle.organisation.name
    assert f"Declared by {vendor}" in text
    assert f"a value {vendor} declared in its bundle's environment manifest" in text
    assert "accelerator.count → major default rule" in text
    assert f"accelerator.firmware.patch → info set by {reference}'s drift policy" in (
        text
    )


def test_a_drift_line_recorded_before_rules_shows_no_rule(
    run: Run, client_for: Any, buyer: Any
) -> None:
    Run.objects.filter(pk=run.pk).update(drift=[_drift()], environment={"gpus": []})

    text = _page_text(run, client_for, buyer)

    assert "GPU count: declared 8, this host has 0" in text
    assert "default rule" not in text
