"""Runner artefacts on the server (``benchmarks.lib.lab.artefacts``): an
attempt's uploads beside its outputs (``artefacts/<name>`` in the attempt's
uploads folder), checked when they arrive (a telemetry blob or a scenario
document must decode), stored as blobs and deposited in escrow with the
outputs when the run ends; the telemetry blob read back for the API and the run page."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Final

from benchmarks import conf
from benchmarks.lib.lab.artefacts import (
    RUNNER_ARTEFACTS,
    SCENARIO,
    TELEMETRY,
    artefact_name_problem,
    file_sha256,
)
from benchmarks.lib.lab.scenario_document import ScenarioDocumentError
from benchmarks.lib.lab.scenario_document import decode as scenario_decode
from benchmarks.lib.lab.telemetry_blob import TelemetryBlobError, decode
from benchmarks.services.common import RunnerConflict, RunnerError
from benchmarks.services.uploads import attempt_uploads_folder
from benchmarks.services.workspace import Collected

CHUNK: Final = 1024 * 1024


class ArtefactTooLarge(RunnerError):
    """Over the artefact's size limit (HTTP 413)."""


def attempt_artefacts_folder(run_id: int, attempt: int) -> Path:
    return attempt_uploads_folder(run_id, attempt) / "artefacts"


def _folder(run_id: int, attempt: int) -> Path:
    folder = attempt_artefacts_folder(run_id, attempt)
    conf.uploads_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    for part in (*reversed(folder.parents[:3]), folder):
        with contextlib.suppress(FileExistsError):
            part.mkdir(mode=0o700)
        if part.is_symlink() or not part.is_dir():
            raise RuntimeError(f"{part} is not a folder of the server's own")
    return folder


def _check(name: str, local: Path) -> None:
    if name == TELEMETRY:
        try:
            decode(local.read_bytes())
        except TelemetryBlobError as error:
            message = f"{name}: {error}"
            raise RunnerError(message, code="artefact_invalid") from error
    if name == SCENARIO:
        try:
            scenario_decode(local.read_bytes())
        except ScenarioDocumentError as error:
            message = f"{name}: {error}"
            raise RunnerError(message, code="artefact_invalid") from error


def artefact_write(
    *,
    run_id: int,
    attempt: int,
    name: str,
    read: Callable[[int], bytes],
    length: int | None,
) -> Collected:
    """Write one artefact of the attempt. Sending the same bytes again is
    answered as the first time; other bytes under a kept name are a 409."""
    problem = artefact_name_problem(name)
    if problem:
        raise RunnerError(problem, code="artefact_name")
    limit = RUNNER_ARTEFACTS[name]
    if length is not None and length > limit:
        raise ArtefactTooLarge(f"{name} exceeds {limit} bytes.", code="artefact_size")
    folder = _folder(run_id, attempt)
    part = folder / f".{name}.{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(os.open(part, flags, 0o600), "wb") as sink:
            while chunk := read(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise ArtefactTooLarge(
                        f"{name} exceeds {limit} bytes.", code="artefact_size"
                    )
                digest.update(chunk)
                sink.write(chunk)
        _check(name, part)
        final = folder / name
        try:
            os.link(part, final)
        except FileExistsError:
            if file_sha256(final) != digest.hexdigest():
                message = f"{name} was uploaded already with other bytes."
                raise RunnerConflict(message, code="artefact_exists") from None
    finally:
        part.unlink(missing_ok=True)
    return Collected(name, final, digest.hexdigest(), size)


def attempt_artefacts(run_id: int, attempt: int) -> list[Collected]:
    """The attempt's uploaded artefacts, by name."""
    folder = attempt_artefacts_folder(run_id, attempt)
    found = []
    for name in sorted(RUNNER_ARTEFACTS):
        local = folder / name
        if local.is_file() and not local.is_symlink():
            found.append(
                Collected(name, local, file_sha256(local), local.stat().st_size)
            )
    return found
