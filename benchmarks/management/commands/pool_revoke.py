from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.exceptions import ApplicationError
from benchmarks.management.pools import pool_named
from benchmarks.selectors.pools import host_token_list
from benchmarks.services.host_tokens import host_token_revoke


class Command(BaseCommand):
    help = (
        "Revoke the host token of a host on a pool: its agent is refused at its "
        "next call and the host is shown offline."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool", help="the pool's name")
        parser.add_argument("host", help="the host's name on the pool")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = pool_named(options["pool"])
        name = options["host"].strip()
        token = host_token_list(pool).filter(name=name, revoked_at=None).first()
        if token is None:
            raise CommandError(
                f"No host named {name!r} holds an active token on {pool.name} "
                f"(see: manage.py pool_hosts {pool.name}).",
                returncode=2,
            )
        try:
            token = host_token_revoke(token=token, actor=None)
        except ApplicationError as error:
            raise CommandError(error.message, returncode=2) from None
        self.stdout.write(
            f"Revoked the token {token.prefix}… of {token.name} on {pool.name}."
        )
