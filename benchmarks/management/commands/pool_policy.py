from __future__ import annotations

import json
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.exceptions import ApplicationError
from benchmarks.management.pools import pool_named
from benchmarks.services.pools import pool_policy_set


class Command(BaseCommand):
    help = (
        "Set a pool's device and endpoint policy (reprogate.lab-policy/v1) from a "
        "JSON file ('-': standard input); without FILE, print the current one. "
        "Runs claimed from now on run under it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool", help="the pool's name")
        parser.add_argument("file", nargs="?", help="the policy's JSON file, or -")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = pool_named(options["pool"])
        if options["file"] is None:
            self.stdout.write(json.dumps(pool.policy, indent=2, sort_keys=True))
            return
        try:
            source = options["file"]
            text = sys.stdin.read() if source == "-" else Path(source).read_text()
            document = json.loads(text)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise CommandError(
                f"Cannot read the policy: {error}", returncode=2
            ) from None
        try:
            pool = pool_policy_set(pool=pool, policy=document, actor=None)
        except ApplicationError as error:
            problems = "\n".join(f"  {p.path}: {p.message}" for p in error.problems)
            raise CommandError(
                f"The policy is not valid:\n{problems}", returncode=2
            ) from None
        devices = len(pool.policy.get("devices") or [])
        endpoints = len(pool.policy.get("endpoints") or [])
        self.stdout.write(
            f"Policy of {pool.name} set: {devices} device(s), {endpoints} endpoint(s)."
        )
