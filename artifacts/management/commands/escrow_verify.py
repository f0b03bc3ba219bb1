"""``manage.py escrow_verify``: re-hash every deposited blob, check every
escrow row against the transparency log and the log against its checkpoints
(``artifacts.services.fixity.report``); record the run for the dashboards; print what
was found. Exit status 1 if anything was found, 0 if escrow is intact."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from artifacts.models import FixityRun
from artifacts.services.fixity.run import fixity_run


class Command(BaseCommand):
    help = (
        "Check escrow: blobs re-hashed, rows against the transparency log, the "
        "log against its checkpoints. Exits 1 on any finding."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        run = fixity_run(trigger=FixityRun.Trigger.COMMAND)
        self.stdout.write(
            f"Checked {run.log_entries_checked} log entries (size {run.log_size}, "
            f"latest checkpoint {run.checkpoint_size or 'none'}), "
            f"{run.deposits_checked} deposits, {run.events_checked} escrow events, "
            f"{run.blobs_checked} blobs ({run.bytes_hashed} bytes hashed), "
            f"{run.objects_listed} stored objects."
        )
        for finding in run.findings.order_by("id"):
            self.stdout.write(f"{finding.kind}  {finding.subject}: {finding.detail}")
        if not run.intact:
            raise CommandError(
                f"{run.findings_count} finding(s): escrow is not intact "
                f"(run {run.public_id}).",
                returncode=1,
            )
        self.stdout.write(self.style.SUCCESS("Escrow is intact: nothing found."))
