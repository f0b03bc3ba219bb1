"""The lab's facts in the signed benchmark report: each run's scenario kind and,
for the kinds that are not steady, what the runner did (the phases and actions of
its ``scenario.json`` record) with the scenario metrics it measured; each run's
seed and anti-gaming checks (a flagged one named with its sentence); the canary
hosts the gate's runs were bound to; and a baseline criterion's median and runs.
Runs are made with the test factories (no sandbox); the PDF is read back with
``pdftotext``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.storage.blobs import blob_record, blob_write
from benchmarks.lib.lab.artefacts import SCENARIO
from benchmarks.lib.lab.checks import check
from benchmarks.lib.lab.scenario_document import encode
from benchmarks.lib.lab.scenario_summary import scenario_did
from benchmarks.models import Campaign, Run, RunArtefact
from gates.models import Evaluation
from gates.selectors.report_content import check_lines, evaluation_report_context
from gates.services.report_pdf import render_html, render_pdf
from procurement.models import Rfp
from tests.gates.baseline_support import run_baseline
from tests.gates.engine.support import criterion
from tests.gates.support import CRITERION, PASS, make_frozen_plan, plan_document
from tests.reports.test_render import flat, pdftotext

pytestmark = pytest.mark.django_db

FINGERPRINT = "ef" * 32
CANARY = "w1@canary-07"
SEED_SENTENCE = (
    "The declared outputs are identical with another seed: the harness ignores "
    "REPROGATE_SEED."
)

# One scenario document per kind, as the agent's drivers write them.
DOCUMENTS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "failover": (
        [{"name": "failover_recovery_s", "stat": "mean", "value": 1.25, "unit": "s"}],
        {
            "phases": [{"name": "main", "started_s": 0.0, "duration_s": 30.5}],
            "actions": [
                {
                    "hook": "fault",
                    "verb": "kill_path",
                    "argument": {},
                    "at_s": 10.0,
                    "exit_code": 0,
                    "output": "",
                    "duration_s": 0.2,
                },
            ],
        },
    ),
    "warmup": (
        [{"name": "warmup_s", "stat": "mean", "value": 4.5, "unit": "s"}],
        {
            "phases": [{"name": "cold", "duration_s": 20.0}],
            "page_cache": {"dropped": True, "before_bytes": 9, "after_bytes": 1},
            "notes": [],
        },
    ),
    "interference": (
        [{"name": "fairness_jain", "stat": "mean", "value": 0.875, "unit": "ratio"}],
        {
            "phases": [
                {"name": "alone", "duration_s": 10.0},
                {"name": "main", "duration_s": 30.0},
            ],
            "neighbour": {"name": "noisy-reads", "job": {"rw": "randread"}},
            "actions": [
                {"at_s": 10.0, "do": "neighbour_start"},
                {"at_s": 40.0, "do": "neighbour_stop"},
            ],
        },
    ),
    "rollback": (
        [
            {
                "name": "rollback_capture_changes",
                "stat": "total",
                "value": 2.0,
                "unit": "count",
            }
        ],
        {
            "to": "v1.4.2",
            "phases": [
                {"name": "phase-a", "duration_s": 12.0},
                {"name": "phase-b", "duration_s": 11.0},
            ],
            "actions": [{"at_s": 12.0, "verb": "rollback", "exit_code": 0}],
            "capture": {
                "difference": [
                    {"path": "packages[vllm].version", "before": "2", "after": "1"},
                    {"path": "kernel.release", "before": "6.1", "after": "6.2"},
                ]
            },
        },
    ),
}


def put_scenario(run: Run, kind: str) -> None:
    """Give the run the kind and its ``scenario.json`` (as the runner uploads it)."""
    metrics, record = DOCUMENTS[kind]
    data = encode(kind, metrics, [], record)
    blob = blob_record(blob_write(data, hashlib.sha256(data).hexdigest(), len(data)))
    RunArtefact.objects.create(run=run, attempt=run.attempt, name=SCENARIO, blob=blob)
    Run.objects.filter(pk=run.pk).update(scenario={**run.scenario, "kind": kind})


def flag_seed(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(
        seed=424242,
        checks=[
            check("seed_ignored", flagged=True, detail=SEED_SENTENCE),
            check("cold_cache_unproven", flagged=False, detail="Proven."),
            check("working_set_fits_in_memory", flagged=False, detail="n/a"),
        ],
    )


@pytest.fixture
def lab_campaign(gate_campaign: Any) -> Campaign:
    """Three cold-c1 runs of kinds failover, warmup and interference (the first
    with a flagged seed check) and a rollback warm-c1 run, bound to a canary."""
    campaign: Campaign = gate_campaign(3)
    Campaign.objects.filter(pk=campaign.pk).update(hosts=[CANARY])
    cold = list(campaign.runs.filter(scenario_name="cold-c1").order_by("repetition"))
    for run, kind in zip(cold, ("failover", "warmup", "interference"), strict=True):
        put_scenario(run, kind)
    put_scenario(campaign.runs.get(scenario_name="warm-c1", repetition=1), "rollback")
    flag_seed(cold[0])
    return campaign


@pytest.fixture
def judged(lab_campaign: Campaign, evaluate: Any, frozen_plan: Any) -> Evaluation:
    return evaluate(frozen_plan, PASS, campaign=lab_campaign)


def test_the_pdf_names_each_kind_its_metrics_and_the_flagged_check(
    judged: Evaluation, tmp_path: Path
) -> None:
    context = evaluation_report_context(
        judged, signer_fingerprint=FINGERPRINT, charts=False
    )

    pdf = render_pdf("gates/reports/evaluation.html", context)
    text = flat(pdftotext(pdf, tmp_path))

    assert "How the lab ran it" in text
    for kind in ("failover", "warmup", "interference", "rollback"):
        assert kind in text, kind
    for name in (
        "failover_recovery_s mean = 1.25 s",
        "warmup_s mean = 4.5 s",
        "fairness_jain mean = 0.875 ratio",
        "rollback_capture_changes total = 2.0 count",
    ):
        assert name in text, name
    assert "kill_path at 10.0 s" in text  # the failover's action
    assert "neighbour_start at 10.0 s" in text
    assert "Neighbour: noisy-reads" in text
    assert "Page cache dropped before the start" in text
    assert "Rolled back to v1.4.2" in text
    changed = "Capture changed in 2 field(s): packages[vllm].version, kernel.release"
    assert changed in text
    # the flagged check: its id, its label and its sentence
    assert "seed_ignored" in text
    assert f"seed_ignored Harness ignores the lab's seed: {SEED_SENTENCE}" in text
    assert "cold_cache_unproven" not in text  # not flagged: only counted
    assert "424242" in text  # the seed
    assert CANARY in text  # the canary host the gate ran on


def test_the_context_reads_the_kind_seed_and_checks_of_every_run(
    judged: Evaluation,
) -> None:
    context = evaluation_report_context(
        judged, signer_fingerprint=FINGERPRINT, charts=False
    )

    by_run = {(r.scenario, r.repetition): r for r in context["runs"]}
    assert by_run[("cold-c1", 1)].kind == "failover"
    assert by_run[("cold-c1", 2)].kind == "warmup"
    assert by_run[("warm-c1", 1)].kind == "rollback"
    assert by_run[("warm-c1", 2)].kind == "steady"
    assert by_run[("warm-c1", 2)].did == []
    assert by_run[("warm-c1", 2)].scenario_metrics == []
    assert by_run[("cold-c1", 1)].seed == "424242"
    assert [c.id for c in by_run[("cold-c1", 1)].flagged] == ["seed_ignored"]
    assert by_run[("cold-c1", 2)].flagged == []
    assert [r.id for r in context["flagged_runs"]] == [by_run[("cold-c1", 1)].id]
    assert context["hosts"] == [CANARY]
    assert ("lab-facts", "How the lab ran it") in context["toc"]


def test_a_scenario_document_of_an_older_attempt_is_not_reported(
    judged: Evaluation,
) -> None:
    run = judged.campaign.runs.get(scenario_name="cold-c1", repetition=2)
    Run.objects.filter(pk=run.pk).update(attempt=2)

    context = evaluation_report_context(
        judged, signer_fingerprint=FINGERPRINT, charts=False
    )

    line = next(r for r in context["runs"] if r.id == str(run.public_id))
    assert line.kind == "warmup"  # the scenario still names its kind
    assert line.scenario_metrics == []  # but attempt 1's measurements are gone


def test_a_campaign_on_the_whole_pool_says_so_and_vendor_text_is_escaped(
    passed: Evaluation,
) -> None:
    run = passed.campaign.runs.get(scenario_name="cold-c1", repetition=1)
    Run.objects.filter(pk=run.pk).update(
        checks=[check("seed_ignored", flagged=True, detail="<b>same</b> outputs")]
    )
    context = evaluation_report_context(
        passed, signer_fingerprint=FINGERPRINT, charts=False
    )

    html = render_html("gates/reports/evaluation.html", context)

    assert context["hosts"] == []
    assert f"went to any host of the pool {passed.campaign.pool.name}" in html
    assert "&lt;b&gt;same&lt;/b&gt; outputs" in html
    assert "<b>same</b>" not in html


def test_the_record_is_said_in_a_few_lines_and_junk_is_left_out() -> None:
    actions = [{"do": f"step{i}", "at_s": float(i)} for i in range(11)]
    said = scenario_did(
        {
            "phases": [{"name": "main", "duration_s": 3.0}, "junk"],
            "actions": [*actions, "junk", {"verb": "fault", "exit_code": 2}],
            "capture": {"difference": []},
            "notes": ["No point before the first fault."],
        }
    )

    assert said[0] == "Phases: main (3.0 s)"
    assert said[1].startswith("Actions: step0 at 0.0 s, step1 at 1.0 s")
    assert said[1].endswith("step7 at 7.0 s, and 4 more")  # 12 actions, 8 shown
    assert said[2] == "Capture unchanged"
    assert said[3] == "No point before the first fault."
    assert scenario_did({}) == []
    assert [c.id for c in check_lines([{"id": "x", "flagged": True}, 3])] == ["x"]
    assert check_lines("junk") == []


RELATIVE = criterion(
    id="ttft-vs-current", scenario="cold-c1", claim=None, band=None,
    baseline={"scenario": "warm-c1", "pct": 10},
)  # fmt: skip


def test_a_baseline_criterion_shows_the_baseline_median_and_runs(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, labops: Any,
    evaluate: Any, tmp_path: Path,
) -> None:  # fmt: skip
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE, CRITERION]),
    )  # fmt: skip
    baseline = run_baseline(
        tmp_path / "base", rfp, buyer, labops, {"warm-c1": [200.0, 190.0, 210.0]}
    )
    evaluation = evaluate(plan, PASS)
    context = evaluation_report_context(
        evaluation, signer_fingerprint=FINGERPRINT, charts=False
    )

    pdf = render_pdf("gates/reports/evaluation.html", context)
    text = flat(pdftotext(pdf, tmp_path))

    [line] = context["baselines"]
    assert (line.criterion, line.scenario, line.median, line.unit) == (
        "ttft-vs-current", "warm-c1", "200.0", "ms",
    )  # fmt: skip
    measured = baseline.runs.filter(scenario_name="warm-c1")
    assert sorted(line.runs) == sorted(str(r.public_id) for r in measured)
    assert "The buyer's baseline" in text
    assert "200.0 ms" in text
    assert "3 runs" in text
    assert (
        json.loads(evaluation.evaluation_document)["criteria"][0]["baseline"]["median"]
        == 200.0
    )
