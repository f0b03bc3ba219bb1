"""A stop-loss ``check_flagged`` in the plan editor (round trip, saved as the
engine reads it), on the plan page and the gate page, and in the report, in
words."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from accounts.models import Organisation
from gates.forms.plans import StopLossRow
from gates.models import GatePlan
from gates.selectors.evaluations import StopLossOutcome
from gates.selectors.plans import stop_loss_sentence
from gates.selectors.report_content import _condition
from gates.services.plans import plan_new_version
from procurement.models import Rfp
from tests.gates.support import STOP_LOSS, make_frozen_plan, plan_document
from tests.gates.test_plan_views import fields

pytestmark = pytest.mark.django_db

CHECKS = {"id": "anti-gaming", "check_flagged": ["seed_ignored", "cold_cache_unproven"]}


@pytest.mark.parametrize(
    "stop",
    [CHECKS, {"id": "seed", "check_flagged": "seed_ignored"}],
)
def test_the_editor_row_reads_and_writes_check_flagged(stop: dict[str, Any]) -> None:
    row = StopLossRow.from_document(stop)

    assert row.kind == "checks"
    assert row.document() == stop


def test_the_editor_round_trip_keeps_check_flagged(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, client_for: Any
) -> None:
    document = plan_document(rfp.reference, vendor_a_org.slug,
                             stop_loss=[*STOP_LOSS, CHECKS])  # fmt: skip
    frozen = make_frozen_plan(rfp, vendor_a_org, buyer, document)
    draft = plan_new_version(plan=frozen, actor=buyer)
    editor: Client = client_for(buyer)
    url = reverse("gates:plan_edit", args=[rfp.public_id, vendor_a_org.slug])

    form = fields(editor.get(url))
    response = editor.post(url, form)

    assert form["g-0-s-2-checks"] == "seed_ignored, cold_cache_unproven"
    assert response.status_code == 302
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_the_editor_names_an_unknown_check_beside_its_row(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, client_for: Any
) -> None:
    plan_new_version(plan=make_frozen_plan(rfp, vendor_a_org, buyer), actor=buyer)
    editor: Client = client_for(buyer)
    url = reverse("gates:plan_edit", args=[rfp.public_id, vendor_a_org.slug])
    form = fields(editor.get(url))
    form.update({"g-0-s-0-kind": "checks", "g-0-s-0-checks": "seed_ignore"})

    response = editor.post(url, form)

    body = response.content.decode()
    assert response.status_code == 400
    assert 'id="g-0-s-0-checks-error"' in body
    assert "must name seed_ignored, cold_cache_unproven" in body


def test_check_flagged_reads_as_words_everywhere() -> None:
    outcome = StopLossOutcome(
        id="anti-gaming", triggered=True, runs=[], reason="", condition=CHECKS
    )

    item = render_to_string("gates/_stop_loss.html", {"s": outcome})

    assert stop_loss_sentence(CHECKS) == (
        "Halt when the lab's anti-gaming check seed_ignored or cold_cache_unproven "
        "flags any run."
    )
    assert _condition(CHECKS) == (
        "anti-gaming check flagged: seed_ignored, cold_cache_unproven"
    )
    assert "an anti-gaming check flags a run: seed_ignored, cold_cache_unproven" in item
