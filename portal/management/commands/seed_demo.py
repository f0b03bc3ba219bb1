from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.demo import demo_seed


class Command(BaseCommand):
    help = (
        "Seed the demo organisations, accounts, RFP-DEMO-1 and RFP-DEMO-2 "
        "(idempotent; the embedded default or DEBUG only)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Seed outside the embedded default. Never do this in production.",
        )
        parser.add_argument(
            "--lab-validation",
            action="store_true",
            help=(
                "Also RFP-DEMO-2's gate plans, and both example bundles re-run "
                "here (the claimed scenarios, 3 repetitions, about a minute per "
                "vendor) with lab validation evaluated, unless the lab ran that "
                "vendor already. The runs need bubblewrap."
            ),
        )

    def handle(
        self,
        *args: Any,
        force: bool = False,
        lab_validation: bool = False,
        **options: Any,
    ) -> None:
        if not (settings.DEBUG or settings.REPROGATE_EMBEDDED) and not force:
            raise CommandError(
                "Refusing to seed demo accounts with a known password outside the "
                "embedded default (scripts/manage) while DEBUG is off. Pass --force "
                "if you really mean it."
            )
        self.stdout.write(
            str(demo_seed(lab_validation=lab_validation, progress=self._progress))
        )

    def _progress(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
