from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from accounts.models import ApiToken, AuditEvent, Organisation
from accounts.services.audit import audit_record
from tests.accounts.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _record(org: Organisation, action: str, actor: Any = None) -> None:
    with transaction.atomic():
        audit_record(actor=actor, action=action, organisation=org)


def test_login_page_logs_in_and_records_it(client: Any, buyer: Any) -> None:
    response = client.post(
        "/accounts/login/", {"username": "buyer", "password": PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"] == "/dashboard/"
    assert AuditEvent.objects.filter(action="user.logged_in", actor=buyer).count() == 1


def test_anonymous_dashboard_redirects_to_login(client: Any) -> None:
    response = client.get("/", follow=True)

    assert response.redirect_chain[-1][0] == "/accounts/login/?next=/dashboard/"


def test_logout_needs_a_post(client_for: Any, buyer: Any) -> None:
    client = client_for(buyer)

    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_audit_trail_is_refused_to_vendors(client_for: Any, vendor_a: Any) -> None:
    assert client_for(vendor_a).get("/accounts/audit/").status_code == 403


def test_audit_trail_shows_own_organisation_only(
    client_for: Any, buyer: Any, buyer_org: Organisation, outsider: Any
) -> None:
    _record(buyer_org, "rfp.secret_moved")
    _record(outsider.memberships.get().organisation, "rfp.outsider_moved")

    html = client_for(buyer).get("/accounts/audit/").content.decode()

    assert "rfp.secret_moved" in html
    assert "rfp.outsider_moved" not in html


def test_auditor_reads_the_trail_of_the_buyer_that_engaged_it(
    client_for: Any, auditor: Any, buyer_org: Organisation, outsider: Any
) -> None:
    _record(buyer_org, "rfp.engaged_trail")
    _record(outsider.memberships.get().organisation, "rfp.outsider_moved")

    html = client_for(auditor).get("/accounts/audit/").content.decode()

    assert "rfp.engaged_trail" in html
    assert "rfp.outsider_moved" not in html


def test_audit_trail_filters_by_action_prefix(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _record(buyer_org, "rfp.published")
    _record(buyer_org, "membership.granted")

    html = client_for(buyer).get("/accounts/audit/", {"action": "rfp"}).content.decode()

    assert "rfp.published" in html
    assert "membership.granted" not in html


def test_audit_trail_reports_an_inverted_date_range(
    client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).get(
        "/accounts/audit/", {"since": "2026-02-01", "until": "2026-01-01"}
    )

    assert response.status_code == 200
    assert "after the" in response.content.decode()


def test_audit_trail_is_paginated(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    for n in range(51):
        _record(buyer_org, f"thing.n{n}")

    first = client_for(buyer).get("/accounts/audit/").content.decode()
    second = client_for(buyer).get("/accounts/audit/", {"page": 2}).content.decode()

    assert "Page 1 of 2" in first
    assert "thing.n50" in first
    assert "thing.n0<" not in first
    assert "thing.n0<" in second


def test_audit_trail_htmx_request_gets_only_the_rows(
    client_for: Any, buyer: Any, buyer_org: Organisation
) -> None:
    _record(buyer_org, "rfp.published")

    response = client_for(buyer).get("/accounts/audit/", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert "rfp.published" in html
    assert "<html" not in html


def test_profile_creates_a_token_shown_once(client_for: Any, vendor_a: Any) -> None:
    client = client_for(vendor_a)

    client.post("/accounts/profile/tokens/", {"name": "uploader"})
    first = client.get("/accounts/profile/").content.decode()
    second = client.get("/accounts/profile/").content.decode()

    raw = re.search(r"rgt_[A-Za-z0-9_-]{40,}", first)
    assert raw is not None
    assert raw.group(0) not in second
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw.group(0)}")
    assert api.get("/api/v1/me/").status_code == 200


def test_user_cannot_revoke_someone_elses_token(
    client_for: Any, vendor_a: Any, vendor_b: Any
) -> None:
    client_for(vendor_b).post("/accounts/profile/tokens/", {"name": "b"})
    token = ApiToken.objects.get(user=vendor_b)

    response = client_for(vendor_a).post(
        f"/accounts/profile/tokens/{token.public_id}/revoke/"
    )

    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_password_change_is_audited(client_for: Any, buyer: Any) -> None:
    response = client_for(buyer).post(
        "/accounts/password/",
        {
            "old_password": PASSWORD,
            "new_password1": "a much longer passphrase 42",
            "new_password2": "a much longer passphrase 42",
        },
    )

    assert response.status_code == 302
    buyer.refresh_from_db()
    assert buyer.check_password("a much longer passphrase 42")
    assert AuditEvent.objects.filter(action="user.password_changed").count() == 1


def test_password_change_with_wrong_old_password_changes_nothing(
    client_for: Any, buyer: Any
) -> None:
    response = client_for(buyer).post(
        "/accounts/password/",
        {"old_password": "nope", "new_password1": "x" * 20, "new_password2": "x" * 20},
    )

    assert response.status_code == 200
    buyer.refresh_from_db()
    assert buyer.check_password(PASSWORD)
    assert not AuditEvent.objects.filter(action="user.password_changed").exists()


def test_login_page_blocks_after_repeated_failures(client: Any, buyer: Any) -> None:
    for _ in range(10):
        client.post("/accounts/login/", {"username": "buyer", "password": "wrong"})

    response = client.post(
        "/accounts/login/", {"username": "buyer", "password": PASSWORD}
    )

    assert response.status_code == 429
    assert "Too many failed attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
