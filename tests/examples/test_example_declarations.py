"""The example bundles declare the RFP requirements' vocabulary, and what they
declare reads as their README says against a demanding RFP: Acme meets most
rows, Bolt's chat figures come from a smaller model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from artifacts.lib import bundle_build
from artifacts.lib.manifest import parse_manifest
from artifacts.lib.manifest.vocabulary import environment_declarations
from artifacts.lib.signatures.sshkeys import load_private_key
from procurement.lib.fidelity import Declared, fidelity_matrix

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REQUIREMENTS: dict[str, Any] = {
    "approaches": ["nvme-of-appliance", "local-nvme", "kv-cache-tiering"],
    "workloads": [
        {
            "id": "chat-70b",
            "model_family": "decoder",
            "params_b": [65, 80],
            "context_tokens": 8192,
            "concurrency": [8, 64],
            "tenants": 4,
            "scenario_kinds": ["interference", "failover", "warmup"],
        }
    ],
    "accelerators": [{"vendors": ["nvidia"], "per_node": 8, "sdk": {"cuda": ">=12.2"}}],
    "fabric": {"transports": ["tcp", "rdma"], "qos": True},
    "environment": {"pinned": ["kernel", "gpu_driver", "nvme_firmware"]},
}


def _declared(vendor: str, tmp_path: Path) -> Declared:
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    built = bundle_build.build_bundle(
        EXAMPLES / vendor,
        key=load_private_key(pem, comment=vendor),
        output=tmp_path / f"{vendor}.tar.gz",
        environ={},
    )
    result = parse_manifest(built.manifest)
    assert result.ok, result.problems
    path = EXAMPLES / vendor / "environment" / "manifest.json"
    declared, problems = environment_declarations(json.loads(path.read_text()))
    assert problems == []
    return Declared(
        manifest=json.loads(built.manifest),
        environment={"file": "environment/manifest.json", **declared},
    )


@pytest.mark.parametrize(
    ("vendor", "contradicted"),
    [
        ("acme-flash", []),
        (
            "bolt-storage",
            ["workloads[chat-70b].model_family", "workloads[chat-70b].params_b"],
        ),
    ],
)
def test_example_declarations_read_as_the_readme_says(
    vendor: str, contradicted: list[str], tmp_path: Path
) -> None:
    matrix = fidelity_matrix(REQUIREMENTS, _declared(vendor, tmp_path))

    assert [r.id for r in matrix.contradicted_mandatory] == contradicted
    assert matrix.count("met") >= (12 if vendor == "acme-flash" else 4)
