"""What the runner API (``benchmarks.api.runner``) does for a lab host's agent
(``reprogate_agent``, the one executor of every run, the embedded default's
included), a worker with no database of its own: it knows its host
token, and the server owns every row and every state change.

- ``agent_hello`` registers (or re-registers) the agent's host on the token's
  pool, and gives up the runs the host still holds (its earlier process's);
  ``agent_heartbeat`` and ``agent_bye`` are its signs of life and its
  clean shutdown. A host is known by its pool and worker name; a name held by
  another active token, or by a worker with database access, is refused.
- ``agent_claim`` takes a queued run for the host (``run_claim``); from then on
  the host *holds* the attempt: only it may download the bundle, report, start,
  upload outputs and finish, each naming the attempt (a re-queued run refuses
  the old one). A run whose campaign is bound to named hosts
  (``Campaign.hosts``) is refused to any other host (409, nothing changes);
  ``agent_hello``'s answer names the host's own queue, where such runs come.
- Outputs are written by the server into a folder of its own per run attempt,
  under the installation's var directory (``benchmarks.services.uploads``): one
  new file each (``O_EXCL | O_NOFOLLOW``), named by number, its path checked like
  a bundle member's and its bytes counted against ``RUNNER_OUTPUT_LIMIT_BYTES``
  and ``RUNNER_MAX_OUTPUT_FILES`` across the attempt. ``agent_finish`` ends the
  run with them (``conclusion.run_conclude``); the
  folder is deleted when the run ends, is re-queued or claimed again, or the
  host's token is revoked. Runner artefacts (the telemetry blob …) arrive the
  same way through ``agent_artefact_put`` and end with the outputs.

A host whose agent stops beating is the reaper's business, as for any worker:
its runs' heartbeats stop too."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from django.db import transaction

from accounts.selectors import clock
from artifacts.models import Bundle
from artifacts.storage.blobs import blob_open
from benchmarks import conf
from benchmarks.lib.lab.checks import checks_problems
from benchmarks.lib.lab.devices import POLICY_REFUSALS
from benchmarks.lib.queues import host_name_routable, host_queue
from benchmarks.lib.sandbox.reporting import clean_text, json_safe
from benchmarks.lib.sandbox.workspace import output_path_problem
from benchmarks.models import HostToken, LabHost, Run
from benchmarks.models.campaigns import ACTIVE_STATES
from benchmarks.services.artefacts import artefact_write, attempt_artefacts
from benchmarks.services.common import RunnerConflict, RunnerError, StaleAttempt
from benchmarks.services.conclusion import (
    Outcome,
    run_conclude,
    run_end_cancelled_unprepared,
    run_end_unprepared,
)
from benchmarks.services.host_keys import (
    environment_canonical,
    host_key_offer,
    run_statement_accept,
)
from benchmarks.services.pools import WorkerIdentity, host_register
from benchmarks.services.reaper import runs_reap_restarted
from benchmarks.services.results import declared_outputs
from benchmarks.services.run_environment import running_fields
from benchmarks.services.runs import run_claim, run_report, run_transition
from benchmarks.services.uploads import (
    attempt_uploads_folder,
    attempt_uploads_remove,
    run_uploads_remove,
)
from benchmarks.services.workspace import Collected, Collection

S = Run.State
CHUNK: Final = 1024 * 1024
MAX_WARNINGS: Final = 200
MAX_WARNING_CHARS: Final = 500
# Why a host may end a run it could not prepare (``agent_fail``).
PREPARATION_FAILURES: Final = frozenset(
    {
        "bundle_corrupt",
        "bundle_unreadable",
        "runner_error",
        "scenario_failed",
        *POLICY_REFUSALS,
    }
)


class OutputTooLarge(RunnerError):
    """The attempt's outputs would exceed their limits (HTTP 413)."""


@dataclass(frozen=True)
class AgentSettings:
    """What the server tells an agent at hello."""

    heartbeat_seconds: float
    progress_write_seconds: float
    log_tail_chars: int
    output_limit_bytes: int
    max_output_files: int


def agent_settings() -> AgentSettings:
    return AgentSettings(
        heartbeat_seconds=conf.heartbeat_seconds(),
        progress_write_seconds=conf.progress_write_seconds(),
        log_tail_chars=conf.log_tail_chars(),
        output_limit_bytes=conf.output_limit_bytes(),
        max_output_files=conf.max_output_files(),
    )


