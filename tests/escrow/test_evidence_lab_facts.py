"""The lab's facts in the evidence packages of an evaluation and a campaign:
each run's ``scenario.json`` (what its scenario driver did and measured) and
``spans.jsonl`` are runner artefacts of its deposit, named by the host-signed
statement, and ``reprogate evidence verify`` names an altered one; the
statement's seed and anti-gaming checks are checked and said, and an evaluation's
results.json must name the flagged checks its runs' hosts signed. An evaluation
held to the buyer's baseline carries the baseline runs' deposits too."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.lib.evidence.reader import EvidenceReport
from benchmarks.lib.lab.checks import check
from benchmarks.lib.lab.scenario_document import encode
from benchmarks.lib.lab.spans import encode_spans
from benchmarks.lib.signing import (
    host_key_load_or_create,
    run_statement,
    run_statement_sign,
    run_subjects,
)
from benchmarks.models import Campaign, Run
from benchmarks.services.host_tokens import host_token_issue
from gates.lib.engine.evidence import check_run_checks
from gates.models import Evaluation, GatePlan
from procurement.models import Rfp
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401 (fixture rfp)
from tests.benchmarks.lab.test_spans import request_tree
from tests.benchmarks.runner.conftest import sent_tasks  # noqa: F401 (fixture)
from tests.benchmarks.runner.support import (  # noqa: F401
    make_pool,
    runner_work_dir,
    start,
)
from tests.benchmarks.runner_api.conftest import agent_client
from tests.benchmarks.runner_api.support import (
    claim,
    finish,
    hello,
    put_output,
    running,
)
from tests.benchmarks.runner_api.test_artefacts import put_artefact
from tests.benchmarks.test_host_signing import _checked, _run_deposit, _sha
from tests.escrow.package_support import flip, members, replaced
from tests.escrow.test_evidence_evaluation import download_to, verify
from tests.gates.baseline_support import baseline_bundle
from tests.gates.engine.support import criterion
from tests.gates.support import (  # noqa: F401 (fixtures)
    CRITERION,
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
    make_frozen_plan,
    plan_document,
)

pytestmark = pytest.mark.django_db

SPANS = encode_spans(request_tree())
SCENARIO = encode(
    "failover",
    [{"name": "failover_recovery_s", "stat": "mean", "value": 1.25, "unit": "s"}],
    [],
    {"phases": [{"name": "main", "duration_s": 3.0}],
     "actions": [{"verb": "kill_path", "at_s": 1.0, "exit_code": 0}]},
)  # fmt: skip
METRICS = (
    b'{"metrics": [{"name": "ttft_ms", "stat": "p99", "value": 100, "unit": "ms"}]}'
)
SENTENCE = "The declared outputs are identical with another seed."


def checks(flagged: bool) -> list[dict[str, Any]]:
    return [
        check("seed_ignored", flagged=flagged, detail=SENTENCE if flagged else "ok"),
        check("cold_cache_unproven", flagged=False, detail="Proven."),
        check("working_set_fits_in_memory", flagged=False, detail="Not declared."),
    ]


@pytest.fixture(autouse=True)
def _uploads_in_the_tests_var_dir(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path / "var"


def run_on_an_agent(campaign: Campaign, host: str = "lab-07") -> list[Run]:
    """Every run of the campaign on one agent, each uploading its scenario.json
    and spans.jsonl; the first run's seed check is flagged."""
    agent = agent_client(
        host_token_issue(pool=campaign.pool, name=host, actor=None).raw
    )
    assert hello(agent).status_code == 200
    done = []
    for index, run in enumerate(campaign.runs.order_by("position")):
        assert claim(agent, run).status_code == 200
        assert running(agent, run).status_code == 200
        assert put_output(agent, run, "metrics.json", METRICS).status_code == 201
        artefacts = {"scenario.json": SCENARIO, "spans.jsonl": SPANS}
        for name, data in artefacts.items():
            assert put_artefact(agent, run, name, data).status_code == 201
        answer = finish(
            agent, run, outputs={"metrics.json": METRICS}, artefacts=artefacts,
            checks=checks(flagged=index == 0),
        )  # fmt: skip
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
    runs = run_on_an_agent(campaign)
    return evaluate(frozen_plan, PASS, campaign=campaign), runs


