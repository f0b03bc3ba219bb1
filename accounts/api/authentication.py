from __future__ import annotations

from datetime import datetime, timedelta

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiToken
from accounts.selectors import clock
from accounts.services.users import token_digest
from accounts.views.disk_full import unless_disk_full

# Writing last_used_at on every request would serialise the API on one row.
_LAST_USED_RESOLUTION = timedelta(minutes=5)


def _note_use(token: ApiToken, now: datetime) -> None:
    """Record when the token was last used, if the disk lets us: on a full disk
    the request goes on (a read must not fail for the sake of this note)."""
    with unless_disk_full(f"last use of API token {token.prefix}… at {now}"):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <token>``, checked against the stored digest."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[object, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: use 'Token <token>'."
            )
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        token = (
            ApiToken.objects.select_related("user")
            .filter(digest=token_digest(raw))
            .first()
        )
        if token is None or not token.is_active or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        now = clock.now()
        if (
            token.last_used_at is None
            or now - token.last_used_at > _LAST_USED_RESOLUTION
        ):
            _note_use(token, now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
