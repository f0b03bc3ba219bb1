"""A separate process acting on the log, for test_concurrent_appends:

    python -m tests.artifacts.transparency.log_worker start COUNT [--migrate]
    python -m tests.artifacts.transparency.log_worker append NAME COUNT BARRIER
    python -m tests.artifacts.transparency.log_worker finish FIRST

``start`` (after migrating a fresh database if asked) appends COUNT leaves by
"before" and prints the checkpoint it signs. ``append`` appends COUNT leaves
``{"n": i, "worker": NAME}``, each in its own transaction as deposits are; it
first writes ``BARRIER/ready-NAME`` and waits for ``BARRIER/go``, so that every
worker starts appending at once. ``finish`` signs a checkpoint and prints it as
JSON with every entry, the verifier key and the consistency proof from FIRST.
Settings come from the environment (``DATABASE_URL`` …)."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path


def _wait_for_go(barrier: Path, name: str) -> None:
    (barrier / f"ready-{name}").touch()
    deadline = time.monotonic() + 120
    while not (barrier / "go").exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.005)


def append(name: str, count: int) -> None:
    from django.db import transaction

    from artifacts.services.transparency import log_append

    for n in range(count):
        leaf = json.dumps({"n": n, "worker": name}, sort_keys=True).encode()
        with transaction.atomic():
            log_append(leaf)


def start(count: int, migrate: bool) -> None:
    from django.core.management import call_command

    from artifacts.services.transparency import checkpoint_publish

    if migrate:
        call_command("migrate", interactive=False, verbosity=0)
    append("before", count)
    sys.stdout.write(checkpoint_publish().note)


def finish(first: int) -> None:
    from artifacts.log_selectors import log_consistency_proof, log_verifier_key
    from artifacts.models import LogEntry
    from artifacts.services.transparency import checkpoint_publish

    checkpoint = checkpoint_publish()
    entries = LogEntry.objects.order_by("index").values_list("index", "leaf")
    proof = log_consistency_proof(first, checkpoint.size)
    report = {
        "checkpoint": checkpoint.note,
        "entries": [[i, base64.b64encode(leaf).decode()] for i, leaf in entries],
        "verifier_key": log_verifier_key(),
        "proof": [base64.b64encode(h).decode() for h in proof],
    }
    print(json.dumps(report))


def main(argv: list[str]) -> int:
    import django

    django.setup()
    command, *args = argv
    if command == "start":
        start(int(args[0]), migrate="--migrate" in args)
    elif command == "append":
        _wait_for_go(Path(args[2]), args[0])
        append(args[0], int(args[1]))
    elif command == "finish":
        finish(int(args[0]))
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