# -- the host ------------------------------------------------------------------


def _check_name(token: HostToken, worker_name: str) -> str:
    name = worker_name.strip()
    if not name or len(name) > 255 or not name.isprintable():
        raise RunnerError(
            "Name the worker (1 to 255 printable characters), e.g. agent@lab-07.",
            code="worker_name_invalid",
        )
    taken = (
        LabHost.objects.select_for_update(of=("self",))
        .select_related("token")
        .filter(pool=token.pool, worker_name=name)
        .first()
    )
    if taken is not None and taken.token_id != token.pk:
        by_token = taken.token is not None and taken.token.revoked_at is None
        if taken.token is None or by_token:
            raise RunnerConflict(
                f"The worker name {name!r} belongs to another host of "
                f"{token.pool.name}: give this agent its own REPROGATE_AGENT_NAME.",
                code="worker_name_taken",
            )
    return name


@transaction.atomic
def agent_hello(
    *, token: HostToken, worker: WorkerIdentity, signing_key: str = ""
) -> LabHost:
    """Register the agent's host on its token's pool (again, after a restart),
    with its signing key (``host_keys.host_key_offer``: pinned the first time,
    pending when it is another). An agent says hello once, when it starts: the
    runs its host still holds were its earlier process's, and are given up now
    (``reaper.runs_reap_restarted``: re-queued while attempts remain)."""
    host = _register(token=token, worker=worker, signing_key=signing_key)
    runs_reap_restarted(host=host)
    return host


def _register(
    *, token: HostToken, worker: WorkerIdentity, signing_key: str = ""
) -> LabHost:
    name = _check_name(token, worker.worker_name)
    identity = WorkerIdentity(
        worker_name=name,
        hostname=clean_text(worker.hostname.strip())[:255] or name,
        pid=worker.pid,
        environment=_json_safe(worker.environment),
        sandbox=_json_safe(worker.sandbox),
    )
    host = host_register(pool=token.pool, worker=identity, token=token)
    if signing_key:
        host_key_offer(host=host, pem=signing_key)
        host.refresh_from_db()
    return host


def agent_host_queue(host: LabHost) -> str:
    """The host's own queue (``benchmarks.lib.queues.host_queue``), which its
    agent consumes beside the pool's; empty when its worker name cannot name
    one (such a host cannot be named by a campaign either)."""
    if not host_name_routable(host.worker_name):
        return ""
    return host_queue(host.pool.name, host.worker_name)


@transaction.atomic
def agent_host(*, token: HostToken, worker_name: str) -> LabHost:
    """The agent's host, registered now if it never said hello (a server whose
    rows were restored, a message arriving before hello finished)."""
    name = _check_name(token, worker_name)
    host = LabHost.objects.filter(pool=token.pool, worker_name=name).first()
    if host is not None and host.token_id == token.pk:
        return host
    hostname = name.partition("@")[2] or name
    # not a hello: the agent sending this may be running one of the host's runs
    return _register(
        token=token, worker=WorkerIdentity(worker_name=name, hostname=hostname)
    )


def agent_heartbeat(*, token: HostToken, worker_name: str) -> LabHost:
    host = agent_host(token=token, worker_name=worker_name)
    LabHost.objects.filter(pk=host.pk).update(
        last_heartbeat_at=clock.now(), stopped_at=None
    )
    return host


def agent_bye(*, token: HostToken, worker_name: str) -> int:
    """The agent shut down cleanly: its host is shown offline."""
    now = clock.now()
    return LabHost.objects.filter(
        pool=token.pool, worker_name=worker_name.strip(), token=token
    ).update(last_heartbeat_at=now, stopped_at=now)


# -- the run -------------------------------------------------------------------


def agent_run(*, token: HostToken, run_id: int) -> Run | None:
    """The run if it is one of the token's pool (else None: a 404)."""
    return (
        Run.objects.select_related("campaign__bundle", "campaign__pool")
        .filter(pk=run_id, campaign__pool_id=token.pool_id)
        .first()
    )


def agent_claim(
    *, token: HostToken, run: Run, attempt: int, worker_name: str
) -> Run | None:
    """Take the queued run for the agent's host; None if it is not queued with
    this attempt (a redelivered or stale message: the agent skips it)."""
    host = agent_host(token=token, worker_name=worker_name)
    claimed = run_claim(run_id=run.pk, attempt=attempt, host=host)
    if claimed is not None:
        run_uploads_remove(run.pk)  # an earlier attempt's, if its host was lost
    return claimed


