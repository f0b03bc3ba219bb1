from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.demo import demo_seed


class Command(BaseCommand):
    help = (
        "Seed the demo organisations, accounts, RFP-DEMO-1, RFP-DEMO-2 and, with "
        "--opening-in, RFP-DEMO-3 (idempotent; the embedded default or DEBUG only)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Seed outside the embedded default. Never do this in production.",
        )
        lab = parser.add_mutually_exclusive_group()
        lab.add_argument(
            "--lab-validation",
            action="store_true",
            help=(
                "Also RFP-DEMO-2's gate plans, and both example bundles re-run "
                "here (the claimed scenarios, 3 repetitions, about a minute per "
                "vendor) with lab validation evaluated, unless the lab ran that "
                "vendor already. The runs need bubblewrap."
            ),
        )
        lab.add_argument(
            "--lab-in-background",
            action="store_true",
            help=(
                "As --lab-validation, but only start the lab's gate campaigns on "
                "pool local (seconds): its worker (scripts/run starts one) runs them "
                "and lab validation is evaluated when they end."
            ),
        )
        parser.add_argument(
            "--without-lab-resilience",
            action="store_true",
            help=(
                "With --lab-in-background: start no campaign for RFP-DEMO-2's "
                "lab-resilience gate (failover, interference, warm-up), even where "
                "the host could inject the faults."
            ),
        )
        parser.add_argument(
            "--opening-in",
            type=_minutes,
            metavar="MINUTES",
            help=(
                "Also RFP-DEMO-3, made once: both vendors' sealed bids, its deadline "
                "MINUTES after this seed, for buyer and evaluator to open by hand."
            ),
        )

    def handle(
        self,
        *args: Any,
        force: bool = False,
        lab_validation: bool = False,
        lab_in_background: bool = False,
        without_lab_resilience: bool = False,
        opening_in: timedelta | None = None,
        **options: Any,
    ) -> None:
        if not (settings.DEBUG or settings.REPROGATE_EMBEDDED) and not force:
            raise CommandError(
                "Refusing to seed demo accounts with a known password outside the "
                "embedded default (scripts/manage) while DEBUG is off. Pass --force "
                "if you really mean it."
            )
        self.stdout.write(
            str(
                demo_seed(
                    lab_validation=lab_validation,
                    lab_in_background=lab_in_background,
                    lab_resilience=not without_lab_resilience,
                    progress=self._progress,
                    opening_in=opening_in,
                )
            )
        )

    def _progress(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()


def _minutes(value: str) -> timedelta:
    """``--opening-in``: a whole number of minutes, 1 to 1440."""
    try:
        minutes = int(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a whole number of minutes") from None
    if not 1 <= minutes <= 1440:
        raise ArgumentTypeError(f"{minutes} is not between 1 and 1440 minutes")
    return timedelta(minutes=minutes)
