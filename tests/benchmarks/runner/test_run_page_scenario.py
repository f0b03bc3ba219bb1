"""The run page's "Scenario" section: for a run of another kind than steady, what
the lab host did around the harness (its ``scenario.json``): the phases and the
fault hook's actions with their exit codes and what the hook said, and the
driver's own metrics; a steady run has no such section, and a record shaped
unexpectedly (it comes from a lab host) shows dashes, never an error."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.urls import reverse

from artifacts.storage.blobs import blob_record, blob_write
from benchmarks.lib.lab.artefacts import SCENARIO
from benchmarks.lib.lab.scenario_document import encode
from benchmarks.models import Campaign, LabPool, Run, RunArtefact
from tests.benchmarks.runner.support import runs_of, start

pytestmark = pytest.mark.django_db

RECOVERY = {"name": "failover_recovery_s", "stat": "mean", "value": 0.92, "unit": "s"}
ERRORS = {"name": "failover_errors", "stat": "mean", "value": 997, "unit": "count"}
ERROR_WINDOW = {"do": "error_window", "at_s": 3, "for_s": 2, "run": "r"}
RECORD = {
    "phases": [{"name": "main", "started_s": 0.0, "duration_s": 8.4}],
    "actions": [
        {"hook": "fault", "verb": "start", "argument": ERROR_WINDOW, "at_s": 3.001,
         "exit_code": 0, "output": "error_window: requests fail with EIO"},
        {"hook": "fault", "verb": "stop", "argument": ERROR_WINDOW, "at_s": 5.002,
         "exit_code": 3, "output": "cannot here"},
    ],
}  # fmt: skip


@pytest.fixture
def run(bundle: Any, pool: LabPool, labops: Any) -> Run:
    campaign: Campaign = start(bundle, pool, labops)
    return runs_of(campaign)[0]


def _put(run: Run, record: Any, attempt: int | None = None) -> None:
    data = encode("failover", [RECOVERY, ERRORS], [], record)
    blob = blob_record(blob_write(data, hashlib.sha256(data).hexdigest(), len(data)))
    RunArtefact.objects.create(
        run=run, attempt=run.attempt if attempt is None else attempt,
        name=SCENARIO, blob=blob,
    )  # fmt: skip


def _page(client: Any, user: Any, run: Run) -> str:
    client.force_login(user)
    response = client.get(reverse("benchmarks:run_detail", args=[run.public_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_failover_run_shows_the_error_window_and_the_recovery(
    client: Any, labops: Any, run: Run
) -> None:
    _put(run, RECORD)

    page = _page(client, labops, run)

    assert 'data-testid="run-scenario-record"' in page
    assert "Scenario: failover" in page
    assert page.count('data-testid="scenario-action"') == 2
    assert "error_window" in page
    assert "for 2 s" in page
    assert "requests fail with EIO" in page
    assert '<span class="run-state drift-major">3</span>' in page  # the failed stop
    assert "failover_recovery_s" in page
    assert "failover_errors" in page
    assert "Phases: main (8.4 s)" in page


def test_a_steady_run_has_no_scenario_section(
    client: Any, labops: Any, run: Run
) -> None:
    assert 'data-testid="run-scenario-record"' not in _page(client, labops, run)


def test_an_earlier_attempt_s_record_is_not_this_attempt_s(
    client: Any, labops: Any, run: Run
) -> None:
    Run.objects.filter(pk=run.pk).update(attempt=2)
    run.refresh_from_db()
    _put(run, RECORD, attempt=1)

    assert 'data-testid="run-scenario-record"' not in _page(client, labops, run)


@pytest.mark.parametrize(
    "actions",
    [["not an object"], [{"argument": "text", "at_s": "soon"}], "not a list"],
)
def test_a_record_shaped_unexpectedly_shows_dashes(
    client: Any, labops: Any, run: Run, actions: Any
) -> None:
    _put(run, {"actions": actions})

    page = _page(client, labops, run)

    assert "Scenario: failover" in page
    if isinstance(actions, list):
        assert page.count('data-testid="scenario-action"') == len(actions)
