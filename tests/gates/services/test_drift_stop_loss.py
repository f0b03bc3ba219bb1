"""From capture to verdict through the services: the agent reports a host with
no GPU for a bundle that declares eight; the runner API's ``running`` step grades
the drift with the RFP's drift policy; the gate's stop-loss
(``drift_at_least: major``) halts the evaluation. The RFP's own policy can make
the same difference harmless."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.environment import capture_environment
from benchmarks.models import Campaign, Run
from benchmarks.services.host_tokens import host_token_issue
from benchmarks.services.remote import agent_claim, agent_running
from gates.models import GatePlan
from gates.services.evaluations import gate_evaluate
from procurement.lib.drift_policy import SCHEMA
from procurement.models import Rfp
from tests.benchmarks.environment.fakehost import TOOLS, FakeTools, fake_host
from tests.benchmarks.runner.support import finish
from tests.gates.support import PASS

pytestmark = pytest.mark.django_db

MANIFEST = (
    Path(__file__).parents[2] / "benchmarks/environment/manifests/acme-flash.json"
)
WORKER = "agent@lab-07"


def _run_on_a_host_without_gpus(campaign: Campaign, tmp_path: Path) -> list[Run]:
    """Claim and start each cold-c1 run as an agent on a GPU-less host, then
    finish it at a passing value."""
    token = host_token_issue(pool=campaign.pool, name="lab-07", actor=None).token
    tools = FakeTools({k: v for k, v in TOOLS.items() if "nvidia" not in k})
    environment = capture_environment(
        fake_host(tmp_path / "host", gpus=0), runner=tools
    )
    declared = json.loads(MANIFEST.read_text())  # eight H100s
    runs = list(campaign.runs.filter(scenario_name="cold-c1").order_by("repetition"))
    for run, value in zip(runs, PASS, strict=True):
        claimed = agent_claim(token=token, run=run, attempt=1, worker_name=WORKER)
        assert claimed is not None
        agent_running(
            token=token,
            run=claimed,
            attempt=1,
            environment=environment,
            declared_environment=declared,
            cache_dropped=False,
        )
        finish(run, metrics=[{"name": "ttft_ms", "stat": "p99", "value": value}])
    return [Run.objects.get(pk=r.pk) for r in runs]


def test_eight_gpus_declared_none_found_halts_the_gate(
    frozen_plan: GatePlan, gate_campaign: Any, buyer: Any, tmp_path: Path
) -> None:
    campaign = gate_campaign(3)
    runs = _run_on_a_host_without_gpus(campaign, tmp_path)

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    count = next(d for d in runs[0].drift if d["field"] == "hosts.gpu.gpu.count")
    assert (count["declared"], count["captured"], count["severity"]) == (
        "8", "0", "major",
    )  # fmt: skip
    assert (count["rule"], count["policy"]) == ("accelerator.count", "default")
    assert (evaluation.verdict, evaluation.max_drift) == ("HALTED", "major")
    assert evaluation.stop_loss_triggered


def test_the_rfps_policy_grades_the_same_difference(
    rfp: Rfp, frozen_plan: GatePlan, gate_campaign: Any, buyer: Any, tmp_path: Path
) -> None:
    policy = {"schema": SCHEMA, "rules": {"accelerator.count": "info",
                                          "accelerator.model": "info"}}  # fmt: skip
    Rfp.objects.filter(pk=rfp.pk).update(drift_policy=policy)
    campaign = gate_campaign(3)
    runs = _run_on_a_host_without_gpus(campaign, tmp_path)

    evaluation = gate_evaluate(
        plan=frozen_plan, gate="lab-validation", campaign=campaign, actor=buyer
    )

    count = next(d for d in runs[0].drift if d["field"] == "hosts.gpu.gpu.count")
    assert (count["severity"], count["policy"]) == ("info", rfp.reference)
    assert {d["severity"] for d in runs[0].drift} == {"info"}
    assert (evaluation.verdict, evaluation.max_drift) == ("PASS", "none")
