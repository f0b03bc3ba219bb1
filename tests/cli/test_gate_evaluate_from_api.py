"""Acceptance: ``reprogate gate evaluate`` on the documents of
``GET /api/v1/evaluations/<id>/`` reproduces the stored evaluation byte for byte,
from the saved response (``--from``, ``--check``) and from the plan and results
extracted from it (``--plan --results --gate``), in a process without Django."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from artifacts.lib.canonical import canonical_json
from gates.lib.engine import evaluate_plan, evaluation_bytes
from gates.models import Evaluation
from reprogate_cli.main import main
from tests.artifacts import ingest_support
from tests.gates import support as gates_support
from tests.gates.api import support as api_support
from tests.gates.api.support import FAILING, GATE, api, judged
from tests.gates.engine import support as engine

pytestmark = pytest.mark.django_db

# The gates tests' fixtures (their conftest does not reach this folder).
rfp = ingest_support.upload_rfp
gate_bundle = gates_support.gate_bundle
gate_campaign = gates_support.gate_campaign
frozen_plan = gates_support.frozen_plan
evaluation = api_support.evaluation

ROOT = Path(__file__).resolve().parents[2]
NO_DJANGO = "import sys, runpy; sys.modules['django'] = None; "


def reprogate(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI in a fresh interpreter where importing Django fails."""
    code = NO_DJANGO + "sys.argv = ['reprogate', *sys.argv[1:]]; "
    code += "runpy.run_module('reprogate_cli.main', run_name='__main__')"
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-c", code, "gate", "evaluate", *args],
        cwd=ROOT, env=env, capture_output=True, check=False, timeout=120,
    )  # fmt: skip


def saved_response(evaluation: Evaluation, user: Any, folder: Path) -> Path:
    response = api(user).get(f"/api/v1/evaluations/{evaluation.public_id}/")
    assert response.status_code == 200
    path = folder / "response.json"
    path.write_bytes(response.content)
    return path


def test_from_the_saved_response_reproduces_the_stored_evaluation(
    evaluation: Evaluation, auditor: Any, tmp_path: Path
) -> None:
    response = saved_response(evaluation, auditor, tmp_path)

    done = reprogate("--from", str(response), "--check")

    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == evaluation.evaluation_document.encode("utf-8") + b"\n"


def test_from_the_extracted_documents_reproduces_the_stored_evaluation(
    frozen_plan: Any, gate_campaign: Any, buyer: Any, vendor_a: Any, tmp_path: Path
) -> None:
    failed = judged(frozen_plan, gate_campaign(3), buyer, FAILING)
    body = json.loads(saved_response(failed, vendor_a, tmp_path).read_bytes())
    plan, results = tmp_path / "plan.json", tmp_path / "results.json"
    plan.write_bytes(canonical_json(body["plan"]))
    results.write_text(json.dumps(body["results"], indent=2), encoding="utf-8")

    done = reprogate("--plan", str(plan), "--results", str(results), "--gate", GATE)

    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == failed.evaluation_document.encode("utf-8") + b"\n"
    assert json.loads(done.stdout)["verdict"] == "FAIL"


def test_check_fails_when_the_response_was_altered(
    evaluation: Evaluation, buyer: Any, tmp_path: Path
) -> None:
    path = saved_response(evaluation, buyer, tmp_path)
    body = json.loads(path.read_bytes())
    body["evaluation"]["verdict"] = "FAIL"  # claims a verdict the data do not give
    path.write_text(json.dumps(body), encoding="utf-8")

    done = reprogate("--from", str(path), "--check")

    assert done.returncode == 1
    assert done.stdout == evaluation.evaluation_document.encode("utf-8") + b"\n"
    assert b"differs from the one it holds (recomputed PASS, held FAIL)" in done.stderr


def test_check_fails_when_the_results_were_altered(
    evaluation: Evaluation, buyer: Any, tmp_path: Path
) -> None:
    path = saved_response(evaluation, buyer, tmp_path)
    body = json.loads(path.read_bytes())
    body["results"]["runs"][0]["metrics"][0]["value"] = 176.3
    path.write_text(json.dumps(body), encoding="utf-8")

    done = reprogate("--from", str(path), "--check")

    assert done.returncode == 1
    assert done.stdout != evaluation.evaluation_document.encode("utf-8") + b"\n"


