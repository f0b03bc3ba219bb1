"""The requirements' vocabulary in a bundle: ``approach`` and ``workloads`` in
manifest.json, ``accelerators``, ``fabric`` and ``pinned`` in the environment
manifest; optional, and checked at ingest with every problem named by its path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.lib import bundle_verify
from artifacts.lib.manifest import parse_manifest
from artifacts.lib.manifest.vocabulary import (
    environment_declarations,
    environment_problems,
)
from artifacts.models import Bundle
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, good_manifest, manifest_bytes
from tests.artifacts.ingest_support import (
    build_bundle,
    ingest,
    open_rfp,
    register_corpus_keys,
)

WORKLOAD = {
    "id": "chat-70b",
    "model_family": "decoder",
    "params_b": 70,
    "context_tokens": 8192,
    "concurrency": [8, 32, 64],
    "tenants": 4,
    "scenario_kinds": ["steady", "warmup"],
}
ENVIRONMENT = {
    "os": "Ubuntu 24.04",
    "accelerators": [{"vendor": "nvidia", "per_node": 8, "sdk": {"cuda": "12.4"}}],
    "fabric": {"transport": "rdma", "qos": True},
    "pinned": {"kernel": "5.15.0-125-generic", "gpu_driver": "550.127.05"},
}


def _problems(**changes: Any) -> list[tuple[str, str | None]]:
    data = copy.deepcopy(good_manifest(good_files(), **changes))
    result = parse_manifest(json.dumps(data).encode())
    return [(p.code, p.path) for p in result.problems]


def test_a_manifest_without_the_vocabulary_stays_valid() -> None:
    result = parse_manifest(manifest_bytes(good_manifest(good_files())))

    assert result.ok
    assert result.manifest is not None
    assert (result.manifest.approach, result.manifest.workloads) == (None, ())


def test_approach_and_workloads_parse_into_typed_values() -> None:
    data = good_manifest(
        good_files(), approach="kv-cache-tiering", workloads=[WORKLOAD]
    )

    manifest = parse_manifest(manifest_bytes(data)).manifest

    assert manifest is not None
    assert manifest.approach == "kv-cache-tiering"
    assert manifest.workloads[0].concurrency == (8, 32, 64)
    assert manifest.workloads[0].scenario_kinds == ("steady", "warmup")


def _w(**changes: Any) -> dict[str, Any]:
    return {"workloads": [{**WORKLOAD, **changes}]}


NO_ID = {k: v for k, v in WORKLOAD.items() if k != "id"}


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"approach": "all-flash"}, "approach"),
        ({"workloads": []}, "workloads"),
        (_w(model_family="rnn"), "workloads[0].model_family"),
        (_w(params_b=-1), "workloads[0].params_b"),
        (_w(concurrency=[8, 0]), "workloads[0].concurrency[1]"),
        (_w(scenario_kinds=["soak"]), "workloads[0].scenario_kinds[0]"),
        (_w(colour="red"), "workloads[0].colour"),
        ({"workloads": [NO_ID]}, "workloads[0].id"),
        ({"workloads": [WORKLOAD, WORKLOAD]}, "workloads[1].id"),
    ],
)
def test_bad_vocabulary_is_refused_with_its_path(
    changes: dict[str, Any], path: str
) -> None:
    assert _problems(**changes) == [("manifest_schema", path)]


def test_environment_declarations_keep_only_the_structured_fields() -> None:
    declared, problems = environment_declarations(ENVIRONMENT)

    assert problems == []
    assert set(declared) == {"accelerators", "fabric", "pinned"}


def _acc(**fields: Any) -> dict[str, Any]:
    return {"accelerators": [fields]}


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"fabric": {"transport": "infiniband"}}, "fabric.transport"),
        ({"fabric": {"transport": "tcp", "qos": "yes"}}, "fabric.qos"),
        (_acc(vendor="nvidia"), "accelerators[0].per_node"),
        (_acc(vendor="NVIDIA", per_node=8), "accelerators[0].vendor"),
        (
            _acc(vendor="nvidia", per_node=8, sdk={"cuda": ""}),
            "accelerators[0].sdk.cuda",
        ),
        ({"pinned": {"kernel": 5}}, "pinned.kernel"),
        ({"pinned": {"Kernel Version": "5.15"}}, "pinned.Kernel Version"),
    ],
)
def test_bad_environment_fields_are_named_with_the_file(
    changes: dict[str, Any], path: str
) -> None:
    data = json.dumps({**ENVIRONMENT, **changes}).encode()

    found = environment_problems("environment/manifest.json", data)

    assert [at for at, _ in found] == [f"environment/manifest.json:{path}"]


def test_a_free_form_environment_file_declares_nothing() -> None:
    assert environment_problems("environment/env.txt", b"kernel: 6.8\n") == []
    assert environment_declarations({"os": "Debian 12"}) == ({}, [])


# --- at ingest ----------------------------------------------------------------------


@pytest.fixture
def rfp(vendor_a: Any, vendor_a_org: Organisation, vendor_b_org: Organisation) -> Rfp:
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    return open_rfp(vendor_a_org, vendor_b_org)


def _bundle(tmp_path: Path, environment: dict[str, Any], **changes: Any) -> Path:
    files = {
        **good_files(),
        "environment/manifest.json": json.dumps(environment).encode(),
    }
    manifest = manifest_bytes(good_manifest(files, **changes))
    return build_bundle(tmp_path, files, manifest=manifest)


@pytest.mark.django_db
def test_ingest_keeps_what_the_bundle_declares(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    path = _bundle(tmp_path, ENVIRONMENT, approach="local-nvme", workloads=[WORKLOAD])

    bundle = ingest(rfp, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.ACCEPTED
    assert bundle.manifest["approach"] == "local-nvme"
    declared = bundle.completeness["environment"]["declared"]
    assert declared["file"] == "environment/manifest.json"
    assert declared["fabric"] == {"transport": "rdma", "qos": True}


@pytest.mark.django_db
def test_ingest_rejects_bad_vocabulary_naming_each_path(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    environment = {**ENVIRONMENT, "fabric": {"transport": "carrier-pigeon"}}
    path = _bundle(tmp_path, environment, approach="appliance")

    bundle = ingest(rfp, vendor_a_org, vendor_a, path)

    assert bundle.status == Bundle.Status.REJECTED
    assert {(p["code"], p.get("path")) for p in bundle.problems} == {
        ("manifest_schema", "approach"),
        ("environment_schema", "environment/manifest.json:fabric.transport"),
    }


def test_the_cli_verify_finds_the_environment_problem_too(tmp_path: Path) -> None:
    environment = {**ENVIRONMENT, "pinned": {"kernel": ""}}
    path = _bundle(tmp_path, environment)

    report = bundle_verify.verify_bundle(path, bundle_verify.parse_allowed_signers(""))

    assert ("environment_schema", "environment/manifest.json:pinned.kernel") in {
        (p.code, p.path) for p in report.problems
    }
