"""The gate plan pages: the plan as people read it, the buyer's draft editor (a
round trip of the rendered form changes nothing; a refused save keeps every
typed value and shows each problem beside its field; row buttons save
nothing), the JSON file in and out, and who may see and edit what."""

from __future__ import annotations

import hashlib
from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from accounts.exceptions import Problem
from accounts.models import Organisation
from artifacts.lib.canonical import canonical_json
from artifacts.models import Bundle
from gates.forms.plans import CriterionRow, GateRow, PlanEditor, attach_problems
from gates.models import GatePlan
from gates.services.plans import plan_new_version
from procurement.models import Rfp
from tests.gates.support import plan_document

pytestmark = pytest.mark.django_db


class FormFields(HTMLParser):
    """The fields a browser would post from the page's editor form."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, str] = {}
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and a.get("type") == "checkbox":
            if "checked" in a:
                self.data[name] = "on"
        elif tag == "input" and a.get("type") != "file" and name:
            self.data[name] = a.get("value", "")
        elif tag == "select":
            self._select = name
        elif (
            tag == "option"
            and self._select
            and ("selected" in a or self._select not in self.data)
        ):
            self.data[self._select] = a.get("value", "")
        elif tag == "textarea":
            self._textarea, self.data[name] = name, ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        if tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.data[self._textarea] += data


def fields(response: Any) -> dict[str, str]:
    parser = FormFields()
    parser.feed(response.content.decode())
    parser.data.pop("csrfmiddlewaretoken", None)
    return parser.data


def plan_url(rfp: Rfp, vendor: Organisation, name: str = "gates:plan") -> str:
    return reverse(name, args=[rfp.public_id, vendor.slug])


@pytest.fixture
def draft(frozen_plan: GatePlan, buyer: Any) -> GatePlan:
    return plan_new_version(plan=frozen_plan, actor=buyer)


@pytest.fixture
def editor(client_for: Any, buyer: Any) -> Client:
    client: Client = client_for(buyer)
    return client


def test_plan_page_shows_the_current_plan_readably(
    rfp: Rfp, vendor_a_org: Organisation, frozen_plan: GatePlan, editor: Client
) -> None:
    response = editor.get(plan_url(rfp, vendor_a_org))

    body = response.content.decode()
    assert response.status_code == 200
    assert body.count('data-testid="plan-gate"') == 3
    for shown in ("180 ms", "up to 198 ms", "± 10 %"):
        assert shown in body
    assert "Halt when any run fails." in body
    assert frozen_plan.sha256 in body


def test_plan_page_without_plan_offers_the_default(
    rfp: Rfp, vendor_a_org: Organisation, editor: Client
) -> None:
    response = editor.get(plan_url(rfp, vendor_a_org))

    assert 'data-testid="plan-empty"' in response.content.decode()
    assert 'data-testid="create-default"' in response.content.decode()


def test_create_default_opens_the_editor_on_the_bundles_claims(
    rfp: Rfp, vendor_a_org: Organisation, gate_bundle: Bundle, editor: Client
) -> None:
    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_create_default"))

    assert response.status_code == 302
    form = fields(editor.get(response["Location"]))
    assert (form["g-0-c-0-metric"], form["g-0-c-0-claim"]) == ("ttft_ms", "40.0")
    assert form["gates"] == "3"


def test_editor_round_trip_changes_nothing(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    assert response.status_code == 302
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_editor_saves_an_edit(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form.update({"g-0-c-0-limit_kind": "abs", "g-0-c-0-band": "12.5"})
    form.pop("g-0-c-0-blocking")

    editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    criterion = GatePlan.objects.get(pk=draft.pk).plan["gates"][0]["criteria"][0]
    assert (criterion["band"], criterion["blocking"]) == ({"abs": 12.5}, False)


def test_editor_refusal_keeps_input_and_shows_problems_by_field(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form.update({"g-0-c-0-band": "lots", "g-1-pass_pct": "101",
                 "g-2-s-0-kind": "above", "g-2-s-0-metric": "Bad Name"})  # fmt: skip

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    body = response.content.decode()
    assert response.status_code == 400
    assert fields(response) == form
    for field in ("g-0-c-0-band", "g-1-pass_pct", "g-2-s-0-metric", "g-2-s-0-value"):
        assert f'id="{field}-error"' in body
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_editor_lab_acceptance_without_note_is_refused_beside_the_note(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form["lab_environment_accepted"] = "on"

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    assert response.status_code == 400
    assert "say why the lab" in response.content.decode()
    assert GatePlan.objects.get(pk=draft.pk).lab_environment_accepted is False


@pytest.mark.parametrize(
    ("action", "field", "value"),
    [
        ("add_criterion:1", "g-1-c-1-min_runs", "3"),
        ("add_stop:0", "g-0-s-2-scenario", "*"),
        ("gate_down:0", "g-1-name", "lab-validation"),
        ("remove_gate:0", "g-0-name", "pilot"),
        ("add_gate", "g-3-stage", "lab"),
    ],
)
def test_editor_row_buttons_change_rows_without_saving(
    rfp: Rfp,
    vendor_a_org: Organisation,
    draft: GatePlan,
    editor: Client,
    action: str,
    field: str,
    value: str,
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form["g-0-name"] = "lab-validation"

    response = editor.post(
        plan_url(rfp, vendor_a_org, "gates:plan_edit"), {**form, "action": action}
    )

    assert response.status_code == 200
    assert fields(response)[field] == value
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_editor_refuses_a_draft_saved_meanwhile_keeping_input(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    GatePlan.objects.filter(pk=draft.pk).update(sha256="0" * 64)
    form["g-0-c-0-claim"] = "170"

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    assert 'data-testid="general-problems"' in response.content.decode()
    assert fields(response)["g-0-c-0-claim"] == "170"


def test_freeze_makes_the_draft_current(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    editor.post(reverse("gates:plan_freeze", args=[draft.public_id]))

    page = editor.get(plan_url(rfp, vendor_a_org)).content.decode()
    draft.refresh_from_db()
    assert draft.status == GatePlan.Status.FROZEN
    assert "Version 2" in page
    assert "supersedes v1" in page


def test_export_is_the_plans_canonical_bytes(
    frozen_plan: GatePlan, editor: Client
) -> None:
    response = editor.get(reverse("gates:plan_export", args=[frozen_plan.public_id]))

    assert hashlib.sha256(response.content).hexdigest() == frozen_plan.sha256
    assert "gate-plan.json" in response["Content-Disposition"]


def test_import_makes_a_draft(
    rfp: Rfp, vendor_a_org: Organisation, editor: Client
) -> None:
    data = canonical_json(plan_document(rfp.reference, vendor_a_org.slug))
    upload = SimpleUploadedFile("plan.json", data, "application/json")

    editor.post(plan_url(rfp, vendor_a_org, "gates:plan_import"), {"file": upload})

    assert GatePlan.objects.get().status == GatePlan.Status.DRAFT


def test_import_of_a_bad_file_shows_its_problems_and_stores_nothing(
    rfp: Rfp, vendor_a_org: Organisation, editor: Client
) -> None:
    document = plan_document("RFP-ELSEWHERE", vendor_a_org.slug)
    upload = SimpleUploadedFile("plan.json", canonical_json(document))

    response = editor.post(
        plan_url(rfp, vendor_a_org, "gates:plan_import"), {"file": upload}
    )

    assert response.status_code == 400
    assert "<code>rfp</code>: must be" in response.content.decode()
    assert not GatePlan.objects.exists()


def test_vendor_reads_its_own_frozen_plan_only(
    rfp: Rfp,
    vendor_a_org: Organisation,
    frozen_plan: GatePlan,
    draft: GatePlan,
    vendor_a: Any,
    client_for: Any,
) -> None:
    client = client_for(vendor_a)

    page = client.get(plan_url(rfp, vendor_a_org))

    assert page.status_code == 200
    assert 'data-testid="plan-actions"' not in page.content.decode()
    assert 'data-testid="plan-draft"' not in page.content.decode()
    assert client.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")).status_code == 403
    draft_file = reverse("gates:plan_export", args=[draft.public_id])
    assert client.get(draft_file).status_code == 404


def test_other_vendor_gets_404(
    rfp: Rfp,
    vendor_a_org: Organisation,
    frozen_plan: GatePlan,
    vendor_b: Any,
    client_for: Any,
) -> None:
    client = client_for(vendor_b)

    assert client.get(plan_url(rfp, vendor_a_org)).status_code == 404
    file = reverse("gates:plan_export", args=[frozen_plan.public_id])
    assert client.get(file).status_code == 404


def test_other_buyer_organisation_gets_404(
    rfp: Rfp,
    vendor_a_org: Organisation,
    draft: GatePlan,
    outsider: Any,
    client_for: Any,
) -> None:
    client = client_for(outsider)

    assert client.get(plan_url(rfp, vendor_a_org)).status_code == 404
    assert (
        client.post(plan_url(rfp, vendor_a_org, "gates:plan_edit")).status_code == 404
    )
    freeze = reverse("gates:plan_freeze", args=[draft.public_id])
    assert client.post(freeze).status_code == 404


@pytest.mark.parametrize(
    ("who", "draft_status"), [("evaluator", 403), ("labops", 404), ("auditor", 404)]
)
def test_only_buyers_edit(
    rfp: Rfp,
    vendor_a_org: Organisation,
    draft: GatePlan,
    who: str,
    draft_status: int,
    request: pytest.FixtureRequest,
    client_for: Any,
) -> None:
    client = client_for(request.getfixturevalue(who))

    assert client.get(plan_url(rfp, vendor_a_org)).status_code == 200
    assert client.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")).status_code == 403
    freeze = reverse("gates:plan_freeze", args=[draft.public_id])
    assert client.post(freeze).status_code == draft_status  # drafts: buyer side
    draft.refresh_from_db()
    assert draft.status == GatePlan.Status.DRAFT


@pytest.mark.parametrize(("count", "shown"), [("9999", 12), ("9" * 5000, 0), ("-1", 0)])
def test_editor_caps_hostile_row_counts(
    rfp: Rfp,
    vendor_a_org: Organisation,
    draft: GatePlan,
    editor: Client,
    count: str,
    shown: int,
) -> None:
    form = {"gates": count, "g-0-criteria": "-1", "g-0-stops": "x", "sha256": ""}

    response = editor.post(
        plan_url(rfp, vendor_a_org, "gates:plan_edit"), {**form, "action": "noop"}
    )

    assert response.status_code == 200
    assert response.content.decode().count('data-testid="editor-gate"') == shown
    assert GatePlan.objects.get(pk=draft.pk).document == draft.document


def test_editor_refuses_odd_numbers_beside_their_fields(
    rfp: Rfp, vendor_a_org: Organisation, draft: GatePlan, editor: Client
) -> None:
    form = fields(editor.get(plan_url(rfp, vendor_a_org, "gates:plan_edit")))
    form.update({"g-0-c-0-min_runs": "9" * 5000, "g-0-c-0-weight": "infinity",
                 "g-0-c-0-claim": "1e999", "g-0-stops": "²"})  # fmt: skip

    response = editor.post(plan_url(rfp, vendor_a_org, "gates:plan_edit"), form)

    body = response.content.decode()
    assert response.status_code == 400
    for field in ("g-0-c-0-min_runs", "g-0-c-0-weight", "g-0-c-0-claim"):
        assert f'id="{field}-error"' in body
    assert fields(response)["g-0-c-0-weight"] == "infinity"


def test_editor_problems_of_no_field_are_listed_with_their_paths() -> None:
    editor = PlanEditor(gates=[GateRow(criteria=[CriterionRow()])]).renumber()

    attach_problems(
        editor,
        [
            Problem("invalid", "must be a number", "gates[0].criteria[0].band.pct"),
            Problem("invalid", "is not a known field", "gates[0].criteria[0].x"),
            Problem("invalid", "must be 'RFP-T'", "rfp"),
            Problem("invalid", "must be an object", "gates[7]"),
        ],
    )

    criterion = editor.gates[0].criteria[0]
    assert criterion.errors == {
        "band": ["must be a number"],
        "row": ["x: is not a known field"],
    }
    assert editor.general == ["rfp: must be 'RFP-T'", "gates[7]: must be an object"]
