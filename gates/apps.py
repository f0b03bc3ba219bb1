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
        # an escrow release may cite a breached re-test obligation (artifacts
        # must not import gates: it reads them through its breach source)
        from artifacts.selectors.breaches import register_breach_source
        from gates.selectors.breaches import obligation_breaches

        register_breach_source(obligation_breaches)
        # ... and a vendor owing a re-test uploads its revised bundle after the
        # submission deadline
        from artifacts.selectors.retest_window import register_retest_window
        from gates.selectors.obligations import retest_upload_window

        register_retest_window(retest_upload_window)
        # ... and the daily fixity check compares each evaluation row with its
        # escrow deposit
        from artifacts.services.fixity.sources import register_fixity_source
        from gates.selectors.fixity import evaluation_findings

        register_fixity_source("gates.evaluations", evaluation_findings)
