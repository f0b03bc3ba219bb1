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

from gates.engine.documents import canonical_json
from gates.models import Evaluation
from tests.artifacts import ingest_support
from tests.gates import support as gates_support
from tests.gates.api import support as api_support
from tests.gates.api.support import FAILING, GATE, api, judged

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
