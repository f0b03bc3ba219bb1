"""The run checks of an evidence package (``reprogate evidence verify``), beyond
what ``artifacts.lib.evidence.verify`` checks of every package: no Django, only
the standard library, ``cryptography`` and ``benchmarks.lib.signing``
(docs/reports.md, "Checking the lab runs").

A run's deposit (kind ``run_output``) names its output files (role ``output``),
and as documents the host's signed statement (``statement.json``), the
environment capture it names (``environment.json``), the host's public key
(``host_key.pem``) and the runner artefacts (``runner/<name>``: telemetry,
spans). For each one:

1. every file it names is in the package with the SHA-256 the leaf (and so the
   host's statement) names: an altered output, telemetry blob or statement is
   named by its run and path;
2. ``statement.json`` is a DSSE envelope that verifies with ``host_key.pem``,
   whose fingerprint is the leaf's ``host_key_fingerprint``, and holds an in-toto
   Statement v1 with the ``https://reprogate.dev/lab-run/v1`` predicate;
3. the statement is about the leaf's run and attempt and names exactly the
   outputs, the environment capture and the runner artefacts the leaf names.

The host key is bound to the log by the deposit's leaf (the server verified the
statement with the host's pinned key before it accepted the run); an auditor
compares it with ``GET /api/v1/lab/hosts/<id>/key``.
"""

from __future__ import annotations

from typing import Any, Final

from artifacts.lib.evidence.layout import BLOBS_DIR
from artifacts.lib.evidence.reader import Entry, EvidenceReport, PackageReader
from artifacts.lib.evidence.verify import PackageCheck
from artifacts.lib.signatures.statement import (
    StatementError,
    fingerprint,
    load_public_key,
)
from benchmarks.lib.signing import (
    ARTEFACT_PREFIX,
    MAX_STATEMENT_BYTES,
    run_statement_open,
    run_statement_problems,
)

STATEMENT: Final = "statement.json"
ENVIRONMENT: Final = "environment.json"
HOST_KEY: Final = "host_key.pem"
RUN_OUTPUT: Final = "run_output"
MAX_KEY: Final = 16 * 1024

__all__ = ["ENVIRONMENT", "HOST_KEY", "RUN_CHECKS", "STATEMENT", "check_runs"]


def _label(role: str, path: str) -> str:
    if role == "output":
        return f"output {path}"
    if path == STATEMENT:
        return "the statement"
    if path.startswith(ARTEFACT_PREFIX):
        return f"runner artefact {path[len(ARTEFACT_PREFIX) :]}"
    return path


def _altered(
    package: PackageReader,
    entry: Entry,
    subject: str,
    digests: dict[str, str | None],
    report: EvidenceReport,
) -> bool:
    """Name every file of the run that is missing or whose bytes are not the
    SHA-256 its leaf names; True when all are intact."""
    intact = True
    for blob in entry.record.get("blobs") or []:
        if not isinstance(blob, dict):
            continue
        sha256, role = str(blob.get("sha256")), str(blob.get("role"))
        label = _label(role, str(blob.get("path", "")))
        name = BLOBS_DIR + sha256
        if sha256 not in digests:
            found = package.digest(name) if sha256 in package.blobs else None
            digests[sha256] = found[0] if found else None
        if sha256 not in package.blobs:
            report.failed(subject, f"{label} ({name}) is missing from the package")
            intact = False
        elif digests[sha256] != sha256:
            report.failed(
                subject,
                f"{label} ({name}) is altered: its SHA-256 is {digests[sha256]}, "
                "not the one the run's leaf and the host's statement name",
            )
            intact = False
    return intact


def _documents(record: dict[str, Any]) -> dict[str, str]:
    return {
        str(b.get("path")): str(b.get("sha256"))
        for b in record.get("blobs") or []
        if isinstance(b, dict) and b.get("role") in ("document", "artefact")
    }


def _check_run(
    package: PackageReader,
    entry: Entry,
    digests: dict[str, str | None],
    report: EvidenceReport,
) -> None:
    record = entry.record
    run = str(record.get("run"))
    subject = f"run {run} (leaf {entry.index})"
    intact = _altered(package, entry, subject, digests, report)
    documents = _documents(record)
    if STATEMENT not in documents:
        report.failed(subject, "the run's deposit holds no host-signed statement")
        return
    try:
        envelope = package.blob(documents[STATEMENT], MAX_STATEMENT_BYTES)
        key_pem = package.blob(documents.get(HOST_KEY, ""), MAX_KEY)
    except ValueError as error:
        report.failed(subject, f"cannot check the statement: {error}")
        return
    try:
        key = load_public_key(key_pem)
    except StatementError as error:
        report.failed(subject, f"{HOST_KEY}: {error}")
        return
    shown = record.get("host_key_fingerprint")
    if fingerprint(key) != shown:
        report.failed(
            subject,
            f"{HOST_KEY} has fingerprint {fingerprint(key)}, not the leaf's {shown}",
        )
    try:
        statement = run_statement_open(envelope, key)
    except StatementError as error:
        report.failed(subject, f"{STATEMENT} does not verify with {HOST_KEY}: {error}")
        return
    outputs = {
        str(b.get("path")): str(b.get("sha256"))
        for b in record.get("blobs") or []
        if isinstance(b, dict) and b.get("role") == "output"
    }
    artefacts = {
        path[len(ARTEFACT_PREFIX) :]: sha
        for path, sha in documents.items()
        if path.startswith(ARTEFACT_PREFIX)
    }
    attempt = record.get("attempt")
    problems = run_statement_problems(
        statement,
        run=run,
        attempt=attempt if isinstance(attempt, int) else None,
        outputs=outputs,
        environment_sha256=documents.get(ENVIRONMENT),
        artefacts=artefacts,
    )
    for problem in problems:
        report.failed(subject, f"{STATEMENT}: {problem}")
    if not problems and intact:
        report.passed(
            subject,
            f"{STATEMENT} is signed by host {record.get('host')} ({shown}) and "
            f"names its {len(outputs)} outputs, the environment and "
            f"{len(artefacts)} runner artefacts, all intact",
        )


def check_runs(
    package: PackageReader, entries: list[Entry], report: EvidenceReport
) -> None:
    """Every run deposit of the package (module docstring)."""
    digests: dict[str, str | None] = {}
    for entry in entries:
        if entry.record.get("kind") == RUN_OUTPUT:
            _check_run(package, entry, digests, report)


RUN_CHECKS: Final = (PackageCheck("lab runs and their host statements", check_runs),)
