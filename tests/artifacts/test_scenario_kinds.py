"""Scenario kinds in a bundle's manifest (``harness.scenarios[].kind``) and the
per-kind fields, every problem named by its path; the same check serves the
lab plan's scenarios at a campaign's start (tests/benchmarks)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from artifacts.lib.manifest import parse_manifest
from artifacts.lib.scenario_kinds import scenario_kind_problems
from tests.artifacts.test_manifest import manifest

BASE = {
    "name": "s",
    "cache": "cold",
    "concurrency": 1,
    "batch_size": 1,
    "duration_s": 10,
}


def _problems(**fields: Any) -> list[tuple[str, str]]:
    return scenario_kind_problems({**BASE, **fields}, "harness.scenarios[0]")


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"kind": "steady"},
        {
            "kind": "failover",
            "actions": [{"at_s": 3, "do": "error_window", "for_s": 2}],
        },
        {
            "kind": "failover",
            "actions": [
                {"at_s": 0, "do": "pause", "for_s": 1.5},
                {"at_s": 4, "do": "kill_tier"},
            ],
        },
        {
            "kind": "failover",
            "actions": [
                {
                    "at_s": 1,
                    "do": "bandwidth",
                    "for_s": 2,
                    "rate": "10mbit",
                    "endpoint": "kv-tier",
                }
            ],
        },
        {"kind": "warmup"},
        {"kind": "interference", "neighbour": "noisy-500"},
        {"kind": "rollback", "to": "driver 550.54"},
    ],
)
def test_each_kind_with_its_fields_is_accepted(fields: dict[str, Any]) -> None:
    assert _problems(**fields) == []


@pytest.mark.parametrize(
    ("fields", "where", "says"),
    [
        ({"kind": "chaos"}, ".kind", "Must be one of steady"),
        ({"kind": "failover"}, ".actions", "Is required for a failover"),
        ({"kind": "failover", "actions": []}, ".actions", "1 to 20"),
        (
            {"kind": "failover", "actions": [{"at_s": 1, "do": "x", "for_s": 1}]},
            ".actions[0].do",
            "Must be one of error_window",
        ),
        (
            {"kind": "failover", "actions": [{"at_s": -1, "do": "pause", "for_s": 1}]},
            ".actions[0].at_s",
            "seconds from the harness's start",
        ),
        (
            {"kind": "failover", "actions": [{"at_s": 1, "do": "pause", "for_s": 0}]},
            ".actions[0].for_s",
            "> 0",
        ),
        (
            {"kind": "failover", "actions": [{"at_s": 1, "do": "pause"}]},
            ".actions[0].for_s",
            "Is required for 'pause'",
        ),
        (
            {"kind": "failover", "actions": [{"at_s": 9, "do": "pause", "for_s": 2}]},
            ".actions[0]",
            "after the scenario's duration_s",
        ),
        (
            {
                "kind": "failover",
                "actions": [{"at_s": 1, "do": "bandwidth", "for_s": 1}],
            },
            ".actions[0].rate",
            "Is required for 'bandwidth'",
        ),
        (
            {
                "kind": "failover",
                "actions": [{"at_s": 1, "do": "bandwidth", "for_s": 1, "rate": "fast"}],
            },
            ".actions[0].rate",
            "tc's notation",
        ),
        (
            {
                "kind": "failover",
                "actions": [{"at_s": 1, "do": "pause", "for_s": 1, "cmd": "rm"}],
            },
            ".actions[0].cmd",
            "Is not a field of an action",
        ),
        ({"kind": "failover", "actions": ["pause"]}, ".actions[0]", "JSON object"),
        ({"kind": "warmup", "cache": "warm"}, ".cache", "must be 'cold'"),
        ({"kind": "interference"}, ".neighbour", "Is required"),
        (
            {"kind": "interference", "neighbour": "fio --rw=randread"},
            ".neighbour",
            "Must name a neighbour job",
        ),
        ({"kind": "rollback"}, ".to", "Is required for a rollback"),
        ({"kind": "rollback", "to": " x"}, ".to", "leading/trailing"),
        ({"kind": "steady", "to": "v1"}, ".to", "Is a field of a rollback scenario"),
        ({"actions": []}, ".actions", "Is a field of a failover scenario, not steady"),
    ],
)
def test_a_kind_s_bad_fields_are_named_by_path(
    fields: dict[str, Any], where: str, says: str
) -> None:
    found = _problems(**fields)

    assert any(
        path == "harness.scenarios[0]" + where and says in message
        for path, message in found
    ), found


def test_the_manifest_names_a_scenario_kind_problem_by_its_path() -> None:
    data = manifest()
    scenario = data["harness"]["scenarios"][0]
    scenario.update(
        kind="failover", actions=[{"at_s": 3, "do": "bandwidth", "for_s": 2}]
    )

    result = parse_manifest(json.dumps(data).encode())

    assert [(p.code, p.path) for p in result.problems] == [
        ("manifest_schema", "harness.scenarios[0].actions[0].rate")
    ]
    assert result.manifest is None


def test_a_manifest_s_kinds_are_typed() -> None:
    data = manifest()
    data["harness"]["scenarios"][0].update(kind="warmup")

    result = parse_manifest(json.dumps(data).encode())

    assert result.problems == ()
    assert result.manifest is not None
    assert result.manifest.harness.scenarios[0].kind == "warmup"


def test_a_vendor_cannot_mark_a_scenario_as_the_lab_s() -> None:
    data = manifest()
    data["harness"]["scenarios"][0]["added_by"] = "lab"

    result = parse_manifest(json.dumps(data).encode())

    assert [p.path for p in result.problems] == ["harness.scenarios[0].added_by"]
