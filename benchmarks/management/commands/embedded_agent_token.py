from __future__ import annotations

import os
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts.exceptions import ApplicationError
from benchmarks.lib.lab.scratch import SCRATCH_DEVICE
from benchmarks.lib.queues import EMBEDDED_POOL
from benchmarks.services.embedded_agent import (
    EMBEDDED_HOST,
    embedded_agent_policy,
    embedded_agent_token,
)


def write_secret(path: Path, secret: str) -> None:
    """``secret`` into ``path``, readable by this user only (0600 from the
    start: written to a private file beside it, then renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}")
    scratch.unlink(missing_ok=True)
    descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(secret + "\n")
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)


class Command(BaseCommand):
    help = (
        "Issue the embedded default's lab agent a fresh host token on its pool "
        "(made if missing), revoking the previous start's, and write it to a file "
        "only this user reads (the supervisor of scripts/run calls this at start)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--token-file", type=Path, required=True, help="where to write the token"
        )
        parser.add_argument("--pool", default=EMBEDDED_POOL)
        parser.add_argument("--host", default=EMBEDDED_HOST)
        parser.add_argument(
            "--scratch-device",
            choices=[SCRATCH_DEVICE],
            default=None,
            help="the demo's scratch block device is attached (its CDI spec "
            "written): put it in the pool's policy; without: take it out",
        )
        parser.add_argument(
            "--fault-endpoint",
            default=None,
            help="the fault export's address (tcp:127.0.0.1:PORT): the pool's "
            "endpoint demo-nbd; without: take it out",
        )
        parser.add_argument(
            "--fault-hook",
            default=None,
            help="the fault hook's path: the pool's hooks.fault; without: take "
            "the embedded default's out",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            issued, revoked = embedded_agent_token(
                pool_name=options["pool"], host_name=options["host"]
            )
            embedded_agent_policy(
                pool_name=options["pool"],
                scratch_device=options["scratch_device"],
                fault_endpoint=options["fault_endpoint"],
                fault_hook=options["fault_hook"],
            )
        except ApplicationError as error:
            raise CommandError(error.message, returncode=2) from None
        path: Path = options["token_file"]
        try:
            write_secret(path, issued.raw)
        except OSError as error:
            raise CommandError(f"Cannot write {path}: {error}", returncode=2) from None
        token = issued.token
        before = f"; {len(revoked)} earlier token(s) revoked" if revoked else ""
        self.stdout.write(
            f"Host {token.name} on pool {token.pool.name}: token {token.prefix}… "
            f"in {path}{before}."
        )
