from __future__ import annotations

from django.apps import AppConfig


class GatesConfig(AppConfig):
    name = "gates"

    def ready(self) -> None:
        from benchmarks.signals import campaign_finished
        from gates.services.runs import campaign_finished_received

        campaign_finished.connect(
            campaign_finished_received, dispatch_uid="gates.campaign_finished"
        )
