from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.demo import demo_seed


class Command(BaseCommand):
    help = (
        "Seed the demo organisations, accounts and RFP-DEMO-1 (idempotent; DEBUG only)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="Seed even though DEBUG is off. Never do this in production.",
        )

    def handle(self, *args: Any, force: bool = False, **options: Any) -> None:
        if not settings.DEBUG and not force:
            raise CommandError(
                "Refusing to seed demo accounts with a known password while DEBUG is "
                "off. Set DJANGO_DEBUG=True, or pass --force if you really mean it."
            )
        self.stdout.write(str(demo_seed()))
