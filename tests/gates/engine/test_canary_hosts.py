"""A gate's canary hosts (``hosts``) and the stage ``canary``: valid plans pass,
every bad list is refused with the path of the offending entry, and the verdict
does not depend on them."""

from __future__ import annotations

from typing import Any

import pytest

from gates.lib.engine import evaluate_plan, plan_problems
from tests.gates.engine.support import criterion, plan, results, values


def canary_plan(hosts: Any = None, stage: str = "canary") -> dict[str, Any]:
    doc = plan(criterion())
    doc["gates"][0]["stage"] = stage
    if hosts is not None:
        doc["gates"][0]["hosts"] = hosts
    return doc


def messages(doc: dict[str, Any]) -> list[str]:
    return [str(p) for p in plan_problems(doc)]


def test_a_canary_gate_with_hosts_is_valid() -> None:
    assert messages(canary_plan(["a1@lab-07", "a2@lab-08"])) == []


def test_any_stage_may_name_hosts() -> None:
    assert messages(canary_plan(["a1@lab-07"], stage="pilot")) == []


def test_the_canary_stage_needs_hosts() -> None:
    assert messages(canary_plan()) == ["gates[0].hosts: is required with stage canary"]


def test_a_gate_with_hosts_lists_canary_among_its_stages() -> None:
    assert messages(canary_plan(["a1@lab-07"], stage="prod")) == [
        "gates[0].stage: must be one of lab, pilot, canary, rollout"
    ]


@pytest.mark.parametrize(
    ("hosts", "expected"),
    [
        ("a1@lab-07", ["gates[0].hosts: must be a list of host names"]),
        ([], ["gates[0].hosts: must not be empty"]),
        (["a1@lab-07", ""], ["gates[0].hosts[1]: must be a non-empty string"]),
        ([7], ["gates[0].hosts[0]: must be a non-empty string"]),
        (["a1 lab"], ["gates[0].hosts[0]: must be a host name (letters, digits "
                      "and . _ @ -, as the pools page shows it)"]),
        (["a", "b", "a"], ["gates[0].hosts[2]: names the host 'a' again "
                           "(as gates[0].hosts[0])"]),
        ([f"h{i}" for i in range(101)], ["gates[0].hosts: must name at most 100 "
                                         "hosts"]),
    ],
)  # fmt: skip
def test_bad_hosts_are_named_by_path(hosts: Any, expected: list[str]) -> None:
    assert messages(canary_plan(hosts)) == expected


def test_hosts_do_not_change_the_verdict() -> None:
    runs = results(*values(176.2, 171.0, 178.9))
    plain = evaluate_plan(plan(criterion()), runs)[0]

    judged = evaluate_plan(canary_plan(["a1@lab-07"]), runs)[0]

    def judged_part(doc: dict[str, Any]) -> list[Any]:  # the seed is the plan's
        keys = ("verdict", "values", "estimate", "limit", "cv_pct")
        return [[c[k] for k in keys] for c in doc["criteria"]]

    assert judged["verdict"] == plain["verdict"] == "PASS"
    assert judged_part(judged) == judged_part(plain)
