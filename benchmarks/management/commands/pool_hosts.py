from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from benchmarks.management.pools import pool_named
from benchmarks.models import HostToken
from benchmarks.selectors.pools import pool_list_with_hosts

_TIME = "%Y-%m-%d %H:%M"


def _token_line(token: HostToken) -> str:
    by = token.created_by.username if token.created_by else "manage.py"
    used = f"{token.last_used_at:{_TIME}}" if token.last_used_at else "never"
    state = f"revoked {token.revoked_at:{_TIME}}" if token.revoked_at else "active"
    return (
        f"  {token.name}  {token.prefix}…  {state}  issued {token.created_at:{_TIME}}"
        f" by {by}  last used {used}"
    )


class Command(BaseCommand):
    help = "List a pool's host tokens and hosts, with their status (times in UTC)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool", help="the pool's name")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = pool_named(options["pool"])
        [pool] = pool_list_with_hosts(type(pool).objects.filter(pk=pool.pk))
        tokens = list(pool.host_tokens.all())
        hosts = list(pool.hosts.all())
        self.stdout.write(f"pool {pool.name} (queue {pool.queue})")
        self.stdout.write(f"tokens: {len(tokens) or 'none'}")
        for token in tokens:
            self.stdout.write(_token_line(token))
        self.stdout.write(f"hosts: {len(hosts) or 'none'}")
        for host in hosts:
            health = host.health  # type: ignore[attr-defined]
            via = f"token {host.token.name}" if host.token else "no token"
            self.stdout.write(
                f"  {host.worker_name}  {host.hostname}  {health.label}  "
                f"last heartbeat {host.last_heartbeat_at:{_TIME}:%S}  {via}"
            )
        if not tokens and not hosts:
            self.stdout.write(f"Join a host: manage.py pool_join {pool.name} <host>")
