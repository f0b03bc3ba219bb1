"""API tokens expire by the installation clock (``accounts.selectors.clock``): moving it
past a token's expiry makes the API refuse the token, as the real time would."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.services.users import api_token_issue, api_token_revoke

pytestmark = pytest.mark.django_db


def _me(raw: str) -> int:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return api.get("/api/v1/me/").status_code


def test_a_token_is_refused_once_the_clock_passes_its_expiry(
    buyer: Any, clock: Any
) -> None:
    token, raw = api_token_issue(user=buyer, name="CI uploader")
    clock.travel_to(token.expires_at - timedelta(seconds=1))
    assert _me(raw) == 200

    clock.travel_to(token.expires_at + timedelta(seconds=1))

    assert _me(raw) == 401


def test_a_token_expires_counted_from_the_clock_at_issue(
    buyer: Any, clock: Any, settings: Any
) -> None:
    issued_at = clock.advance(days=400)

    token, _raw = api_token_issue(user=buyer, name="CI uploader")

    ttl = timedelta(days=settings.REPROGATE_API_TOKEN_TTL_DAYS)
    assert token.expires_at == issued_at + ttl
    assert token.is_active


def test_a_revocation_is_stamped_by_the_clock(buyer: Any, clock: Any) -> None:
    token, _raw = api_token_issue(user=buyer, name="CI uploader")
    revoked_at = clock.advance(hours=3)

    token = api_token_revoke(token=token, actor=buyer)

    assert token.revoked_at == revoked_at
    assert not token.is_active
