from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.exceptions import ApplicationError
from accounts.models import Organisation
from benchmarks.services.pools import pool_create


class Command(BaseCommand):
    help = (
        "Create a lab pool; its hosts' agents (manage.py pool_join) then consume "
        "its queue pool.<name>."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", help="lowercase letters, digits and dashes")
        parser.add_argument("--lab", required=True, help="the lab organisation's slug")
        parser.add_argument("--hardware-class", default="")
        parser.add_argument("--description", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        lab = Organisation.objects.filter(
            slug=options["lab"], kind=Organisation.Kind.LAB
        ).first()
        if lab is None:
            raise CommandError(f"No lab organisation {options['lab']!r}.")
        try:
            pool = pool_create(
                lab_organisation=lab,
                name=options["name"],
                hardware_class=options["hardware_class"],
                description=options["description"],
                actor=None,
            )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(
            f"pool {pool.name}: its hosts' agents consume {pool.queue} "
            f"(join one: manage.py pool_join {pool.name} HOST)"
        )
