"""Fixity runs: check escrow (``artifacts.services.fixity.report``: reads only, outside
any transaction, as long as it takes), then record the run and its findings
in one transaction with one audit row for the run and one per finding, in the
trail of the buyer organisation the finding concerns (none: it concerns the
log or storage as a whole). Every finding is also logged as an error."""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict

from django.contrib.auth.models import User
from django.db import transaction

from accounts.models import Organisation
from accounts.selectors import clock
from accounts.services.audit import audit_record
from artifacts.models import Deposit, FixityFinding, FixityRun
from artifacts.services.fixity.blobs import check_blobs
from artifacts.services.fixity.log import check_log
from artifacts.services.fixity.releases import check_releases
from artifacts.services.fixity.report import (
    Finding,
    FixityReport,
    extra_object_age,
)
from artifacts.services.fixity.sources import check_sources
from procurement.models import Rfp

logger = logging.getLogger(__name__)


def fixity_check() -> FixityReport:
    """The log and its rows, the releases, the rows other apps keep (their
    registered sources), then the blobs; nothing is written."""
    report = FixityReport(started_at=clock.now())
    check_log(report)
    check_releases(report.findings)
    check_sources(report.findings)
    check_blobs(report, newer_than=report.started_at - extra_object_age())
    report.finished_at = clock.now()
    return report


class _Scopes:
    """The buyer organisation a finding concerns, by RFP or deposit (cached)."""

    def __init__(self) -> None:
        self.by_rfp: dict[str, Organisation | None] = {}

    def rfp_of(self, finding: Finding) -> str:
        if finding.rfp_reference or not finding.deposit:
            return finding.rfp_reference
        try:
            public_id = uuid.UUID(finding.deposit)
        except ValueError:
            return ""
        deposit = Deposit.objects.filter(public_id=public_id).select_related("rfp")
        found = deposit.first()
        return found.rfp.reference if found is not None else ""

    def buyer(self, reference: str) -> Organisation | None:
        if reference and reference not in self.by_rfp:
            rfp = Rfp.objects.filter(reference=reference).select_related(
                "buyer_organisation"
            )
            found = rfp.first()
            self.by_rfp[reference] = found.buyer_organisation if found else None
        return self.by_rfp.get(reference)


def _rows(run: FixityRun, findings: list[Finding]) -> list[FixityFinding]:
    scopes = _Scopes()
    rows = []
    for finding in findings:
        reference = scopes.rfp_of(finding)
        rows.append(
            FixityFinding(
                run=run,
                kind=finding.kind,
                subject=finding.subject[:300],
                detail=finding.detail,
                buyer_organisation=scopes.buyer(reference),
                rfp_reference=reference[:40],
                log_index=finding.log_index,
                sha256=finding.sha256,
            )
        )
    return rows


def fixity_record(
    *, report: FixityReport, trigger: str, actor: User | None = None
) -> FixityRun:
    """Keep a finished check as a run with its findings, audited."""
    findings = [*report.findings.items, *report.findings.overflow()]
    with transaction.atomic():
        run = FixityRun.objects.create(
            trigger=trigger,
            started_at=report.started_at,
            finished_at=report.finished_at or clock.now(),
            findings_count=report.findings.total,
            **asdict(report.counts),
        )
        rows = _rows(run, findings)
        for row in rows:  # one by one: each gets its pk for its audit row
            row.save()
        audit_record(
            actor=actor,
            action="escrow.fixity_checked",
            target=run,
            data={**asdict(report.counts), "findings": report.findings.total},
        )
        for row in rows:
            logger.error("escrow fixity: %s %s: %s", row.kind, row.subject, row.detail)
            audit_record(
                actor=actor,
                action="escrow.fixity_finding",
                target=row,
                organisation=row.buyer_organisation,
                data={
                    "run": str(run.public_id),
                    "kind": row.kind,
                    "subject": row.subject,
                    "detail": row.detail,
                    "rfp": row.rfp_reference,
                },
            )
    return run


def fixity_run(*, trigger: str, actor: User | None = None) -> FixityRun:
    """Check escrow now and record the run (``manage.py escrow_verify``, the
    daily task)."""
    return fixity_record(report=fixity_check(), trigger=trigger, actor=actor)
