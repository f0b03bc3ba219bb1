"""The evaluation document is exactly the documented shape, in canonical JSON, and
the same inputs give the same bytes in any process: the seed comes from the
input digests and the criterion, never from the clock or the hash seed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from artifacts.lib.canonical import canonical_json
from gates.lib.engine import evaluate_plan, evaluation_bytes, load_json
from tests.gates.engine.support import criterion, evaluate, plan, results, values

ROOT = Path(__file__).resolve().parents[3]
CRITERION_KEYS = {
    "id",
    "verdict",
    "reason",
    "runs",
    "values",
    "estimate",
    "ci",
    "ci_level",
    "limit",
    "cv_pct",
    "more_runs_needed",
    "seed",
}


def spread_runs() -> dict[str, Any]:
    """Twelve runs, so the interval depends on the seeded resampling."""
    numbers = [170.0 + (i * 37 % 11) * 1.3 for i in range(12)]
    return results(*values(*numbers))


def test_the_document_has_exactly_the_contract_keys() -> None:
    stop = [{"id": "failed-run", "run_failed": True}]
    doc = evaluate(plan(criterion(), stop_loss=stop), spread_runs())

    assert set(doc) == {"schema", "gate", "verdict", "score_pct", "inputs",
                        "stop_loss", "criteria"}  # fmt: skip
    assert doc["schema"] == "reprogate.evaluation/v1"
    assert set(doc["inputs"]) == {"plan_sha256", "results_sha256"}
    assert set(doc["stop_loss"][0]) == {"id", "triggered", "runs", "reason"}
    assert set(doc["criteria"][0]) == CRITERION_KEYS
    assert doc["criteria"][0]["ci_level"] == 0.95


def test_inputs_are_the_digests_of_the_canonical_documents() -> None:
    plan_doc, results_doc = plan(criterion()), spread_runs()
    doc = evaluate(plan_doc, results_doc)

    assert (
        doc["inputs"]["plan_sha256"]
        == hashlib.sha256(
            json.dumps(plan_doc, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
    )
    assert (
        doc["inputs"]["results_sha256"]
        == hashlib.sha256(canonical_json(results_doc)).hexdigest()
    )


def test_the_seed_is_derived_from_the_digests_gate_and_criterion() -> None:
    doc = evaluate(plan(criterion()), spread_runs())
    text = "\n".join([doc["inputs"]["plan_sha256"], doc["inputs"]["results_sha256"],
                      "lab-validation", "ttft-p99-cold-c32"])  # fmt: skip
    expected = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")

    assert doc["criteria"][0]["seed"] == expected


def test_other_results_give_another_seed() -> None:
    one = evaluate(plan(criterion()), spread_runs())
    other_results = spread_runs()
    other_results["runs"][0]["metrics"][0]["value"] = 170.5
    two = evaluate(plan(criterion()), other_results)

    assert one["criteria"][0]["seed"] != two["criteria"][0]["seed"]


def test_canonical_bytes_sort_keys_without_whitespace_and_keep_unicode() -> None:
    assert (
        canonical_json({"b": 1, "a": [1.5, "µs"]}) == '{"a":[1.5,"µs"],"b":1}'.encode()
    )


def test_non_json_numbers_are_refused() -> None:
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
        try:
            load_json(text)
        except ValueError:
            continue
        raise AssertionError(f"{text} was accepted")


def test_the_same_inputs_give_the_same_bytes_in_this_process() -> None:
    plan_doc, results_doc = plan(criterion()), spread_runs()

    first = [evaluation_bytes(d) for d in evaluate_plan(plan_doc, results_doc)]
    second = [evaluation_bytes(d) for d in evaluate_plan(plan_doc, results_doc)]

    assert first == second


def test_the_same_inputs_give_the_same_bytes_across_processes(tmp_path: Path) -> None:
    plan_path, results_path = tmp_path / "plan.json", tmp_path / "results.json"
    plan_path.write_text(json.dumps(plan(criterion(), criterion(id="c2")), indent=2))
    results_path.write_text(json.dumps(spread_runs()))
    command = [sys.executable, "-m", "reprogate_cli.main", "gate", "evaluate",
               "--plan", str(plan_path), "--results", str(results_path)]  # fmt: skip

    outputs = []
    for hash_seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)

    assert outputs[0] == outputs[1] == outputs[2]
    in_process = [evaluation_bytes(d) + b"\n" for d in evaluate_plan(
        json.loads(plan_path.read_text()), json.loads(results_path.read_text())
    )]  # fmt: skip
    assert outputs[0] == b"".join(in_process)
    ci = json.loads(outputs[0].splitlines()[0])["criteria"][0]["ci"]
    assert ci[0] < ci[1]  # a real interval, not the all-equal shortcut


def test_the_callers_decimal_context_does_not_change_the_result() -> None:
    from decimal import ROUND_DOWN, Context, localcontext

    plan_doc, results_doc = plan(criterion(claim=0.3, band={"pct": 10})), spread_runs()
    expected = evaluation_bytes(evaluate(plan_doc, results_doc))
    with localcontext(Context(prec=3, rounding=ROUND_DOWN)):
        got = evaluation_bytes(evaluate(plan_doc, results_doc))

    assert got == expected
