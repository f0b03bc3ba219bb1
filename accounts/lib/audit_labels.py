"""Human labels for audit action codes, shown beside the code.

Every code written by ``audit_record`` has one here (a test greps the code base
for the codes). Codes built at run time (``bid.{action}``, ``rfp.{key}_changed``,
``release.{action}``, ``deposit.{action}``) are listed in full."""

from __future__ import annotations

from typing import Final

ACTION_LABELS: Final[dict[str, str]] = {
    # accounts
    "organisation.created": "Organisation created",
    "organisation.engaged": "Organisation engaged a provider",
    "membership.granted": "Membership granted",
    "user.created": "User created",
    "user.password_changed": "Password changed",
    "user.logged_in": "Logged in",
    "user.login_failed": "Login failed",
    "api_token.issued": "API token issued",
    "api_token.revoked": "API token revoked",
    # procurement: RFPs
    "rfp.created": "RFP created",
    "rfp.updated": "RFP edited",
    "rfp.artifacts_changed": "Required artifacts changed",
    "rfp.metrics_changed": "Metrics changed",
    "rfp.requirements_changed": "Requirements document changed",
    "rfp.criteria_changed": "Evaluation criteria changed",
    "rfp.vendor_invited": "Vendor invited",
    "rfp.vendor_uninvited": "Vendor uninvited",
    "rfp.transitioned": "RFP status changed",
    "rfp.opening_requested": "Bid opening requested",
    "rfp.opening_confirmed": "Bid opening confirmed",
    "rfp.opening_cancelled": "Bid opening cancelled",
    "rfp_template.created": "RFP template created",
    "rfp_template.deleted": "RFP template deleted",
    "addendum.issued": "Addendum issued",
    "clarification.asked": "Clarification asked",
    "clarification.answered": "Clarification answered",
    # procurement: bids, evaluation, award
    "bid.submitted": "Bid submitted",
    "bid.replaced": "Bid replaced",
    "bid.withdrawn": "Bid withdrawn",
    "bid.reconfirmed": "Bid reconfirmed",
    "bid.transitioned": "Bid status changed",
    "score_sheet.saved": "Score sheet saved",
    "score_sheet.submitted": "Score sheet submitted",
    "tco_formula.created": "TCO formula recorded",
    "award.requested": "Award requested",
    "award.request_cancelled": "Award request cancelled",
    "award.created": "Contract awarded",
    # artifacts
    "signing_key.registered": "Signing key registered",
    "signing_key.revoked": "Signing key revoked",
    "bundle.accepted": "Bundle accepted",
    "bundle.rejected": "Bundle rejected",
    "bundle.resubmitted": "Bundle uploaded again (the accepted one stands)",
    "bundle.downloaded": "Bundle downloaded",
    "evidence.downloaded": "Evidence package downloaded",
    "deposit.created": "Escrow deposit made",
    "blob.swept": "Unreferenced stored objects swept",
    "deposit.legal_hold.set": "Legal hold placed on a deposit",
    "deposit.legal_hold.released": "Legal hold released from a deposit",
    "deposit.retention.extended": "Deposit retention extended",
    "escrow.fixity_checked": "Escrow fixity checked",
    "escrow.fixity_finding": "Escrow fixity finding",
    "log.checkpoint_signed": "Log checkpoint signed",
    "release.requested": "Escrow release requested",
    "release.objected": "Vendor objected to escrow release",
    "release.approved": "Escrow release approved",
    "release.rejected": "Escrow release rejected",
    "release.withdrawn": "Escrow release withdrawn",
    "release.executed": "Escrow released",
    "release.downloaded": "Released escrow downloaded",
    # benchmarks
    "lab_pool.created": "Lab pool created",
    "lab_pool.policy_set": "Lab pool policy set",
    "lab_host.registered": "Lab host registered",
    "lab_host.key_pinned": "Lab host key pinned",
    "lab_host.key_offered": "Lab host offered another key",
    "lab_host.key_accepted": "Lab host key accepted",
    "host_token.issued": "Lab host joined (token issued)",
    "host_token.revoked": "Lab host token revoked",
    "campaign.started": "Campaign started",
    "campaign.cancelled": "Campaign cancelled",
    "run.transitioned": "Run state changed",
    "run.cancel_requested": "Run cancellation requested",
    "run.redispatched": "Run re-sent to its pool",
    "run_output.downloaded": "Run output downloaded",
    "campaign.runs_added": "Runs added to a campaign",
    # gates: plans and evaluations
    "gate_plan.created": "Gate plan created",
    "gate_plan.updated": "Gate plan draft edited",
    "gate_plan.imported": "Gate plan imported",
    "gate_plan.frozen": "Gate plan frozen",
    "gate_plan.superseded": "Gate plan superseded",
    "gate.evaluated": "Gate evaluated",
    "gate.campaign_started": "Campaign started for a gate",
    "gate.runs_scheduled": "More runs scheduled for a gate",
    # gates: decisions and re-test obligations
    "gate.decided": "Gate decision recorded",
    "gate.decision_seconded": "Gate promotion signed off",
    "gate.decision_withdrawn": "Gate promotion withdrawn",
    "report.requested": "Signed report requested",
    "report.queued": "Signed report queued again",
    "report.rendering": "Signed report rendering",
    "report.ready": "Signed report ready and deposited",
    "report.failed": "Signed report failed",
    "report.downloaded": "Signed report downloaded",
    "retest.raised": "Re-test obligation raised",
    "revalidation.raised": "Update re-validation due",
    "retest.scheduled": "Re-test requested",
    "retest.campaign_started": "Re-test campaign started",
    "retest.reopened": "Re-test failed, attempts left",
    "retest.passed": "Re-test obligation passed",
    "retest.failed": "Re-test obligation failed (breach)",
    "retest.expired": "Re-test obligation expired (breach)",
    "dispute.opened": "Verdict contested",
    "dispute.upheld": "Dispute upheld (re-test at the buyer's cost)",
    "dispute.rejected": "Dispute rejected",
    "dispute.withdrawn": "Dispute withdrawn",
}


def action_label(code: str) -> str:
    """The label of ``code``; an unknown code reads as itself, humanised."""
    label = ACTION_LABELS.get(code)
    if label is not None:
        return label
    return code.replace("_", " ").replace(".", " ").capitalize()
