"""A separate process acting on the log, for test_concurrent_appends:

    python -m tests.artifacts.transparency.log_worker start COUNT [--migrate]
    python -m tests.artifacts.transparency.log_worker append NAME COUNT BARRIER
    python -m tests.artifacts.transparency.log_worker finish FIRST

``start`` (after migrating a fresh database if asked) appends COUNT leaves by
"before" and prints the checkpoint it signs. ``append`` appends COUNT leaves
``{"n": i, "worker": NAME}``, each in its own transaction as deposits are; with
``LOG_WORKER_DEPOSITS=1`` each is a real escrow deposit (``deposit_create`` of a
blob of its own: row, log entry and audit row in one transaction), whose leaf
carries the same two keys. It first writes ``BARRIER/ready-NAME`` and waits for
``BARRIER/go``, so that every worker starts appending at once. ``finish`` signs
a checkpoint and prints it as JSON with every entry, the verifier key and the
consistency proof from FIRST.
Settings come from the environment (``DATABASE_URL`` …)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import time
from pathlib import Path

DEPOSIT_RFP, DEPOSIT_VENDOR = "RFP-CONCURRENT-1", "concurrent-vendor"


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

    if os.environ.get("LOG_WORKER_DEPOSITS") == "1":
        deposit(name, count)
        return
    for n in range(count):
        leaf = json.dumps({"n": n, "worker": name}, sort_keys=True).encode()
        with transaction.atomic():
            log_append(leaf)


def deposit(name: str, count: int) -> None:
    """COUNT escrow deposits of a report blob each, for the RFP and vendor the
    ``start`` step made."""
    from accounts.models import Organisation
    from artifacts.models import Blob, Deposit, DepositBlob
    from artifacts.services.escrow import deposit_create
    from artifacts.services.escrow_records import DepositItem
    from artifacts.storage.blobs import blob_key
    from procurement.models import Rfp

    rfp = Rfp.objects.get(reference=DEPOSIT_RFP)
    vendor = Organisation.objects.get(slug=DEPOSIT_VENDOR)
    for n in range(count):
        sha256 = hashlib.sha256(f"{name}/{n}".encode()).hexdigest()
        blob = Blob.objects.create(sha256=sha256, size=n, storage_key=blob_key(sha256))
        deposit_create(
            kind=Deposit.Kind.REPORT, organisation=vendor, rfp=rfp,
            items=[DepositItem(blob, DepositBlob.Role.REPORT)], actor=None,
            extra={"n": n, "worker": name},
        )  # fmt: skip


def _deposit_fixtures() -> None:
    from accounts.models import Organisation
    from tests.procurement.factories import RfpFactory

    vendor = Organisation.objects.create(
        slug=DEPOSIT_VENDOR, name="Deposit Vendor", kind=Organisation.Kind.VENDOR
    )
    RfpFactory.create(reference=DEPOSIT_RFP, published=True, invited=[vendor])


def start(count: int, migrate: bool) -> None:
    from django.core.management import call_command

    from artifacts.services.transparency import checkpoint_publish

    if migrate:
        call_command("migrate", interactive=False, verbosity=0)
    if os.environ.get("LOG_WORKER_DEPOSITS") == "1":
        _deposit_fixtures()
    append("before", count)
    sys.stdout.write(checkpoint_publish().note)


def finish(first: int) -> None:
    from artifacts.models import LogEntry
    from artifacts.selectors.log import log_consistency_proof, log_verifier_key
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
