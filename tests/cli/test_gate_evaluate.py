"""``reprogate gate evaluate``: one canonical evaluation line per gate, exit 0
whatever the verdicts; unreadable, non-JSON or invalid documents exit 2 with
every problem and its path on stderr; no Django needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gates.lib.engine import evaluate_plan, evaluation_bytes
from reprogate_cli.main import main
from tests.gates.engine.support import criterion, plan, results, values


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path: Path) -> tuple[Path, Path]:
    plan_doc = plan(criterion())
    plan_doc["gates"].append(
        dict(plan_doc["gates"][0], name="pilot", stage="pilot", criteria=[
            criterion(claim=150.0)
        ])
    )  # fmt: skip
    return (
        write(tmp_path / "plan.json", plan_doc),
        write(tmp_path / "results.json", results(*values(176.2, 171.0, 178.9))),
    )


def run_cli(capsys: Any, *args: str) -> tuple[int, str, str]:
    status = main(["gate", "evaluate", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_prints_one_canonical_line_per_gate(
    docs: tuple[Path, Path], capsys: Any
) -> None:
    plan_path, results_path = docs
    status, out, err = run_cli(
        capsys, "--plan", str(plan_path), "--results", str(results_path)
    )

    expected = evaluate_plan(
        json.loads(plan_path.read_text()), json.loads(results_path.read_text())
    )
    assert (status, err) == (0, "")
    assert out.encode() == b"".join(evaluation_bytes(d) + b"\n" for d in expected)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(d["gate"], d["verdict"]) for d in lines] == [
        ("lab-validation", "PASS"),
        ("pilot", "FAIL"),  # exit 0 all the same
    ]


def test_gate_option_evaluates_one_gate(docs: tuple[Path, Path], capsys: Any) -> None:
    plan_path, results_path = docs
    status, out, _ = run_cli(
        capsys,
        "--plan",
        str(plan_path),
        "--results",
        str(results_path),
        "--gate",
        "pilot",
    )

    assert status == 0
    assert [json.loads(line)["gate"] for line in out.splitlines()] == ["pilot"]


def test_an_unknown_gate_is_refused(docs: tuple[Path, Path], capsys: Any) -> None:
    plan_path, results_path = docs
    status, out, err = run_cli(
        capsys,
        "--plan",
        str(plan_path),
        "--results",
        str(results_path),
        "--gate",
        "prod",
    )

    assert (status, out) == (2, "")
    assert "has no gate 'prod' (its gates: lab-validation, pilot)" in err


def test_invalid_documents_print_every_problem_with_its_path(
    tmp_path: Path, capsys: Any
) -> None:
    bad_plan = plan(criterion(band={"pct": 150}, direction="up"))
    bad_results = results(*values(1.0))
    bad_results["runs"][0]["status"] = "done"
    plan_path = write(tmp_path / "plan.json", bad_plan)
    results_path = write(tmp_path / "results.json", bad_results)

    status, out, err = run_cli(
        capsys, "--plan", str(plan_path), "--results", str(results_path)
    )

    assert (status, out) == (2, "")
    assert err.splitlines() == [
        f"reprogate: {plan_path} is not a valid gate plan:",
        "  gates[0].criteria[0].direction: must be one of lower, higher",
        "  gates[0].criteria[0].band.pct: must be between 0 and 100",
        f"reprogate: {results_path} is not a valid results document:",
        "  runs[0].status: must be one of succeeded, failed, cancelled, pending",
    ]


def test_a_missing_file_is_one_clear_line(docs: tuple[Path, Path], capsys: Any) -> None:
    plan_path, _ = docs
    status, out, err = run_cli(
        capsys, "--plan", str(plan_path), "--results", "nope.json"
    )

    assert (status, out) == (2, "")
    assert (
        err == "reprogate: cannot read results nope.json: No such file or directory\n"
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "is not JSON: "),
        (b'{"schema": NaN}', "is not JSON: NaN is not a JSON number"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_json_is_one_clear_line(
    docs: tuple[Path, Path], tmp_path: Path, capsys: Any, content: bytes, says: str
) -> None:
    _, results_path = docs
    broken = tmp_path / "broken.json"
    broken.write_bytes(content)
    status, out, err = run_cli(
        capsys, "--plan", str(broken), "--results", str(results_path)
    )

    assert (status, out) == (2, "")
    assert err.startswith(f"reprogate: plan {broken} ")
    assert says in err
    assert len(err.splitlines()) == 1


def test_runs_without_django(docs: tuple[Path, Path]) -> None:
    plan_path, results_path = docs
    code = (
        "import sys; from reprogate_cli.main import main; status = main(sys.argv[1:]);"
        "assert 'django' not in sys.modules, 'django was imported'; sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "gate", "evaluate", "--plan", str(plan_path),
         "--results", str(results_path)],
        capture_output=True, text=True, check=False, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())},
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
