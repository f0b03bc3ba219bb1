from __future__ import annotations

from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"

    def ready(self) -> None:
        # a buyer's audit trail (accounts) includes its vendors' events on its
        # RFPs, sealed until opening: procurement tells accounts which those are.
        from procurement.selectors.audit import register

        register()
