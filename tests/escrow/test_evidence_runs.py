"""An evaluation's evidence package includes the evidence of the runs it
judged: every run's deposit (outputs, environment, host-signed statement and
host key) is in it, ``reprogate evidence verify`` checks each statement with its
host key, and a flipped byte of a judged run's output is named."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.models import Campaign, Run
from benchmarks.services.host_tokens import host_token_issue
from gates.models import Evaluation, GatePlan
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401 (fixture rfp)
from tests.benchmarks.runner.conftest import sent_tasks  # noqa: F401 (fixture)
from tests.benchmarks.runner.support import runner_work_dir  # noqa: F401
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import (
    claim,
    finish,
    hello,
    put_output,
    running,
)
from tests.escrow.package_support import flip, members, replaced
from tests.escrow.test_evidence_evaluation import download_to, verify
from tests.gates.support import (  # noqa: F401 (fixtures)
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
)

pytestmark = pytest.mark.django_db

METRICS = (
    b'{"metrics": [{"name": "ttft_ms", "stat": "p99", "value": 100, "unit": "ms"}]}'
)


@pytest.fixture(autouse=True)
def _uploads_in_the_tests_var_dir(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path / "var"


def _run_all_on_an_agent(campaign: Campaign) -> list[Run]:
    agent = agent_client(
        host_token_issue(pool=campaign.pool, name="lab-07", actor=None).raw
    )
    assert hello(agent).status_code == 200
    done = []
    for run in campaign.runs.order_by("position"):
        assert claim(agent, run).status_code == 200
        assert running(agent, run).status_code == 200
        assert put_output(agent, run, "metrics.json", METRICS).status_code == 201
        answer = finish(agent, run, outputs={"metrics.json": METRICS})
        assert answer.status_code == 200, answer.json()
        done.append(Run.objects.get(pk=run.pk))
    return done


@pytest.fixture
def judged(
    gate_campaign: Any,  # noqa: F811
    evaluate: Any,
    frozen_plan: GatePlan,  # noqa: F811
    sent_tasks: Any,  # noqa: F811
    runner_work_dir: Path,  # noqa: F811
) -> tuple[Evaluation, list[Run]]:
    campaign = gate_campaign(3)
    runs = _run_all_on_an_agent(campaign)
    return evaluate(frozen_plan, PASS, campaign=campaign), runs


@pytest.fixture
def package(
    judged: tuple[Evaluation, list[Run]], buyer: Any, client_for: Any, tmp_path: Path
) -> Path:
    return download_to(client_for(buyer), judged[0], tmp_path / "e.zip")


def _run_leaves(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    evidence = json.loads(files["evidence.json"])
    leaves = [json.loads(base64.b64decode(d["leaf"])) for d in evidence["deposits"]]
    return {leaf["run"]: leaf for leaf in leaves if leaf["kind"] == "run_output"}


def test_the_evaluation_package_holds_and_checks_the_judged_runs(
    package: Path, judged: tuple[Evaluation, list[Run]]
) -> None:
    leaves = _run_leaves(members(package))

    assert set(leaves) == {str(run.public_id) for run in judged[1]}
    code, out = verify(package)
    assert code == 0, out
    assert out.count("signed by host") == len(judged[1])


def test_a_flipped_byte_of_a_judged_run_s_output_is_named(
    package: Path, tmp_path: Path
) -> None:
    files = members(package)
    run, leaf = next(iter(_run_leaves(files).items()))
    output = next(b for b in leaf["blobs"] if b["role"] == "output")
    member = f"blobs/{output['sha256']}"

    code, out = verify(
        replaced(package, tmp_path / "x.zip", member, flip(files[member], 0))
    )

    assert code == 1
    assert f"run {run}" in out
    assert f"output metrics.json ({member}) is altered" in out
