from __future__ import annotations

from django.apps import AppConfig


class ProcurementConfig(AppConfig):
    name = "procurement"

    def ready(self) -> None:
        # a buyer's audit trail (accounts) includes its vendors' events on its
        # RFPs, sealed until opening: procurement tells accounts which those are.
        from accounts.selectors.audit_scope import rfp_scope
        from procurement.selectors.audit import RFP_TRAIL_SCOPE

        rfp_scope.register(RFP_TRAIL_SCOPE)
