"""The plan editor's canary hosts: a gate's ``hosts`` round-trips through the
form, typed names (commas or spaces) become the list, the stage ``canary`` is
offered, and a bad list is refused beside the gate's hosts field."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import Organisation
from gates.models import GatePlan
from gates.services.plans import plan_new_version
from procurement.models import Rfp
from tests.gates.support import make_frozen_plan, plan_document
from tests.gates.test_plan_views import fields, plan_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(rfp: Rfp, vendor_a_org: Organisation, buyer: Any) -> GatePlan:
    doc = plan_document(rfp.reference, vendor_a_org.slug)
    doc["gates"][1].update(stage="canary", hosts=["agent@lab-07", "agent@lab-08"])
    frozen = make_frozen_plan(rfp, vendor_a_org, buyer, doc)
    return plan_new_version(plan=frozen, actor=buyer)


@pytest.fixture
def editor(client_for: Any, buyer: Any) -> Client:
    client: Client = client_for(buyer)
    return client


def test_the_hosts_round_trip_unchanged(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    page = editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit"))
    form = fields(page)

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    assert response.status_code == 302
    assert form["g-1-hosts"] == "agent@lab-07, agent@lab-08"
    assert form["g-1-stage"] == "canary"
    assert '<option value="canary"' in page.content.decode()
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_typed_hosts_become_the_gates_list(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form.update({"g-1-hosts": " agent@lab-09,agent@lab-07  agent@lab-08 ",
                 "g-2-hosts": "", "g-0-hosts": ""})  # fmt: skip

    editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    gates = GatePlan.objects.get(pk=draft.pk).plan["gates"]
    assert gates[1]["hosts"] == ["agent@lab-09", "agent@lab-07", "agent@lab-08"]
    assert "hosts" not in gates[0]
    assert "hosts" not in gates[2]


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("", "is required with stage canary"),
        (
            "agent@lab-07, agent@lab-07",
            "host 2: names the host &#x27;agent@lab-07&#x27;",
        ),
        ("agent/lab", "host 1: must be a host name"),
    ],
)
def test_bad_hosts_are_refused_beside_the_field(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client,
    typed: str, message: str,
) -> None:  # fmt: skip
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form["g-1-hosts"] = typed

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    body = response.content.decode()
    assert response.status_code == 400
    error = body.split('id="g-1-hosts-error"', 1)[1].split("</ul>", 1)[0]
    assert message in error
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_the_plan_page_names_a_gates_canary_hosts(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    body = editor.get(plan_url(rfp, vendor_a_org)).content.decode()

    assert body.count('data-testid="plan-gate-hosts"') == 2  # frozen and draft
    assert (
        "Runs only on the canary hosts <code>agent@lab-07</code>, "
        "<code>agent@lab-08</code> of the pool"
    ) in body
