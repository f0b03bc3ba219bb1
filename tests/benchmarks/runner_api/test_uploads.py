"""Where the runner API keeps a remote attempt's uploaded outputs: under the
installation's own var directory (two installations on one host never share a
folder), and only while the attempt can still be finished: a re-queued run's and
a revoked host's uploads are removed."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from benchmarks import conf
from benchmarks.models import Campaign, HostToken, Run
from benchmarks.services.host_tokens import (
    IssuedHostToken,
    host_token_issue,
    host_token_revoke,
)
from benchmarks.services.reaper import run_reap
from benchmarks.services.remote import agent_output_put
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import (
    call,
    hello,
    put_output,
    running,
    started,
)

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]


def _attempt_folder(run: Run, attempt: int = 1) -> Path:
    return conf.uploads_dir() / f"run-{run.pk}" / f"attempt-{attempt}"


@pytest.fixture
def live(agent: APIClient, campaign: Campaign) -> Run:
    run = runs_of(campaign)[0]
    started(agent, run)
    assert put_output(agent, run, "metrics.json", b"{}").status_code == 201
    return Run.objects.get(pk=run.pk)


def test_uploads_land_under_the_installations_var_directory(
    agent: APIClient, campaign: Campaign, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "installation-a"
    settings.RUNNER_WORK_DIR = str(tmp_path / "shared-work")
    (tmp_path / "shared-work").mkdir()
    run = runs_of(campaign)[0]
    started(agent, run)

    response = put_output(agent, run, "metrics.json", b'{"metrics": []}')

    assert response.status_code == 201, response.json()
    files = tmp_path / "installation-a" / "runner-uploads" / f"run-{run.pk}"
    stored = list((files / "attempt-1" / "files").iterdir())
    assert [p.read_bytes() for p in stored] == [b'{"metrics": []}']
    assert not list((tmp_path / "shared-work").iterdir())
    shared = Path(tempfile.gettempdir()) / "runner-uploads" / f"run-{run.pk}"
    assert not shared.exists()


def test_a_requeued_runs_uploads_are_removed(
    live: Run, clock: Any, django_capture_on_commit_callbacks: Capture
) -> None:
    assert _attempt_folder(live).is_dir()
    clock.advance(hours=1)

    with django_capture_on_commit_callbacks(execute=True):
        report = run_reap()

    assert report.requeued == [live.pk]
    assert not _attempt_folder(live).exists()
    assert not (conf.uploads_dir() / f"run-{live.pk}").exists()


def test_a_run_failed_by_the_reaper_loses_its_uploads(
    live: Run, clock: Any, settings: Any, django_capture_on_commit_callbacks: Capture
) -> None:
    settings.RUNNER_MAX_ATTEMPTS = 1
    clock.advance(hours=1)

    with django_capture_on_commit_callbacks(execute=True):
        report = run_reap()

    assert report.failed == [live.pk]
    assert not _attempt_folder(live).exists()


def test_revoking_a_hosts_token_removes_the_uploads_of_the_runs_it_holds(
    live: Run,
    issued: IssuedHostToken,
    pool: Any,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    other = runs_of(live.campaign)[1]
    kept = _started_elsewhere(pool, other)

    with django_capture_on_commit_callbacks(execute=True):
        host_token_revoke(token=issued.token, actor=None)

    assert not _attempt_folder(live).exists()
    assert [p.read_bytes() for p in (kept / "files").iterdir()] == [b"kept"]


def test_an_upload_that_ends_after_its_token_was_revoked_is_not_kept(
    live: Run, issued: IssuedHostToken
) -> None:
    host_token_revoke(token=issued.token, actor=None)
    token = HostToken.objects.get(pk=issued.token.pk)
    body = iter([b"late", b""])

    agent_output_put(
        token=token,
        run=live,
        attempt=1,
        path="late.json",
        read=lambda _size: next(body),
        length=4,
    )

    assert not _attempt_folder(live).exists()


def _started_elsewhere(pool: Any, run: Run) -> Path:
    """Another host of the pool runs ``run`` and uploads one output."""
    client = agent_client(host_token_issue(pool=pool, name="lab-08", actor=None).raw)
    hello(client, worker_name="agent@lab-08")
    body = {"attempt": 1, "worker_name": "agent@lab-08"}
    assert call(client, f"runs/{run.pk}/claim", body).status_code == 200
    assert running(client, run).status_code == 200
    assert put_output(client, run, "metrics.json", b"kept").status_code == 201
    return _attempt_folder(run)
