from __future__ import annotations

from django.apps import AppConfig


class GatesConfig(AppConfig):
    name = "gates"

    def ready(self) -> None:
        # a campaign's end starts the verdict path (gates.services.pipeline): the
        # receiver queues its task
        from benchmarks.services.receivers import campaign_finished
        from gates.tasks import campaign_finished_received

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
        from gates.selectors.fixity import evaluation_findings, report_findings

        register_fixity_source("gates.evaluations", evaluation_findings)
        # ... and takes a gate decision's steps in the log as the gates' records
        from artifacts.services.fixity.sources import register_log_record_schema
        from gates.services.decisions import LOG_SCHEMA

        register_log_record_schema(LOG_SCHEMA)
        # ... and each ready signed report's PDF and statement with theirs
        register_fixity_source("gates.reports", report_findings)
        # every evidence package holds the key the reports' statements verify with
        from artifacts.services.evidence import register_package_file
        from gates.lib.engine.evidence import REPORTS_KEY
        from gates.services.evidence import reports_key_file

        register_package_file(REPORTS_KEY, reports_key_file)
        # procurement's comparison, TCO and award read the lab's verdicts on each
        # vendor's claims (procurement must not import gates: its lab-validation
        # source)
        from gates.selectors.reproduced import (
            lab_validations_for,
            rfp_uses_lab_validation,
        )
        from procurement.selectors.reproduced import register_lab_validation_source

        register_lab_validation_source(lab_validations_for, rfp_uses_lab_validation)
        # the lab's campaign form offers the gates a campaign may be run for, and
        # the campaign page names the gates that judge it (benchmarks must not
        # import gates: its gate campaign source)
        from benchmarks.selectors.gate_campaigns import (
            GateCampaignSource,
            register_gate_campaign_source,
        )
        from gates.selectors.runs import campaign_gate_links, gate_choice_list_for
        from gates.services.runs import gate_campaign_start_chosen

        register_gate_campaign_source(
            GateCampaignSource(
                choices=gate_choice_list_for,
                start=gate_campaign_start_chosen,
                judged_by=campaign_gate_links,
            )
        )
