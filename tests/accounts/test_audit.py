from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.sites import site
from django.db import transaction
from django.test import RequestFactory

from accounts.lib.context import request_id_var
from accounts.models import AuditEvent, AuditTrailIsAppendOnly, Organisation
from accounts.services.audit import AuditOutsideTransaction, audit_record

pytestmark = pytest.mark.django_db


def _event(org: Organisation) -> AuditEvent:
    with transaction.atomic():
        return audit_record(actor=None, action="thing.happened", organisation=org)


def test_audit_event_cannot_be_updated_through_save(buyer_org: Organisation) -> None:
    event = _event(buyer_org)
    event.action = "thing.rewritten"

    with pytest.raises(AuditTrailIsAppendOnly):
        event.save()

    assert AuditEvent.objects.get(pk=event.pk).action == "thing.happened"


def test_audit_event_cannot_be_updated_through_queryset(
    buyer_org: Organisation,
) -> None:
    event = _event(buyer_org)

    with pytest.raises(AuditTrailIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).update(action="thing.rewritten")

    assert AuditEvent.objects.get(pk=event.pk).action == "thing.happened"


def test_audit_event_cannot_be_deleted(buyer_org: Organisation) -> None:
    event = _event(buyer_org)

    with pytest.raises(AuditTrailIsAppendOnly):
        event.delete()
    with pytest.raises(AuditTrailIsAppendOnly):
        AuditEvent.objects.all().delete()

    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_audit_admin_grants_no_add_change_or_delete(admin_user: Any) -> None:
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    model_admin = site._registry[AuditEvent]

    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.has_view_permission(request)


def test_audit_admin_change_view_refuses_a_post(
    admin_client: Any, buyer_org: Any
) -> None:
    event = _event(buyer_org)

    response = admin_client.post(
        f"/admin/accounts/auditevent/{event.pk}/change/", {"action": "x.y"}
    )

    assert response.status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).action == "thing.happened"


@pytest.mark.django_db(transaction=True)
def test_audit_record_refuses_to_write_outside_a_transaction() -> None:
    with pytest.raises(AuditOutsideTransaction):
        audit_record(actor=None, action="thing.happened")

    assert not AuditEvent.objects.exists()


def test_audit_record_keeps_actor_target_and_request_id(buyer: Any) -> None:
    token = request_id_var.set("req-12345678")
    try:
        with transaction.atomic():
            event = audit_record(
                actor=buyer, action="user.poked", target=buyer, data={"n": 1}
            )
    finally:
        request_id_var.reset(token)

    assert event.actor == buyer
    assert event.actor_repr == "buyer"
    assert (event.target_type.model, event.target_id) == ("user", str(buyer.pk))
    assert event.request_id == "req-12345678"
    assert event.data == {"n": 1}


def test_audit_event_survives_its_actor_being_deleted(
    buyer: Any, buyer_org: Any
) -> None:
    with transaction.atomic():
        event = audit_record(actor=buyer, action="thing.done", organisation=buyer_org)

    buyer.delete()

    event.refresh_from_db()
    assert event.actor is None
    assert event.actor_repr == "buyer"


def test_request_id_header_is_echoed_and_recorded(client: Any, buyer: Any) -> None:
    response = client.post(
        "/accounts/login/",
        {"username": "buyer", "password": "correct horse battery"},
        headers={"X-Request-ID": "trace-abcdef12"},
    )

    assert response["X-Request-ID"] == "trace-abcdef12"
    login = AuditEvent.objects.get(action="user.logged_in")
    assert login.request_id == "trace-abcdef12"
