"""The anti-gaming fields of a manifest scenario: ``seed_sensitive`` and
``working_set_bytes``, optional, each problem named by its path."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from artifacts.lib.manifest import Scenario, parse_manifest
from tests.artifacts.corpus.build import good_files, good_manifest


def _with_scenario(**fields: Any) -> bytes:
    data = copy.deepcopy(good_manifest(good_files()))
    data["harness"]["scenarios"][0].update(fields)
    return json.dumps(data).encode()


def test_a_scenario_may_declare_seed_sensitive_and_its_working_set() -> None:
    result = parse_manifest(
        _with_scenario(seed_sensitive=True, working_set_bytes=5 << 40)
    )

    assert result.problems == ()
    assert result.manifest is not None
    assert result.manifest.harness.scenarios == (
        Scenario("cold-c32", "cold", 32, 8, 60.0, True, 5 << 40),
    )


def test_without_them_a_scenario_is_not_seed_sensitive_and_has_no_working_set() -> None:
    result = parse_manifest(_with_scenario())

    assert result.manifest is not None
    scenario = result.manifest.harness.scenarios[0]
    assert (scenario.seed_sensitive, scenario.working_set_bytes) == (False, None)


@pytest.mark.parametrize("value", ["true", 1, 0, None, [True]])
def test_seed_sensitive_must_be_a_boolean(value: Any) -> None:
    result = parse_manifest(_with_scenario(seed_sensitive=value))

    assert result.manifest is None
    assert [(p.code, p.path) for p in result.problems] == [
        ("manifest_schema", "harness.scenarios[0].seed_sensitive")
    ]
    assert "true or false" in result.problems[0].message


@pytest.mark.parametrize("value", [0, -1, 1.5, "1073741824", True, None])
def test_working_set_bytes_must_be_a_positive_integer(value: Any) -> None:
    result = parse_manifest(_with_scenario(working_set_bytes=value))

    assert result.manifest is None
    assert [(p.code, p.path) for p in result.problems] == [
        ("manifest_schema", "harness.scenarios[0].working_set_bytes")
    ]