def claimed_run(run: Run, host: LabHost | None = None) -> dict[str, Any]:
    """What the agent needs to execute the claimed run."""
    bundle = run.campaign.bundle
    manifest = bundle.manifest or {}
    cpus = _host_threads(host or run.host)
    files = [
        {
            "path": f.get("path"),
            "sha256": f.get("sha256"),
            "size": f.get("size"),
            "kind": f.get("kind", ""),
        }
        for f in manifest.get("files") or []
        if isinstance(f, dict)
    ]
    return {
        "id": run.pk,
        "public_id": str(run.public_id),
        "campaign": str(run.campaign.public_id),
        "repetition": run.repetition,
        "attempt": run.attempt,
        "scenario": run.scenario,
        "entrypoint": (manifest.get("harness") or {}).get("entrypoint", ""),
        "outputs": sorted(declared_outputs(manifest)),  # compared by seed_ignored
        "seed": run.seed,  # REPROGATE_SEED (None: a run made before seeds)
        "files": files,
        "wall_limit_s": run.wall_limit_s,
        "cpu_seconds": int(run.wall_limit_s * cpus),
        "file_bytes": conf.output_limit_bytes(),
        "cold_cache": run.scenario.get("cache") == "cold",
        # the lab plan's neighbour job the scenario names (interference)
        "neighbours": _neighbours(run),
        "policy": run.policy,  # the pool's at the claim (reprogate.lab-policy/v1)
        "bundle": {
            "sha256": bundle.sha256,
            "size": bundle.size,
            "url": f"/api/v1/runner/runs/{run.pk}/bundle?attempt={run.attempt}",
        },
    }


def _neighbours(run: Run) -> dict[str, Any]:
    name = run.scenario.get("neighbour")
    jobs = run.campaign.neighbours or {}
    return {name: jobs[name]} if isinstance(name, str) and name in jobs else {}


def _host_threads(host: LabHost | None) -> int:
    """The host's CPU threads as its agent captured them at hello (else 1)."""
    cpu = (host.environment if host is not None else {}).get("cpu")
    threads = cpu.get("threads") if isinstance(cpu, dict) else None
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        return 1
    return min(threads, 4096)


def _holds(token: HostToken, run: Run, attempt: int) -> bool:
    return (
        run.attempt == attempt
        and run.host_id is not None
        and LabHost.objects.filter(pk=run.host_id, token=token).exists()
    )


def _held(token: HostToken, run: Run, attempt: int, states: AbstractSet[str]) -> Run:
    """The run, locked, if the token's host holds ``attempt`` in one of
    ``states``; else a 409."""
    locked = (
        Run.objects.select_for_update(of=("self",))
        .select_related("campaign__bundle", "campaign__pool")
        .get(pk=run.pk)
    )
    if not _holds(token, locked, attempt):
        raise RunnerConflict(
            f"This host does not hold attempt {attempt} of the run (it is at "
            f"attempt {locked.attempt}, {locked.get_state_display().lower()}).",
            code="stale_attempt",
        )
    if locked.state not in states:
        raise RunnerConflict(
            f"The run is {locked.get_state_display().lower()}.",
            code="run_state",
        )
    return locked


@dataclass(frozen=True)
class BundleStream:
    chunks: Iterator[bytes]
    sha256: str
    size: int


def agent_bundle(*, token: HostToken, run: Run, attempt: int) -> BundleStream:
    """The bundle archive, while the host prepares the attempt it holds."""
    with transaction.atomic():
        run = _held(token, run, attempt, {S.PREPARING})
    bundle: Bundle = run.campaign.bundle
    if bundle.archive_blob is None:
        raise RunnerConflict("The bundle has no archive.", code="bundle_unreadable")
    source = blob_open(bundle.archive_blob)

    def chunks() -> Iterator[bytes]:
        with source:
            while chunk := source.read(CHUNK):
                yield chunk

    return BundleStream(chunks(), bundle.sha256, bundle.size)


def agent_report(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    progress: float | None,
    log_tail: str | None,
) -> bool:
    """A sign of life with progress and log tail; False when the run must stop."""
    if not _holds(token, run, attempt):
        return False
    if progress is not None and not math.isfinite(progress):
        progress = None
    if log_tail is not None:
        log_tail = clean_text(log_tail[-conf.log_tail_chars() :])
    return run_report(
        run_id=run.pk, attempt=attempt, progress=progress, log_tail=log_tail
    )


