"""The runner API's run side: only the host holding an attempt may download the
bundle, report, start, upload and end it; runs of other pools are 404, stale
attempts 409; hostile output paths and outputs over the limits are refused."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from benchmarks import conf
from benchmarks.models import Campaign, Run
from benchmarks.services.host_tokens import IssuedHostToken, host_token_issue
from benchmarks.services.runs import run_cancel
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import (
    BASE,
    call,
    claim,
    finish,
    hello,
    put_output,
    running,
    started,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(campaign: Campaign) -> Run:
    return runs_of(campaign)[0]  # cold-c1


@pytest.fixture
def held(agent: APIClient, run: Run) -> Run:
    """The run claimed by the agent (preparing)."""
    hello(agent)
    assert claim(agent, run).status_code == 200
    return Run.objects.get(pk=run.pk)


@pytest.fixture
def second_host(pool: Any) -> APIClient:
    """Another host of the same pool, with a token of its own."""
    client = agent_client(host_token_issue(pool=pool, name="lab-08", actor=None).raw)
    hello(client, worker_name="agent@lab-08")
    return client


def _bundle(client: APIClient, run: Run, attempt: int = 1) -> Any:
    return client.get(f"{BASE}runs/{run.pk}/bundle", {"attempt": attempt})


# -- claim ---------------------------------------------------------------------


def test_claim_gives_the_run_to_this_host(
    agent: APIClient, run: Run, issued: IssuedHostToken
) -> None:
    hello(agent)

    response = claim(agent, run)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["claimed"] is True
    got = body["run"]
    bundle = run.campaign.bundle
    assert (got["id"], got["public_id"], got["attempt"]) == (
        run.pk,
        str(run.public_id),
        1,
    )
    assert got["scenario"] == run.scenario
    assert got["entrypoint"] == "harness/run.sh"
    assert {f["path"] for f in got["files"]} == {
        "harness/run.sh",
        "environment/manifest.json",
        "workloads/chat.json",
    }
    assert all(len(f["sha256"]) == 64 and f["size"] > 0 for f in got["files"])
    assert got["cold_cache"] is True
    assert got["wall_limit_s"] == run.wall_limit_s
    assert got["cpu_seconds"] == run.wall_limit_s * 4  # the host's 4 threads
    assert got["bundle"] == {
        "sha256": bundle.sha256,
        "size": bundle.size,
        "url": f"/api/v1/runner/runs/{run.pk}/bundle?attempt=1",
    }
    run.refresh_from_db()
    assert run.state == Run.State.PREPARING
    assert run.host.token == issued.token


def test_a_second_claim_of_the_attempt_is_refused(
    held: Run, agent: APIClient, second_host: APIClient
) -> None:
    again = claim(agent, held)
    other = claim(second_host, held)

    assert again.status_code == other.status_code == 409
    assert again.json()["claimed"] is False
    assert again.json()["detail"]
    assert Run.objects.get(pk=held.pk).host.worker_name == "agent@lab-07"


def test_claim_of_a_stale_attempt_is_refused(agent: APIClient, run: Run) -> None:
    hello(agent)

    response = claim(agent, run, attempt=2)

    assert (response.status_code, response.json()["claimed"]) == (409, False)
    assert Run.objects.get(pk=run.pk).state == Run.State.QUEUED


def test_every_run_endpoint_answers_404_for_a_run_of_another_pool(
    held: Run, other_agent: APIClient
) -> None:
    hello(other_agent, worker_name="agent@lab-99")
    run = held
    calls = [
        claim(other_agent, run),
        _bundle(other_agent, run),
        call(other_agent, f"runs/{run.pk}/report", {"attempt": 1}),
        running(other_agent, run),
        put_output(other_agent, run, "metrics.json", b"{}"),
        finish(other_agent, run),
        call(
            other_agent,
            f"runs/{run.pk}/fail",
            {"attempt": 1, "stop_reason": "runner_error"},
        ),
        call(other_agent, "runs/999999/claim", {"attempt": 1, "worker_name": "a@b"}),
    ]

    assert [c.status_code for c in calls] == [404] * len(calls)
    assert Run.objects.get(pk=run.pk).state == Run.State.PREPARING


# -- bundle --------------------------------------------------------------------


def test_the_bundle_streams_to_the_host_holding_the_attempt(
    held: Run, agent: APIClient
) -> None:
    response = _bundle(agent, held)

    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    bundle = held.campaign.bundle
    assert response["X-Bundle-SHA256"] == bundle.sha256
    assert int(response["Content-Length"]) == bundle.size == len(data)
    assert hashlib.sha256(data).hexdigest() == bundle.sha256
    assert response["Content-Type"] == "application/octet-stream"


def test_the_bundle_is_refused_to_whoever_does_not_hold_the_run(
    agent: APIClient, run: Run, second_host: APIClient
) -> None:
    hello(agent)
    before_claim = _bundle(agent, run)
    claim(agent, run)

    other_host = _bundle(second_host, run)
    stale = _bundle(agent, run, attempt=2)
    running(agent, run)
    after_start = _bundle(agent, run)

    assert [r.status_code for r in (before_claim, other_host, stale, after_start)] == [
        409
    ] * 4
    assert before_claim.json()["code"] == "stale_attempt"


def test_the_bundle_needs_an_attempt(held: Run, agent: APIClient) -> None:
    assert agent.get(f"{BASE}runs/{held.pk}/bundle").status_code == 400
    assert _bundle(agent, held, attempt="x").status_code == 400  # type: ignore[arg-type]


# -- report and running --------------------------------------------------------


def test_report_writes_progress_and_log_tail(held: Run, agent: APIClient) -> None:
    response = call(
        agent,
        f"runs/{held.pk}/report",
        {"attempt": 1, "progress": 0.4, "log_tail": "step 2\x00 of 5"},
    )

    assert (response.status_code, response.json()) == (200, {"continue": True})
    held.refresh_from_db()
    assert (held.progress, held.log_tail) == (0.4, "step 2\ufffd of 5")


def test_report_tells_the_agent_to_stop_once_cancelled(
    held: Run, agent: APIClient, labops: Any, second_host: APIClient
) -> None:
    other = call(second_host, f"runs/{held.pk}/report", {"attempt": 1})
    stale = call(agent, f"runs/{held.pk}/report", {"attempt": 2})
    run_cancel(run=held, actor=labops)

    cancelled = call(agent, f"runs/{held.pk}/report", {"attempt": 1})

    for response in (other, stale, cancelled):
        assert response.status_code == 409
        assert response.json()["continue"] is False


@pytest.mark.parametrize(
    "body",
    [{}, {"attempt": 0}, {"attempt": 1, "progress": "lots"}, {"attempt": "one"}],
)
def test_report_refuses_bad_input(
    held: Run, agent: APIClient, body: dict[str, Any]
) -> None:
    assert call(agent, f"runs/{held.pk}/report", body).status_code == 400


def test_running_records_environment_drift_and_the_cache(
    held: Run, agent: APIClient
) -> None:
    environment = {"kernel": {"release": "6.8.0-test"}, "os": {"name": "Ubuntu"}}
    declared = {"kernel": {"release": "4.0.0-test"}}

    response = running(
        agent,
        held,
        environment=environment,
        declared_environment=declared,
        cache_dropped=True,
    )

    assert (response.status_code, response.json()["state"]) == (200, "running")
    held.refresh_from_db()
    assert response.json()["drift"] == held.drift  # the agent signs what it was told
    assert [d["field"] for d in held.drift] == ["kernel.release"]
    assert held.state == Run.State.RUNNING
    assert held.environment == environment
    assert held.drift
    assert held.started_at is not None
    assert (held.cache_dropped, held.cache_note) == (
        True,
        "Page cache dropped before the run.",
    )
    assert running(agent, held).status_code == 409  # once


def test_running_refuses_a_stale_attempt_and_bad_environments(
    held: Run, agent: APIClient
) -> None:
    assert running(agent, held, attempt=2).status_code == 409
    assert running(agent, held, environment=["x"]).status_code == 400
    assert running(agent, held, environment="x").status_code == 400
    assert Run.objects.get(pk=held.pk).state == Run.State.PREPARING


# -- outputs -------------------------------------------------------------------


@pytest.fixture
def live(agent: APIClient, run: Run) -> Run:
    started(agent, run)
    return Run.objects.get(pk=run.pk)


def test_an_output_is_written_into_the_servers_own_folder(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    response = put_output(agent, live, "deep/er/metrics.json", b'{"metrics": []}')

    assert response.status_code == 201, response.json()
    assert response.json() == {
        "path": "deep/er/metrics.json",
        "sha256": hashlib.sha256(b'{"metrics": []}').hexdigest(),
        "size": 15,
    }
    folder = conf.uploads_dir() / f"run-{live.pk}" / "attempt-1"
    stored = list((folder / "files").iterdir())
    assert [p.read_bytes() for p in stored] == [b'{"metrics": []}']
    again = put_output(agent, live, "deep/er/metrics.json", b"{}")
    assert (again.status_code, again.json()["code"]) == (409, "output_exists")


@pytest.mark.parametrize(
    "path",
    ["../x", "a/../../x", "/etc/passwd", "a%00b", "a\\b", "./x", "a//b", "é%09"],
)
def test_unsafe_output_paths_are_refused(
    live: Run, agent: APIClient, path: str, runner_work_dir: Path
) -> None:
    response = put_output(agent, live, path, b"data")

    assert response.status_code == 400, (path, response.content)
    assert response.json()["code"] == "output_path_unsafe"
    assert not list(conf.uploads_dir().rglob("files/*"))


def test_outputs_over_the_attempts_size_limit_are_refused(
    live: Run, agent: APIClient, settings: Any, runner_work_dir: Path
) -> None:
    settings.RUNNER_OUTPUT_LIMIT_BYTES = 10

    first = put_output(agent, live, "a", b"123456")
    second = put_output(agent, live, "b", b"123456")
    alone = put_output(agent, live, "c", b"x" * 11)
    fits = put_output(agent, live, "d", b"1234")

    assert (first.status_code, second.status_code) == (201, 413)
    assert second.json()["code"] == "output_too_large"
    assert alone.status_code == 413
    assert fits.status_code == 201
    sizes = sorted(p.stat().st_size for p in conf.uploads_dir().rglob("files/*"))
    assert sizes == [4, 6]


def test_an_output_larger_than_a_request_body_in_memory_is_streamed(
    live: Run, agent: APIClient, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    data = bytes(range(256)) * 40

    response = put_output(agent, live, "big.bin", data)

    assert response.status_code == 201, response.json()
    assert response.json()["sha256"] == hashlib.sha256(data).hexdigest()


def test_outputs_over_the_file_count_are_refused(
    live: Run, agent: APIClient, settings: Any
) -> None:
    settings.RUNNER_MAX_OUTPUT_FILES = 2

    codes = [put_output(agent, live, f"f{i}", b"1").status_code for i in range(3)]

    assert codes == [201, 201, 413]


def test_outputs_need_a_running_attempt_of_this_host(
    held: Run, agent: APIClient, second_host: APIClient
) -> None:
    preparing = put_output(agent, held, "metrics.json", b"{}")
    running(agent, held)
    other = put_output(second_host, held, "metrics.json", b"{}")
    stale = put_output(agent, held, "metrics.json", b"{}", attempt=2)

    assert [r.status_code for r in (preparing, other, stale)] == [409, 409, 409]


# -- finish and fail -----------------------------------------------------------


def test_a_failing_harness_fails_the_run_with_its_outputs(
    live: Run, agent: APIClient, runner_work_dir: Path
) -> None:
    put_output(agent, live, "metrics.json", b"{}")

    response = finish(
        agent, live, outputs={"metrics.json": b"{}"}, exit_code=3, log_tail="boom"
    )

    assert (response.status_code, response.json()) == (200, {"state": "failed"})
    live.refresh_from_db()
    assert (live.exit_code, live.stop_reason, live.log_tail) == (3, "exited", "boom")
    assert live.reason == "The harness exited with status 3."
    assert live.outputs.get().path == "metrics.json"
    assert not (conf.uploads_dir() / f"run-{live.pk}").exists()
    assert finish(agent, live).status_code == 409  # over


def test_a_timeout_and_a_missing_output(campaign: Campaign, agent: APIClient) -> None:
    first, second = runs_of(campaign)
    started(agent, first)
    assert claim(agent, second).status_code == 200
    assert running(agent, second).status_code == 200

    timed_out = finish(agent, first, exit_code=None, stop_reason="timeout")
    parse_failed = finish(agent, second)  # exited 0, but no metrics.json

    assert timed_out.json() == {"state": "timed_out"}
    assert parse_failed.json() == {"state": "failed"}
    second.refresh_from_db()
    assert second.stop_reason == "parse_failed"
    assert "did not write this declared output" in second.reason


def test_a_cancelled_run_ends_cancelled(
    live: Run, agent: APIClient, labops: Any
) -> None:
    run_cancel(run=live, actor=labops)

    response = finish(agent, live, exit_code=None, stop_reason="cancelled")

    assert response.json() == {"state": "cancelled"}
    live.refresh_from_db()
    assert live.reason.startswith(f"Cancelled by {labops.username}")


def test_a_cancellation_nobody_asked_for_is_a_failure(
    live: Run, agent: APIClient
) -> None:
    response = finish(agent, live, exit_code=None, stop_reason="cancelled")

    assert response.json() == {"state": "failed"}


@pytest.mark.parametrize(
    "result",
    [
        {"stop_reason": "Exited!"},
        {"exit_code": "zero"},
        {"duration_s": -1},
        {"isolation": []},
    ],
)
def test_finish_refuses_bad_input(
    live: Run, agent: APIClient, result: dict[str, Any]
) -> None:
    response = finish(agent, live, **result)

    assert response.status_code == 400, response.json()
    assert Run.objects.get(pk=live.pk).state == Run.State.RUNNING


def test_fail_ends_a_run_its_host_could_not_prepare(
    held: Run, agent: APIClient, second_host: APIClient
) -> None:
    body = {"attempt": 1, "stop_reason": "bundle_corrupt", "message": "bad digest"}
    other = call(second_host, f"runs/{held.pk}/fail", body)
    bad = call(agent, f"runs/{held.pk}/fail", {**body, "stop_reason": "exited"})

    response = call(agent, f"runs/{held.pk}/fail", {**body, "log_tail": "t"})

    assert (other.status_code, bad.status_code) == (409, 400)
    assert (response.status_code, response.json()) == (200, {"state": "failed"})
    held.refresh_from_db()
    assert (held.stop_reason, held.reason, held.log_tail) == (
        "bundle_corrupt",
        "bad digest",
        "t",
    )
    again = call(agent, f"runs/{held.pk}/fail", body)
    assert again.status_code == 409


def test_fail_records_a_cancellation_seen_while_preparing(
    held: Run, agent: APIClient, labops: Any
) -> None:
    body = {"attempt": 1, "stop_reason": "cancelled"}
    unasked = call(agent, f"runs/{held.pk}/fail", body)
    run_cancel(run=held, actor=labops)

    response = call(agent, f"runs/{held.pk}/fail", body)

    assert (unasked.status_code, unasked.json()["code"]) == (409, "not_cancelled")
    assert response.json() == {"state": "cancelled"}