# --- bad input (in process, no database) -------------------------------------------


def run_main(capsys: Any, *args: str) -> tuple[int, str, str]:
    status = main(["gate", "evaluate", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.fixture
def offline_response(tmp_path: Path) -> Path:
    """A response body made offline from the engine's test documents (the
    database is not used)."""
    plan_doc = engine.plan(engine.criterion())
    results_doc = engine.results(*engine.values(176.2, 171.0, 178.9))
    doc = evaluate_plan(plan_doc, results_doc)[0]
    path = tmp_path / "response.json"
    body = {"id": "x", "evaluation": doc, "plan": plan_doc, "results": results_doc}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def test_check_passes_offline_and_prints_one_line(
    offline_response: Path, capsys: Any
) -> None:
    status, out, err = run_main(capsys, "--from", str(offline_response), "--check")

    body = json.loads(offline_response.read_text())
    assert (status, err) == (0, "")
    assert out.encode() == evaluation_bytes(body["evaluation"]) + b"\n"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([1, 2], 'it needs the objects "evaluation", "plan" and "results"'),
        ({"evaluation": {}, "plan": {}}, 'it needs the objects "evaluation"'),
        ({"evaluation": {"gate": 3}, "plan": {}, "results": {}}, "not a gate name"),
    ],
)
def test_a_file_that_is_not_a_response_is_refused(
    tmp_path: Path, capsys: Any, body: Any, says: str
) -> None:
    path = tmp_path / "response.json"
    path.write_text(json.dumps(body), encoding="utf-8")

    status, out, err = run_main(capsys, "--from", str(path), "--check")

    assert (status, out) == (2, "")
    assert says in err
    assert len(err.splitlines()) == 1


def test_invalid_documents_in_the_response_are_named_with_their_paths(
    offline_response: Path, capsys: Any
) -> None:
    body = json.loads(offline_response.read_text())
    body["plan"]["gates"][0]["criteria"][0]["band"] = {"pct": 150}
    offline_response.write_text(json.dumps(body), encoding="utf-8")

    status, out, err = run_main(capsys, "--from", str(offline_response))

    assert (status, out) == (2, "")
    assert err.splitlines() == [
        f"reprogate: {offline_response}: plan is not a valid gate plan:",
        "  gates[0].criteria[0].band.pct: must be between 0 and 100",
    ]


def test_a_response_whose_plan_lacks_its_gate_is_refused(
    offline_response: Path, capsys: Any
) -> None:
    body = json.loads(offline_response.read_text())
    body["evaluation"]["gate"] = "prod"
    offline_response.write_text(json.dumps(body), encoding="utf-8")

    status, out, err = run_main(capsys, "--from", str(offline_response))

    assert (status, out) == (2, "")
    assert "its plan has no gate 'prod'" in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--gate", "pilot"],  # another gate than the response's
        ["--plan", "plan.json"],  # --from or --plan/--results, not both
    ],
)
def test_from_with_conflicting_options_is_refused(
    offline_response: Path, capsys: Any, extra: list[str]
) -> None:
    status, out, err = run_main(capsys, "--from", str(offline_response), *extra)

    assert (status, out) == (2, "")
    assert err.startswith("reprogate: ")


@pytest.mark.parametrize(
    "args", [[], ["--plan", "plan.json"], ["--plan", "p", "--results", "r", "--check"]]
)
def test_without_from_plan_and_results_are_needed(capsys: Any, args: list[str]) -> None:
    status, out, err = run_main(capsys, *args)

    assert (status, out) == (2, "")
    assert "needs --plan and --results, or else --from RESPONSE.json" in err


def test_an_unreadable_response_is_one_clear_line(tmp_path: Path, capsys: Any) -> None:
    missing = tmp_path / "nope.json"

    status, out, err = run_main(capsys, "--from", str(missing))

    assert (status, out) == (2, "")
    assert (
        err == f"reprogate: cannot read response {missing}: No such file or directory\n"
    )
