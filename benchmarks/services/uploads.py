"""The folders where the runner API keeps a remote run attempt's uploaded outputs
(``agent_output_put``) until the run ends: ``run-<id>/attempt-<n>`` under
``conf.uploads_dir()``, the installation's own var directory, so that two
installations on one host never write into one folder.

An attempt's folder goes when its run ends, when the run is claimed again, when
the reaper gives the attempt up (re-queued, failed or cancelled), and when the
token of the host holding it is revoked: nobody can finish that attempt any more."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterable
from pathlib import Path

from django.db import transaction

from benchmarks import conf


def run_uploads_folder(run_id: int) -> Path:
    return conf.uploads_dir() / f"run-{run_id}"


def attempt_uploads_folder(run_id: int, attempt: int) -> Path:
    return run_uploads_folder(run_id) / f"attempt-{attempt}"


def run_uploads_remove(run_id: int) -> None:
    """Every attempt's uploads of the run."""
    shutil.rmtree(run_uploads_folder(run_id), ignore_errors=True)


def attempt_uploads_remove(run_id: int, attempt: int) -> None:
    """One attempt's uploads (and the run's folder when nothing else is left)."""
    shutil.rmtree(attempt_uploads_folder(run_id, attempt), ignore_errors=True)
    with contextlib.suppress(OSError):
        run_uploads_folder(run_id).rmdir()


def attempts_uploads_remove_on_commit(attempts: Iterable[tuple[int, int]]) -> None:
    """Remove the (run id, attempt) folders once the caller's transaction commits:
    a rolled-back decision leaves the uploads where they are."""
    given_up = list(attempts)

    def remove() -> None:
        for run_id, attempt in given_up:
            attempt_uploads_remove(run_id, attempt)

    if given_up:
        transaction.on_commit(remove, robust=True)
