"""The gates' admin: every gates model is registered, and its list and a row's
page answer a superuser; nothing can be added, changed or deleted there (the
services are the only writers)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.db.models import Model
from django.test import Client, RequestFactory
from django.utils import timezone

from gates.models import GateCampaign, GatePlan, RetestObligation
from gates.services.decisions import decision_record
from gates.services.disputes import dispute_open
from gates.services.reports import report_request
from tests.accounts.factories import UserFactory
from tests.gates.support import FAIL, LAB, evaluate_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

GATES_MODELS = sorted(
    apps.get_app_config("gates").get_models(), key=lambda m: m.__name__
)


@pytest.fixture
def superuser() -> Any:
    return UserFactory.create(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def gates_rows(frozen_plan: GatePlan, evaluate: Any, buyer: Any, vendor_a: Any) -> None:
    """A row of every gates model: a failed evaluation (its criteria and the
    obligation it raised), the vendor's dispute of it, the buyer's hold, its
    report requested, and the gate campaign of the evaluated campaign."""
    evaluation = evaluate(frozen_plan, FAIL)
    dispute_open(evaluation=evaluation, reason="Warm cache.", actor=vendor_a)
    decision_record(
        plan=frozen_plan, gate=LAB, kind="hold", rationale="Misses p99.", actor=buyer
    )
    report_request(evaluation=evaluation, actor=buyer)
    GateCampaign.objects.create(
        plan=frozen_plan,
        gate=LAB,
        campaign=evaluation.campaign,
        requested_by=buyer,
        requested_at=timezone.now(),
    )
    assert RetestObligation.objects.exists()


def _url(model: type[Model], page: str = "") -> str:
    return f"/admin/gates/{model._meta.model_name}/{page}"


def test_every_gates_model_is_in_the_admin() -> None:
    missing = [m.__name__ for m in GATES_MODELS if m not in admin.site._registry]

    assert missing == []


@pytest.mark.parametrize("model", GATES_MODELS, ids=lambda m: m.__name__)
def test_the_list_and_a_row_answer_a_superuser(
    gates_rows: None, superuser: Any, model: type[Model]
) -> None:
    client = Client()
    client.force_login(superuser)
    row = model._default_manager.order_by("pk").first()

    listed = client.get(_url(model))
    shown = client.get(_url(model, f"{row.pk}/change/"))

    assert listed.status_code == 200
    assert shown.status_code == 200
    assert client.get(_url(model, "?q=RFP")).status_code == 200


@pytest.mark.parametrize("model", GATES_MODELS, ids=lambda m: m.__name__)
def test_nothing_is_added_changed_or_deleted_there(
    superuser: Any, model: type[Model]
) -> None:
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]

    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
