"""The requirements document's library: validation with path-named problems,
the canonical form, the diff and version specifications (no database)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from procurement.lib import requirements as lib
from procurement.models import ArtifactKind


def good() -> dict[str, Any]:
    return {
        "schema": lib.SCHEMA,
        "approaches": ["kv-cache-tiering", "nvme-of-appliance"],
        "workloads": [
            {
                "id": "chat-70b",
                "model_family": "decoder",
                "params_b": [65, 80],
                "context_tokens": 8192,
                "concurrency": [8, 64],
                "tenants": 4,
                "scenario_kinds": ["warmup", "steady", "interference", "failover"],
            }
        ],
        "accelerators": [
            {"vendors": ["nvidia", "hygon"], "per_node": 8, "sdk": {"cuda": ">=12.2"}}
        ],
        "fabric": {"transports": ["tcp", "rdma"], "qos": True},
        "environment": {"pinned": ["nvme_firmware", "kernel"]},
        "metrics": [
            {"metric": "ttft_ms", "stats": ["p99", "p99.9"]},
            {"metric": "cache_hit_rate", "series": True},
        ],
        "artifacts": {
            "mandatory": ["harness", "workload"],
            "bid_requires_bundle": True,
        },
    }


def test_validate_accepts_the_design_example() -> None:
    assert lib.validate(good()) == []


def test_validate_accepts_the_bare_schema() -> None:
    assert lib.validate({"schema": lib.SCHEMA}) == []


def _at(path: str, value: Any) -> dict[str, Any]:
    doc = good()
    *parents, last = path.split(".")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    node[int(last) if last.isdigit() else last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "code", "problem_path"),
    [
        ("schema", "reprogate.rfp-requirements/v2", "schema", "schema"),
        ("approaches", ["nvme-of-appliance", "tape"], "not_allowed", "approaches[1]"),
        ("workloads.0.id", "Chat 70B", "pattern", "workloads[0].id"),
        ("workloads.0.model_family", "gpt", "not_allowed", "workloads[0].model_family"),
        ("workloads.0.params_b", [80, 65], "range", "workloads[0].params_b"),
        ("workloads.0.params_b", [65], "type", "workloads[0].params_b"),
        ("workloads.0.context_tokens", 0, "range", "workloads[0].context_tokens"),
        ("workloads.0.context_tokens", "8192", "type", "workloads[0].context_tokens"),
        ("workloads.0.concurrency", [8, True], "type", "workloads[0].concurrency"),
        ("workloads.0.tenants", 10_001, "range", "workloads[0].tenants"),
        (
            "workloads.0.scenario_kinds",
            ["steady", "soak"],
            "not_allowed",
            "workloads[0].scenario_kinds[1]",
        ),
        ("workloads.0.weights", "x", "unknown_field", "workloads[0].weights"),
        ("accelerators.0.vendors", [], "required", "accelerators[0].vendors"),
        ("accelerators.0.per_node", 65, "range", "accelerators[0].per_node"),
        (
            "accelerators.0.sdk",
            {"cuda": "latest"},
            "pattern",
            "accelerators[0].sdk.cuda",
        ),
        ("fabric.transports", ["infiniband"], "not_allowed", "fabric.transports[0]"),
        ("fabric.qos", "yes", "type", "fabric.qos"),
        ("environment.pinned", ["bios"], "not_allowed", "environment.pinned[0]"),
        ("metrics.0.metric", "TTFT", "pattern", "metrics[0].metric"),
        ("metrics.0.stats", ["p99", "median"], "pattern", "metrics[0].stats[1]"),
        ("metrics.1.series", 1, "type", "metrics[1].series"),
        ("artifacts.mandatory", ["firmware"], "not_allowed", "artifacts.mandatory[0]"),
        (
            "artifacts.bid_requires_bundle",
            None,
            "type",
            "artifacts.bid_requires_bundle",
        ),
        ("fabric", [], "type", "fabric"),
        ("colour", "blue", "unknown_field", "colour"),
    ],
)
def test_validate_names_the_bad_field(
    path: str, value: Any, code: str, problem_path: str
) -> None:
    problems = lib.validate(_at(path, value))

    assert [(p.code, p.path) for p in problems] == [(code, problem_path)]


def test_validate_refuses_a_workload_id_and_a_metric_given_twice() -> None:
    doc = good()
    doc["workloads"].append(copy.deepcopy(doc["workloads"][0]))
    doc["metrics"].append({"metric": "ttft_ms"})

    problems = [(p.code, p.path) for p in lib.validate(doc)]

    assert problems == [
        ("duplicate", "workloads[1].id"),
        ("duplicate", "metrics[2].metric"),
    ]


def test_validate_caps_the_lists_and_the_size() -> None:
    many = good()
    many["workloads"] = [
        {"id": f"w{i}", "model_family": "decoder"} for i in range(lib.MAX_WORKLOADS + 1)
    ]
    huge = {"schema": lib.SCHEMA, "padding": "x" * lib.MAX_DOCUMENT_BYTES}

    assert [p.code for p in lib.validate(many)] == ["too_many"]
    assert [p.code for p in lib.validate(huge)] == ["too_large"]
    assert [p.code for p in lib.validate([good()])] == ["type"]


def test_canonical_orders_vocabularies_and_fills_every_section() -> None:
    canonical = lib.canonical(good())
    bare = lib.canonical({"schema": lib.SCHEMA})

    assert canonical["approaches"] == ["nvme-of-appliance", "kv-cache-tiering"]
    assert canonical["environment"]["pinned"] == ["kernel", "nvme_firmware"]
    assert canonical["metrics"][0] == {
        "metric": "ttft_ms",
        "stats": ["p99", "p99.9"],
        "series": False,
    }
    assert canonical["artifacts"]["mandatory"] == ["workload", "harness"]
    assert list(bare) == list(lib.SECTIONS)
    assert bare["fabric"] == {"transports": [], "qos": False}
    assert lib.canonical(canonical) == canonical


def test_diff_names_each_changed_path_readably() -> None:
    old = lib.canonical(good())
    new = copy.deepcopy(old)
    new["workloads"][0]["concurrency"] = [8, 128]
    new["workloads"].append(
        {"id": "rag-8b", "model_family": "encoder", "scenario_kinds": []}
    )
    new["fabric"]["transports"] = ["tcp"]
    del new["metrics"][1]

    changes = lib.diff(old, new)

    assert [c.path for c in changes] == [
        "workloads[chat-70b].concurrency",
        "workloads[rag-8b]",
        "fabric.transports",
        "metrics[cache_hit_rate]",
    ]
    assert str(changes[0]) == "workloads[chat-70b].concurrency: [8, 64] → [8, 128]"
    assert str(changes[2]) == "fabric.transports: tcp, rdma → tcp"
    assert str(changes[3]).startswith("metrics[cache_hit_rate]: removed")
    assert lib.diff(old, copy.deepcopy(old)) == []


def test_artifact_kinds_match_the_model_choices() -> None:
    assert tuple(ArtifactKind.values) == lib.ARTIFACT_KINDS
