"""Signals the runner sends for other apps (which benchmarks never imports).

``campaign_finished`` (``campaign_id``): every run of the campaign has reached a
final state. Sent after the commit of the transaction that ended the last run,
through ``send_robust`` (a receiver's error is logged, never the runner's), and
possibly more than once for one campaign (two runs ending at the same moment;
runs added later end again): receivers are idempotent."""

from __future__ import annotations

import logging

from django.dispatch import Signal

from benchmarks.models import RUN_TRANSITIONS, Campaign, Run

logger = logging.getLogger(__name__)
FINAL = frozenset(state for state, moves in RUN_TRANSITIONS.items() if not moves)

campaign_finished = Signal()


def campaign_finished_send_if_done(campaign_id: int) -> bool:
    """Send ``campaign_finished`` if no run of the campaign is left to end (a
    read, run after commit so that it sees the other runs' commits too)."""
    if Run.objects.filter(campaign_id=campaign_id).exclude(state__in=FINAL).exists():
        return False
    for receiver, error in campaign_finished.send_robust(
        sender=Campaign, campaign_id=campaign_id
    ):
        if isinstance(error, Exception):
            logger.error(
                "campaign_finished receiver %r failed for campaign %s",
                receiver,
                campaign_id,
                exc_info=error,
            )
    return True
