from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.exceptions import ApplicationError
from benchmarks.management.pools import pool_named
from benchmarks.services.host_join import BROKER_PASSWORD_PLACEHOLDER, host_join


class Command(BaseCommand):
    help = (
        "Join a lab host to a pool: issue its host token and print, once, the "
        "command that starts the agent on the host (the token is not kept)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool", help="the pool's name")
        parser.add_argument("host", help="the host's name on the pool, e.g. lab-07")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = pool_named(options["pool"])
        try:
            joined = host_join(pool=pool, name=options["host"], actor=None)
        except ApplicationError as error:
            raise CommandError(error.message, returncode=2) from None
        token = joined.token
        self.stderr.write(
            f"Host {token.name} joined pool {pool.name} (token {token.prefix}…). "
            "Run this on the host, once; the token is not shown again. Replace "
            f"{BROKER_PASSWORD_PLACEHOLDER} with the password of the pool's broker "
            "user (URL-encoded)."
        )
        if not joined.broker_configured:
            self.stderr.write(
                "REPROGATE_AGENT_BROKER_URL is not set: replace BROKER-HOST too."
            )
        self.stdout.write(joined.command)