@transaction.atomic
def agent_running(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    environment: dict[str, Any],
    declared_environment: dict[str, Any],
    cache_dropped: bool | None,
) -> Run:
    """The harness starts: the host's environment and its drift from the
    bundle's declared one are recorded, as a local worker records them."""
    run = _held(token, run, attempt, {S.PREPARING})
    fields = running_fields(run, environment, declared_environment, cache_dropped)
    fields["environment_canonical"] = environment_canonical(fields["environment"])
    return run_transition(run=run, to=S.RUNNING, attempt=attempt, fields=fields)


# -- outputs -------------------------------------------------------------------


@contextlib.contextmanager
def _locked_index(folder: Path) -> Iterator[list[dict[str, Any]]]:
    """The attempt's index of uploads, under an exclusive lock; written back."""
    conf.uploads_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    for part in (conf.uploads_dir(), folder.parent, folder, folder / "files"):
        with contextlib.suppress(FileExistsError):
            part.mkdir(mode=0o700)
        if part.is_symlink() or not part.is_dir():
            raise RuntimeError(f"{part} is not a folder of the server's own")
    lock_fd = os.open(
        folder / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        index_path = folder / "index.json"
        index = json.loads(index_path.read_text()) if index_path.exists() else []
        yield index
        temporary = folder / "index.json.new"
        temporary.write_text(json.dumps(index))
        temporary.replace(index_path)
    finally:
        os.close(lock_fd)


def agent_output_put(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    path: str,
    read: Callable[[int], bytes],
    length: int | None,
) -> Collected:
    """Write one output of the attempt, read from ``read`` (the request body)."""
    problem = output_path_problem(path)
    if problem:
        raise RunnerError(f"Unsafe output path: {problem}", code="output_path_unsafe")
    with transaction.atomic():
        _held(token, run, attempt, {S.RUNNING})
    folder = attempt_uploads_folder(run.pk, attempt)
    limit, most = conf.output_limit_bytes(), conf.max_output_files()
    with _locked_index(folder) as index:
        if any(entry["path"] == path for entry in index):
            raise RunnerConflict(
                f"{path} was uploaded already for this attempt.",
                code="output_exists",
            )
        if len(index) >= most:
            raise OutputTooLarge(
                f"An attempt keeps at most {most} output files.",
                code="output_too_many",
            )
        room = limit - sum(entry["size"] for entry in index)
        if length is not None and length > room:
            raise OutputTooLarge(
                f"The outputs would exceed {limit} bytes.", code="output_too_large"
            )
        local = folder / "files" / str(len(index))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        digest, size = hashlib.sha256(), 0
        with os.fdopen(os.open(local, flags, 0o600), "wb") as sink:
            while chunk := read(CHUNK):
                size += len(chunk)
                if size > room:
                    break
                digest.update(chunk)
                sink.write(chunk)
        if size > room:
            local.unlink()
            raise OutputTooLarge(
                f"The outputs would exceed {limit} bytes.", code="output_too_large"
            )
        entry = {"path": path, "local": local.name, "sha256": digest.hexdigest()}
        index.append({**entry, "size": size})
    _remove_uploads_unless_held(token, run.pk, attempt)  # given up meanwhile
    return Collected(path, local, digest.hexdigest(), size)


def agent_artefact_put(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    name: str,
    read: Callable[[int], bytes],
    length: int | None,
) -> Collected:
    """Write one runner artefact of the attempt (``benchmarks.services.artefacts``)."""
    with transaction.atomic():
        _held(token, run, attempt, {S.RUNNING})
    saved = artefact_write(
        run_id=run.pk, attempt=attempt, name=name, read=read, length=length
    )
    _remove_uploads_unless_held(token, run.pk, attempt)  # given up meanwhile
    return saved


def _collection(run_id: int, attempt: int, warnings: list[str]) -> Collection:
    folder = attempt_uploads_folder(run_id, attempt)
    found = Collection(warnings=[clean_text(w[:MAX_WARNING_CHARS]) for w in warnings])
    found.artefacts = attempt_artefacts(run_id, attempt)
    found.warnings = found.warnings[:MAX_WARNINGS]
    index_path = folder / "index.json"
    if not index_path.exists():
        return found
    with _locked_index(folder) as index:
        for entry in index:
            local = folder / "files" / entry["local"]
            found.files.append(
                Collected(entry["path"], local, entry["sha256"], entry["size"])
            )
            found.total += entry["size"]
    found.files.sort(key=lambda f: f.path)
    return found


# -- the end -------------------------------------------------------------------


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value) if math.isfinite(value) else default


