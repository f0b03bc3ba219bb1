from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts and audit trail"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.core.signals import request_finished, request_started

        from accounts.api import schema  # noqa: F401 - schema registers itself
        from accounts.selectors.users import (
            memberships_cache_end,
            memberships_cache_start,
        )
        from accounts.services import receivers as signals

        request_started.connect(memberships_cache_start, dispatch_uid="rg_ms_start")
        request_finished.connect(memberships_cache_end, dispatch_uid="rg_ms_end")

        user_logged_in.connect(signals.on_user_logged_in, dispatch_uid="rg_logged_in")
        user_login_failed.connect(
            signals.on_user_login_failed, dispatch_uid="rg_login_failed"
        )
