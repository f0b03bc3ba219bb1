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
        # an escrow release may cite a breached re-test obligation or an
        # undeposited update (artifacts
        # must not import gates: it reads them through its breach source)
        from artifacts.selectors.breaches import breach_source
        from gates.selectors.breaches import gate_breaches

        breach_source.register(gate_breaches)
        # ... and a vendor owing a re-test uploads its revised bundle after the
        # submission deadline
        from artifacts.selectors.retest_window import retest_window_source
        from gates.selectors.obligations import retest_upload_window

        retest_window_source.register(retest_upload_window)
        # ... and an accepted update bundle re-opens the gates that passed on the
        # old environment (a re-validation obligation per gate)
        from artifacts.services.update_hooks import update_accepted
        from gates.services.revalidation import update_revalidation_raise

        update_accepted.register(update_revalidation_raise, key=self.name)
        # ... and the daily fixity check compares each evaluation row with its
        # escrow deposit
        from artifacts.services.fixity.sources import fixity_sources
        from gates.selectors.fixity import evaluation_findings, report_findings

        fixity_sources.register(evaluation_findings, key="gates.evaluations")
        # ... and takes a gate decision's steps in the log as the gates' records
        from artifacts.services.fixity.sources import log_record_schemas
        from gates.services.decisions import LOG_SCHEMA

        log_record_schemas.register(self.name, key=LOG_SCHEMA)
        # ... and each ready signed report's PDF and statement with theirs
        fixity_sources.register(report_findings, key="gates.reports")
        # every evidence package holds the key the reports' statements verify with
        from artifacts.services.evidence import package_files
        from gates.lib.engine.evidence import REPORTS_KEY
        from gates.services.evidence import reports_key_file

        package_files.register(reports_key_file, key=REPORTS_KEY)
        # procurement's comparison, TCO and award read the lab's verdicts on each
        # vendor's claims (procurement must not import gates: its lab-validation
        # provider)
        from gates.selectors.reproduced import (
            baseline_figures,
            lab_validations_for,
            rfp_uses_lab_validation,
        )
        from procurement.selectors.reproduced import (
            LabValidationProvider,
            lab_validation,
        )

        lab_validation.register(
            LabValidationProvider(
                lab_validations_for, rfp_uses_lab_validation, baseline_figures
            )
        )
        # the lab's campaign form offers the gates a campaign may be run for, and
        # the campaign page names the gates that judge it (benchmarks must not
        # import gates: its gate campaign source)
        from benchmarks.selectors.gate_campaigns import (
            GateCampaignSource,
            gate_campaign_source,
        )
        from gates.selectors.runs import campaign_gate_links, gate_choice_list_for
        from gates.services.runs import gate_campaign_start_chosen

        gate_campaign_source.register(
            GateCampaignSource(
                choices=gate_choice_list_for,
                start=gate_campaign_start_chosen,
                judged_by=campaign_gate_links,
            )
        )
