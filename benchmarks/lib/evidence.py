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
   outputs, the environment capture and the runner artefacts the leaf names
   (``runner/scenario.json``, what a scenario driver did and measured, and
   ``runner/spans.jsonl``, the harness's trace spans, among them);
4. the lab's seed and the anti-gaming checks the statement's predicate names
   are well formed (a seed in [0, 2^63) or none; each check once, with its
   sentence), and the check says the seed and which checks were flagged.

``signed_run_predicates`` gives the predicates of the package's run statements
that verify, for the gate checks (``gates.lib.engine.evidence``: an
evaluation's results.json must name the flagged checks its runs' hosts signed).

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
from benchmarks.lib.lab.checks import checks_problems, flagged_ids
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
SEED_LIMIT: Final = 1 << 63  # the lab's seeds: a signed 64-bit column

__all__ = [
    "ENVIRONMENT",
    "HOST_KEY",
    "RUN_CHECKS",
    "STATEMENT",
    "check_runs",
    "signed_run_predicates",
]


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


def _lab_facts(predicate: Any) -> tuple[list[str], str]:
    """How the predicate's seed and anti-gaming checks are malformed, and what
    they say in words when they are not."""
    predicate = predicate if isinstance(predicate, dict) else {}
    problems = []
    seed = predicate.get("seed")
    if seed is not None and not (
        isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < SEED_LIMIT
    ):
        problems.append(f"its seed {seed!r} is not one the lab issues")
    checks = predicate.get("checks")
    if checks is not None:
        problems += [f"its {p}" for p in checks_problems(checks)[:5]]
    if problems:
        return problems, ""
    flagged = flagged_ids(checks)
    said = f"seed {seed}" if seed is not None else "no seed"
    if checks:
        said += (
            f", {len(checks)} anti-gaming checks ("
            + ("flagged: " + ", ".join(flagged) if flagged else "none flagged")
            + ")"
        )
    return [], said


def _statement(
    package: PackageReader, entry: Entry
) -> tuple[dict[str, Any] | None, str]:
    """The run's statement once it verifies with the deposit's host key, whose
    fingerprint is the leaf's; else None and why."""
    documents = _documents(entry.record)
    if STATEMENT not in documents:
        return None, "the run's deposit holds no host-signed statement"
    try:
        envelope = package.blob(documents[STATEMENT], MAX_STATEMENT_BYTES)
        key = load_public_key(package.blob(documents.get(HOST_KEY, ""), MAX_KEY))
        if fingerprint(key) != entry.record.get("host_key_fingerprint"):
            return None, f"{HOST_KEY} is not the leaf's host key"
        return run_statement_open(envelope, key), ""
    except (ValueError, StatementError) as error:
        return None, str(error)


def signed_run_predicates(
    package: PackageReader, entries: list[Entry]
) -> dict[str, dict[str, Any]]:
    """run id → the lab-run predicate of its statement, for every run deposit
    of the package whose statement verifies with its host key (the others are
    named by ``check_runs``)."""
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.record.get("kind") != RUN_OUTPUT:
            continue
        statement, _why = _statement(package, entry)
        predicate = statement.get("predicate") if statement else None
        if isinstance(predicate, dict):
            found[str(entry.record.get("run"))] = predicate
    return found


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
    facts, said = _lab_facts(statement.get("predicate"))
    problems += facts
    for problem in problems:
        report.failed(subject, f"{STATEMENT}: {problem}")
    if not problems and intact:
        report.passed(
            subject,
            f"{STATEMENT} is signed by host {record.get('host')} ({shown}) and "
            f"names its {len(outputs)} outputs, the environment and "
            f"{len(artefacts)} runner artefacts, all intact; {said}",
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
