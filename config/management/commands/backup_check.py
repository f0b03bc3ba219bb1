"""``manage.py backup_check``: after a restore, do the keys match the database?
(``config.backup``). Exit status 1 on any mismatch, 0 if they match."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from config.backup import backup_check


class Command(BaseCommand):
    help = (
        "Check a restored installation: the log key signed the latest checkpoint, "
        "the report signer and statement key the latest signed report. Exits 1 "
        "on a mismatch."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = backup_check()
        for line in result.checked:
            self.stdout.write(f"ok  {line}")
        for line in result.problems:
            self.stdout.write(f"MISMATCH  {line}")
        if result.problems:
            raise CommandError(
                f"{len(result.problems)} mismatch(es): restore the keys directory "
                "taken with this database (docs/operations.md).",
                returncode=1,
            )
        self.stdout.write(self.style.SUCCESS("The keys match the database."))
