"""Who may see another organisation's objects, route by route: data the
authorization matrix (``test_authz_matrix.py``) checks against every route of the
URL configuration. A route without an entry here fails the matrix by its name.

``DENY``: the route names an object (its URL's parameters); a persona of another
organisation, and an anonymous visitor, are refused it (404, 403, 401, 405, or a
redirect to a login page) and the response shows none of the object's data.
``OWN``: the route names no object and shows the persona only what its own
organisation may see (its lists, its forms); the check is that no other
organisation's data shows. ``shared``: the route names an object that is the
installation's rather than an organisation's, with the reason; it may be shown, but
no other organisation's data in it. ``PUBLIC``: open by design, with the reason.
``writes_own``: an unsafe request with an empty body may change the requester's
own rows (say which and why); another organisation's rows never change."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Rule:
    kind: str  # "deny", "own", "shared" or "public"
    why: str = ""
    writes_own: str = ""


DENY = Rule("deny")
OWN = Rule("own")


def public(why: str) -> Rule:
    return Rule("public", why)


def shared(why: str) -> Rule:
    return Rule("shared", why)


def own_writes(why: str) -> Rule:
    return Rule("own", writes_own=why)


ADMIN = Rule("deny", "the admin is for staff; no persona is staff (login redirect)")
# The admin asks only whether the user is staff, never which organisation it is of:
# it is walked anonymously and as one (non-staff) persona.
ADMIN_PERSONAS = ("anonymous", "buyer")

ROUTES: dict[str, Rule] = {
    # Portal and accounts.
    "home": public("redirects to the dashboard (or the login page)"),
    "healthz": public("the load balancer's liveness probe: status only"),
    # Prometheus' scrape (counts per pool and state, pool names): only from the
    # REPROGATE_METRICS_ALLOWED networks or with its token, never for a persona.
    "metrics": DENY,
    "portal:dashboard": OWN,
    "accounts:login": Rule(
        "public",
        "the login form",
        writes_own=(
            "a failed login is counted for the lockout (accounts.services.throttle)"
        ),
    ),
    "accounts:logout": own_writes("ends the requester's own session"),
    "accounts:password_change": OWN,
    "accounts:profile": OWN,
    "accounts:api_token_create": OWN,
    "accounts:api_token_revoke": DENY,
    "accounts:audit_list": OWN,
    "accounts:audit_csv": OWN,
    "accounts:audit_json": OWN,
    "accounts:notifications": OWN,
    # Procurement pages.
    "procurement:rfp_new": OWN,
    "procurement:rfp_edit": DENY,
    "procurement:rfp_list": OWN,
    "procurement:rfp_template_list": OWN,
    "procurement:rfp_template_delete": DENY,
    "procurement:rfp_detail": DENY,
    "procurement:rfp_publish": DENY,
    "procurement:rfp_cancel": DENY,
    "procurement:rfp_invite": DENY,
    "procurement:rfp_uninvite": DENY,
    "procurement:rfp_template_save": DENY,
    "procurement:rfp_clarifications": DENY,
    "procurement:rfp_clarification_ask": DENY,
    "procurement:clarification_detail": DENY,
    "procurement:clarification_answer": DENY,
    "procurement:rfp_addendum_issue": DENY,
    "procurement:rfp_bids": DENY,
    "procurement:bid_detail": DENY,
    "procurement:bid_document": DENY,
    "procurement:bid_edit": DENY,
    "procurement:bid_withdraw": DENY,
    "procurement:bid_reconfirm": DENY,
    "procurement:bid_receipts": DENY,
    "procurement:bid_receipt": DENY,
    "procurement:bid_receipt_json": DENY,
    "procurement:opening_request": DENY,
    "procurement:opening_confirm": DENY,
    "procurement:opening_cancel": DENY,
    "procurement:rfp_evaluation": DENY,
    "procurement:rfp_evaluation_evidence": DENY,
    "procurement:rfp_comparison": DENY,
    "procurement:rfp_comparison_csv": DENY,
    "procurement:rfp_comparison_json": DENY,
    "procurement:rfp_tco": DENY,
    "procurement:rfp_award": DENY,
    "procurement:award_confirm": DENY,
    "procurement:award_cancel": DENY,
    "procurement:rfp_audit": DENY,
    # Artifacts and escrow pages.
    "artifacts:bundle_upload": DENY,
    "artifacts:bundle_detail": DENY,
    "artifacts:signing_keys": OWN,
    "artifacts:signing_key_revoke": DENY,
    "artifacts:allowed_signers": OWN,
    "artifacts:escrow_deposits": OWN,
    "artifacts:escrow_log": OWN,
    "artifacts:escrow_log_seen": own_writes("marks the log read for the requester"),
    "artifacts:escrow_deposit": DENY,
    "artifacts:escrow_deposit_leaf": DENY,
    "artifacts:escrow_deposit_hold": DENY,
    "artifacts:escrow_deposit_retention": DENY,
    "artifacts:release_list": OWN,
    "artifacts:release_request": DENY,
    "artifacts:release_detail": DENY,
    "artifacts:release_object": DENY,
    "artifacts:release_approve": DENY,
    "artifacts:release_reject": DENY,
    "artifacts:release_withdraw": DENY,
    "artifacts:release_execute": DENY,
    "artifacts:release_certificate": DENY,
    "artifacts:release_certificate_json": DENY,
    "artifacts:release_package": DENY,
    "artifacts:fixity_runs": OWN,
    "artifacts:fixity_run": shared(
        "a fixity run checks the whole installation: buyers and auditors see every"
        " run, with only the findings and counts of their own buyers"
    ),
    # Lab pages.
    "benchmarks:pool_list": OWN,
    "benchmarks:pool_host_join": DENY,
    "benchmarks:pool_token_revoke": DENY,
    "benchmarks:pool_host_key_accept": DENY,
    "benchmarks:pool_policy_edit": DENY,
    "benchmarks:campaign_list": OWN,
    "benchmarks:campaign_start": OWN,
    "benchmarks:campaign_detail": DENY,
    "benchmarks:campaign_runs": DENY,
    "benchmarks:campaign_cancel": DENY,
    "benchmarks:campaign_charts": DENY,
    "benchmarks:campaign_metrics_csv": DENY,
    "benchmarks:campaign_metrics_json": DENY,
    "benchmarks:run_detail": DENY,
    "benchmarks:run_live": DENY,
    "benchmarks:run_cancel": DENY,
    "benchmarks:run_output_download": DENY,
    # Gate pages.
    "gates:board": DENY,
    "gates:gate": DENY,
    "gates:criterion": DENY,
    "gates:evaluation": DENY,
    "gates:evaluation_document": DENY,
    "gates:lab_deviations": OWN,
    "gates:plan": DENY,
    "gates:plan_edit": DENY,
    "gates:plan_create_default": DENY,
    "gates:plan_import": DENY,
    "gates:plan_version": DENY,
    "gates:plan_freeze": DENY,
    "gates:plan_new_version": DENY,
    "gates:plan_export": DENY,
    "gates:decisions": DENY,
    "gates:decide": DENY,
    "gates:decision_second": DENY,
    "gates:decision_withdraw": DENY,
    "gates:retests": OWN,
    "gates:retest": DENY,
    "gates:retest_request": DENY,
    "gates:retest_campaign_start": DENY,
    "gates:schedule_runs": DENY,
    "gates:evaluation_report": DENY,
    "gates:evaluation_report_request": DENY,
    "gates:evaluation_report_pdf": DENY,
    "gates:evaluation_report_statement": DENY,
    "gates:decision_certificate": DENY,
    "gates:decision_certificate_request": DENY,
    "gates:decision_certificate_pdf": DENY,
    "gates:decision_certificate_statement": DENY,
    "gates:disputes": OWN,
    "gates:dispute": DENY,
    "gates:dispute_contest": DENY,
    "gates:dispute_uphold": DENY,
    "gates:dispute_reject": DENY,
    "gates:dispute_withdraw": DENY,
    # The API.
    "auth-token": public("exchanges a username and password for a token"),
    "me": OWN,
    "rfp-list": OWN,
    "rfp-detail": DENY,
    "rfp-publish": DENY,
    "rfp-cancel": DENY,
    "rfp-invite": DENY,
    "rfp-clarifications": DENY,
    "clarification-answer": DENY,
    "rfp-addenda": DENY,
    "bid-own": DENY,
    "bid-document-upload": DENY,
    "bid-withdraw": DENY,
    "bid-reconfirm": DENY,
    "bid-list": DENY,
    "bid-detail": DENY,
    "bid-document": DENY,
    "bid-receipt-list": DENY,
    "bid-opening-request": DENY,
    "bid-opening-confirm": DENY,
    "bid-opening-cancel": DENY,
    "rfp-scores": DENY,
    "rfp-scores-submit": DENY,
    "rfp-consensus": DENY,
    "rfp-comparison": DENY,
    "rfp-comparison-csv": DENY,
    "rfp-tco-formulas": DENY,
    "rfp-award": DENY,
    "rfp-award-request": DENY,
    "rfp-award-confirm": DENY,
    "rfp-award-cancel": DENY,
    "signing-key-list": OWN,
    "signing-key-revoke": DENY,
    "signing-key-allowed-signers": OWN,
    "bundle-list": DENY,
    "bundle-detail": DENY,
    "bundle-file-list": DENY,
    "bundle-download": DENY,
    # open to anyone, no account: C2SP checkpoints are public by design
    "log-checkpoint": public(
        "the transparency log's signed checkpoint: sizes and root hashes, no names"
    ),
    "log-key": public("the transparency log's public key, to verify checkpoints"),
    "log-inclusion": public("inclusion proofs: hashes of the entry asked for"),
    "log-consistency": public("consistency proofs between two log sizes: hashes"),
    "bundle-evidence": DENY,
    "deposit-list": OWN,
    "deposit-detail": DENY,
    "deposit-blob-list": DENY,
    "deposit-legal-hold": DENY,
    "deposit-retention": DENY,
    "release-list": OWN,
    "release-detail": DENY,
    "release-object": DENY,
    "release-approve": DENY,
    "release-reject": DENY,
    "release-withdraw": DENY,
    "release-execute": DENY,
    "release-certificate": DENY,
    "release-package": DENY,
    "lab-pool-list": OWN,
    "campaign-list": OWN,
    "campaign-detail": DENY,
    "campaign-run-list": DENY,
    "campaign-cancel": DENY,
    "run-detail": DENY,
    "run-cancel": DENY,
    "run-statement": DENY,
    "run-telemetry": DENY,
    "run-spans": DENY,
    "lab-pool-policy": DENY,
    "lab-host-key": DENY,
    "campaign-evidence": DENY,
    "gate-board": DENY,
    "gate-evaluation-detail": DENY,
    "gate-dispute-open": DENY,
    "gate-dispute-list": OWN,
    "gate-dispute-detail": DENY,
    "gate-dispute-uphold": DENY,
    "gate-dispute-reject": DENY,
    "gate-dispute-withdraw": DENY,
    "rfp-requirements": DENY,
    "rfp-fidelity": DENY,
    "gate-evaluation-more-runs": DENY,
    "gate-evaluation-evidence": DENY,
    "gate-evaluate": DENY,
    "gate-plans": DENY,
    "gate-plan": DENY,
    "gate-plan-freeze": DENY,
    "gate-plan-new-version": DENY,
    "gate-plan-export": DENY,
    "gate-campaign-start": DENY,
    "gate-decision-record": DENY,
    "gate-decision-second": DENY,
    "gate-decision-withdraw": DENY,
    "gate-evaluation-report": DENY,
    "gate-evaluation-report-pdf": DENY,
    "gate-evaluation-report-statement": DENY,
    "gate-decision-certificate": DENY,
    "gate-decision-certificate-pdf": DENY,
    "gate-decision-certificate-statement": DENY,
    "report-key": public(
        "the public key signed reports' statements verify with: no names, no data"
    ),
    "retest-obligation-list": OWN,
    "retest-obligation-detail": DENY,
    "retest-obligation-request": DENY,
    "api-schema": public("the API's OpenAPI schema: the routes, no data"),
    "api-docs": public("the API's documentation page, rendered from the schema"),
    # The admin (its unnamed ``<object_id>/`` redirects too).
    "admin:login": public("the admin's login form"),
    "admin:logout": own_writes("ends the requester's own session"),
}

# Whole families, matched (fnmatch) on the route's key when it has no entry above.
PATTERNS: dict[str, Rule] = {
    "admin:*": ADMIN,
    "admin/*": ADMIN,
    # The runner API answers a lab host's token only (tests/benchmarks/runner_api
    # test a token of another pool): every persona's session is refused.
    "runner-*": DENY,
}

# Query strings for the routes that take their parameters there (the log's proofs:
# the other organisation's deposits are the log's first entries).
QUERIES: dict[str, str] = {
    "log-inclusion": "index=0&size=2",
    "log-consistency": "first=1&second=2",
}

# Parameters that name another object on some routes than their usual one.
PARAMETERS: dict[tuple[str, str], str] = {
    ("artifacts:fixity_run", "run_id"): "fixity_run_id",
    ("benchmarks:pool_token_revoke", "token_id"): "host_token_id",
    **{
        (f"runner-{name}", "run_id"): "run_pk"
        for name in (
            "claim",
            "bundle",
            "report",
            "running",
            "output",
            "artefact",
            "finish",
            "fail",
        )
    },
}


def rule_for(key: str) -> Rule | None:
    if key in ROUTES:
        return ROUTES[key]
    for pattern, rule in PATTERNS.items():
        if fnmatchcase(key, pattern):
            return rule
    return None
