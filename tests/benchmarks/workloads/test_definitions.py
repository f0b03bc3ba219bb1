"""Workload definitions: the example bundles' workload files load, and a bad
one is refused with every reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib.workloads import ProfileError, workload_from_dict, workload_load

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
WORKLOADS = sorted(EXAMPLES.glob("*/workloads/*.json"))


def chat() -> dict[str, Any]:
    return json.loads(
        (EXAMPLES / "acme-flash/workloads/llama70b-chat.json").read_text()
    )


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_example_workloads_load(path: Path) -> None:
    workload = workload_load(path)

    assert workload.name == path.stem
    assert all([workload.model_family, workload.model_size, workload.tokenizer])
    assert workload.profile(concurrency=8, count=10).count == 10


def test_workload_reads_model_and_profile() -> None:
    workload = workload_from_dict(chat())

    assert (workload.model_family, workload.model_size) == ("llama-3.1", "70B")
    assert workload.tokenizer == "meta-llama/Llama-3.1-70B-Instruct"
    assert workload.seed == 20261129
    assert workload.profile(concurrency=32).rate_rps == pytest.approx(32 * 0.75)


def test_bad_workload_lists_every_problem() -> None:
    data = chat()
    del data["model"]["family"]
    data["requests"]["seed"] = -1
    data["requests"]["prompt_tokens"]["distribution"] = "pareto"

    with pytest.raises(ProfileError) as caught:
        workload_from_dict(data)

    problems = caught.value.problems
    assert "model.family: required text of at most 200 characters" in problems
    assert "requests.seed: required, a non-negative integer" in problems
    assert any(p.startswith("prompt_tokens.distribution") for p in problems)


def test_workload_that_is_not_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "w.json").write_text("{nope")

    with pytest.raises(ProfileError, match="not JSON"):
        workload_load(tmp_path / "w.json")