def run_leaves(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    evidence = json.loads(files["evidence.json"])
    leaves = [json.loads(base64.b64decode(d["leaf"])) for d in evidence["deposits"]]
    return {leaf["run"]: leaf for leaf in leaves if leaf["kind"] == "run_output"}


def test_the_evaluation_package_carries_and_checks_the_lab_facts(
    judged: tuple[Evaluation, list[Run]], buyer: Any, client_for: Any, tmp_path: Path
) -> None:
    evaluation, runs = judged
    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")
    files = members(package)
    leaves = run_leaves(files)

    assert set(leaves) == {str(r.public_id) for r in runs}
    for leaf in leaves.values():
        named = {b["path"]: b["sha256"] for b in leaf["blobs"]}
        assert files[f"blobs/{named['runner/scenario.json']}"] == SCENARIO
        assert files[f"blobs/{named['runner/spans.jsonl']}"] == SPANS
    flagged = json.loads(evaluation.results_document)["runs"]
    assert [r.get("checks") for r in flagged].count(["seed_ignored"]) == 1
    code, out = verify(package)
    assert code == 0, out
    assert out.count("flagged: seed_ignored") == 1
    assert out.count("3 anti-gaming checks (none flagged)") == len(runs) - 1
    assert f"seed {runs[0].seed}" in out
    assert (
        f"results.json names the flagged anti-gaming checks of its {len(runs)} runs"
        in out
    )

    leaf = leaves[str(runs[0].public_id)]
    member = "blobs/" + next(
        b["sha256"] for b in leaf["blobs"] if b["path"] == "runner/scenario.json"
    )
    code, out = verify(replaced(package, tmp_path / "x.zip", member, flip(SCENARIO, 5)))
    assert code == 1
    assert f"runner artefact scenario.json ({member}) is altered" in out


def test_the_campaign_package_carries_the_artefacts_and_checks(
    judged: tuple[Evaluation, list[Run]], buyer: Any, client_for: Any, tmp_path: Path
) -> None:
    campaign = judged[0].campaign
    response = client_for(buyer).get(
        f"/api/v1/campaigns/{campaign.public_id}/evidence/"
    )
    assert response.status_code == 200, response.content
    package = tmp_path / "c.zip"
    package.write_bytes(b"".join(response.streaming_content))

    leaves = run_leaves(members(package))
    code, out = verify(package)

    assert len(leaves) == len(judged[1])
    assert all(
        {"runner/scenario.json", "runner/spans.jsonl"}
        <= {b["path"] for b in leaf["blobs"]}
        for leaf in leaves.values()
    )
    assert code == 0, out
    assert out.count("flagged: seed_ignored") == 1


def test_results_naming_other_flags_than_the_host_signed_are_named(
    tmp_path: Path,
) -> None:
    report = EvidenceReport(tmp_path)
    results = {
        "runs": [
            {"id": "r-1", "checks": []},
            {"id": "r-2"},
            {"id": "r-3", "checks": ["seed_ignored"]},
            {"id": "not-in-the-package", "checks": ["seed_ignored"]},
            "junk",
        ]
    }
    signed = {
        "r-1": {"checks": checks(flagged=True)},
        "r-2": {"checks": checks(flagged=False)},
        "r-3": {"checks": checks(flagged=True)},
    }

    check_run_checks(results, signed, "evaluation e (leaf 1)", report)

    assert [c.message for c in report.failures] == [
        "results.json says run r-1 has the flagged checks []; its host signed "
        '["seed_ignored"]'
    ]


def _resigned(tmp_path: Path, **predicate: Any) -> EvidenceReport:
    """The offline run check of a deposit whose statement (signed by its host
    key) has this seed and these checks."""
    blobs, record = _run_deposit(tmp_path)
    key = host_key_load_or_create(tmp_path / "key")
    document = run_statement(
        subjects=run_subjects(
            outputs={"a.json": _sha(b"out")},
            environment_sha256=_sha(b"env"),
            artefacts={"telemetry": _sha(b"telemetry")},
        ),
        run="r-1", attempt=1, campaign="c-1", scenario={}, repetition=1,
        exit_code=0, stop_reason="exited", started="", ended="", host="agent@lab",
        **predicate,
    )  # fmt: skip
    envelope = run_statement_sign(document, key)
    statement = next(b for b in record["blobs"] if b["path"] == "statement.json")
    del blobs[statement["sha256"]]
    statement.update(sha256=_sha(envelope), size=len(envelope))
    blobs[_sha(envelope)] = envelope
    return _checked(tmp_path, blobs, record)


def test_the_statement_s_seed_and_checks_are_said_when_well_formed(
    tmp_path: Path,
) -> None:
    report = _resigned(tmp_path, seed=7, checks=checks(flagged=True))

    assert report.ok, [c.message for c in report.failures]
    assert report.checks[-1].message.endswith(
        "; seed 7, 3 anti-gaming checks (flagged: seed_ignored)"
    )


@pytest.mark.parametrize(
    ("predicate", "named"),
    [
        ({"seed": -1}, "statement.json: its seed -1 is not one the lab issues"),
        ({"seed": True}, "statement.json: its seed True is not one the lab issues"),
        ({"seed": 1 << 63}, "is not one the lab issues"),
        ({"checks": ["junk"]}, "statement.json: its checks[0]: must be an object of"),
        (
            {"checks": [*checks(flagged=False), check("seed_ignored", flagged=True,
                                                      detail="again")]},
            "statement.json: its checks[3].id: must be one of",
        ),
    ],
)  # fmt: skip
def test_a_malformed_seed_or_checks_in_a_statement_is_named(
    tmp_path: Path, predicate: dict[str, Any], named: str
) -> None:
    report = _resigned(tmp_path, **predicate)

    messages = [c.message for c in report.failures]
    assert any(named in m for m in messages), messages


RELATIVE = criterion(
    id="ttft-vs-current", scenario="cold-c1", claim=None, band=None,
    baseline={"scenario": "warm-c1", "pct": 10},
)  # fmt: skip


def test_an_evaluation_held_to_the_baseline_carries_the_baseline_runs(
    rfp: Rfp, vendor_a_org: Any, buyer: Any, labops: Any, gate_campaign: Any,  # noqa: F811
    evaluate: Any, sent_tasks: Any, runner_work_dir: Path,  # noqa: F811
    client_for: Any, tmp_path: Path,
) -> None:  # fmt: skip
    bundle = baseline_bundle(tmp_path / "base", rfp, buyer)
    lab = rfp.buyer_organisation.engages.get(kind=Organisation.Kind.LAB)
    baseline = start(bundle, make_pool(lab, name="baseline"), labops, repetitions=3)
    Campaign.objects.filter(pk=baseline.pk).update(role=Campaign.Role.BASELINE)
    base_runs = run_on_an_agent(baseline, host="lab-base")
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE, CRITERION]),
    )  # fmt: skip
    campaign = gate_campaign(3)
    vendor_runs = run_on_an_agent(campaign)
    evaluation = evaluate(plan, PASS, campaign=campaign)

    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")
    leaves = run_leaves(members(package))
    code, out = verify(package)

    results = json.loads(evaluation.results_document)["runs"]
    in_results = {r["id"] for r in results if r.get("role") == "baseline"}
    assert in_results == {str(r.public_id) for r in base_runs}
    assert set(leaves) == in_results | {str(r.public_id) for r in vendor_runs}
    assert code == 0, out
    assert f"of its {len(results)} runs in the package" in out
