"""Receivers for django.contrib.auth's login signals: thin callers of services."""

from __future__ import annotations

from typing import Any

from accounts.services.users import user_login_record


def on_user_logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    user_login_record(user=user, username=user.get_username(), ok=True)


def on_user_login_failed(
    sender: Any, credentials: dict[str, Any], **kwargs: Any
) -> None:
    user_login_record(
        user=None, username=str(credentials.get("username", "")), ok=False
    )
