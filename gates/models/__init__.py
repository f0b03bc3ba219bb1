"""The gates app's rows: plans (versioned, frozen), evaluations (the three §6
documents byte-exact, one escrow deposit each, one row per criterion for the
board and the history), decisions, disputes of a verdict, re-test
obligations and signed reports."""

from __future__ import annotations

from gates.models.decisions import DECISION_TRANSITIONS, Decision
from gates.models.disputes import DISPUTE_TRANSITIONS, Dispute
from gates.models.evaluations import CriterionResult, Evaluation, GateCampaign
from gates.models.obligations import OBLIGATION_TRANSITIONS, RetestObligation
from gates.models.plans import PLAN_TRANSITIONS, GatePlan
from gates.models.reports import REPORT_TRANSITIONS, Report

__all__ = [
    "DECISION_TRANSITIONS",
    "DISPUTE_TRANSITIONS",
    "OBLIGATION_TRANSITIONS",
    "PLAN_TRANSITIONS",
    "REPORT_TRANSITIONS",
    "CriterionResult",
    "Decision",
    "Dispute",
    "Evaluation",
    "GateCampaign",
    "GatePlan",
    "Report",
    "RetestObligation",
]