def agent_finish(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    result: dict[str, Any],
    warnings: list[str],
    statement: str | None = None,
    checks: list[Any] | None = None,
) -> str:
    """End the run the host ran (with the anti-gaming ``checks`` it made,
    ``benchmarks.lib.lab.checks``: malformed ones refuse the finish): its
    statement verified with the host's pinned key first
    (``host_keys.run_statement_accept``: refused, the run is not accepted and
    stays running), then its uploaded outputs stored and parsed,
    the run cancelled, timed out, failed or succeeded as a local worker ends it.
    Returns the final state ("stale" if the run moved on meanwhile)."""
    checks = list(checks or [])
    problems = checks_problems(checks)
    if problems:
        raise RunnerError(
            "The run's checks are malformed: " + "; ".join(problems[:5]) + ".",
            code="checks_invalid",
        )
    with transaction.atomic():
        run = _held(token, run, attempt, {S.RUNNING})
        cancelled = run.cancel_requested_at is not None
        uploaded = _collection(run.pk, attempt, [])
        run_statement_accept(
            run=run,
            attempt=attempt,
            envelope=statement,
            outputs={f.path: f.sha256 for f in uploaded.files},
            artefacts={a.path: a.sha256 for a in uploaded.artefacts},
            exit_code=result.get("exit_code"),
            stop_reason=str(result.get("stop_reason") or ""),
            checks=checks,
        )
    duration = result.get("duration_s")
    outcome = Outcome(
        exit_code=result.get("exit_code"),
        stop_reason=str(result.get("stop_reason") or "runner_error")[:32],
        isolation=result.get("isolation") or {},
        duration_s=None if duration is None else max(0.0, _number(duration, 0.0)),
        output_truncated=bool(result.get("output_truncated")),
        log_tail=str(result.get("log_tail") or "")[-conf.log_tail_chars() :],
        progress=_number(result.get("progress"), 0.0),
        message=clean_text(str(result.get("message") or ""))[:2000],
        stopped=cancelled,
        checks=json_safe(checks),
    )
    collection = _collection(run.pk, attempt, warnings)
    try:
        return run_conclude(
            run=run,
            attempt=attempt,
            outcome=outcome,
            collection=collection,
            beat=lambda: None,
        )
    except StaleAttempt:
        return "stale"
    finally:
        _remove_uploads_unless_held(token, run.pk, attempt)


def agent_fail(
    *,
    token: HostToken,
    run: Run,
    attempt: int,
    stop_reason: str,
    message: str,
    log_tail: str,
) -> str:
    """End a run the host could not prepare, or record a cancellation it saw
    while preparing."""
    tail = log_tail[-conf.log_tail_chars() :]
    with transaction.atomic():
        states = {S.PREPARING} if stop_reason == "cancelled" else ACTIVE_STATES
        run = _held(token, run, attempt, states)
        if stop_reason == "cancelled" and run.cancel_requested_at is None:
            raise RunnerConflict(
                "Nobody asked to cancel this run.", code="not_cancelled"
            )
    try:
        if stop_reason == "cancelled":
            return run_end_cancelled_unprepared(run, attempt, tail)
        reason = clean_text(message.strip())[:2000] or "The host could not run it."
        return run_end_unprepared(run, attempt, stop_reason, reason, tail)
    except StaleAttempt:
        return "stale"
    finally:
        _remove_uploads_unless_held(token, run.pk, attempt)


def _remove_uploads_unless_held(token: HostToken, run_id: int, attempt: int) -> None:
    """Remove the attempt's uploads unless its run is still active at this attempt,
    held by a host of a token still valid (an upload may end after the run ended,
    was re-queued or the host's token was revoked: nobody will read it)."""
    held = Run.objects.filter(
        pk=run_id,
        attempt=attempt,
        state__in=ACTIVE_STATES,
        host__token=token,
        host__token__revoked_at__isnull=True,
    )
    if not held.exists():
        attempt_uploads_remove(run_id, attempt)


def _json_safe(value: Any) -> Any:
    """An object the agent sent, fit for a jsonb column; anything else is {}."""
    return json_safe(value) if isinstance(value, dict) else {}
