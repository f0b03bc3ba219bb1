"""The content checks of container images, IaC, runbooks and SBOMs: each good
form passes, each bad one is a named problem, hostile SBOMs are refused cheaply."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from artifacts.lib.content import CONTENT_PROBLEMS, content_report
from artifacts.lib.content.sbom import MAX_DEPTH
from artifacts.lib.manifest import ManifestFile

DIGEST = "sha256:" + "ab" * 32
RUNBOOK = b"# Operating the cache tier\n\n" + b"Restart the target service. " * 12


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check(kind: str, files: dict[str, bytes], **listed: bytes) -> dict[str, Any]:
    """The content check of ``kind`` over ``files`` (``listed``: more files of
    kind ``other``, keyed by path with ``__`` for ``/``)."""
    entries = [ManifestFile(p, _sha(d), len(d), kind) for p, d in files.items()]
    others = {k.replace("__", "/"): v for k, v in listed.items()}
    entries += [ManifestFile(p, _sha(d), len(d), "other") for p, d in others.items()]
    data = {**files, **others}
    return content_report(entries, data.get)["kinds"][kind]


def codes(result: dict[str, Any]) -> list[str]:
    return [p["code"] for p in result["problems"]]


def oci_layout(*, drop: str = "", layer: bytes = b"layer") -> dict[str, bytes]:
    config = b'{"architecture": "amd64", "os": "linux"}'
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "config": {"digest": f"sha256:{_sha(config)}", "size": len(config)},
            "layers": [{"digest": f"sha256:{_sha(layer)}", "size": len(layer)}],
        }
    ).encode()
    media = "application/vnd.oci.image.manifest.v1+json"
    index = {"schemaVersion": 2, "manifests": [{"mediaType": media,
             "digest": f"sha256:{_sha(manifest)}", "size": len(manifest)}]}  # fmt: skip
    files = {
        "containers/kv/oci-layout": b'{"imageLayoutVersion": "1.0.0"}',
        "containers/kv/index.json": json.dumps(index).encode(),
    }
    for blob in (config, b"layer", manifest):
        files[f"containers/kv/blobs/sha256/{_sha(blob)}"] = blob
    return {p: d for p, d in files.items() if drop not in p or not drop}


# --- container images ---------------------------------------------------------------


def test_oci_layout_with_every_blob_passes() -> None:
    result = check("container_image", oci_layout())

    assert result["ok"], result["problems"]
    assert result["items"][0]["blobs_verified"] == 3


def test_oci_layout_missing_a_layer_blob_is_named() -> None:
    result = check("container_image", oci_layout(drop=_sha(b"layer")))

    assert codes(result) == ["oci_blob_missing"]


def test_oci_layout_whose_blob_is_not_its_digest_is_named() -> None:
    files = oci_layout()
    path = f"containers/kv/blobs/sha256/{_sha(b'layer')}"
    entries = [
        ManifestFile(p, _sha(d), len(d), "container_image") for p, d in files.items()
    ]
    entries = [
        ManifestFile(e.path, _sha(b"other"), e.size, e.kind) if e.path == path else e
        for e in entries
    ]

    result = content_report(entries, files.get)["kinds"]["container_image"]

    assert codes(result) == ["oci_digest_mismatch"]


def test_oci_layout_without_version_is_named() -> None:
    files = {**oci_layout(), "containers/kv/oci-layout": b"{}"}

    assert codes(check("container_image", files)) == ["oci_layout_invalid"]


def test_image_reference_with_digest_passes() -> None:
    ref = {"image": "registry.example/acme/kvsim:1.4", "digest": DIGEST}

    result = check(
        "container_image", {"containers/kvsim.json": json.dumps(ref).encode()}
    )

    assert result["ok"]
    assert result["items"][0]["digest"] == DIGEST


@pytest.mark.parametrize(
    ("reference", "code"),
    [
        ({"image": "registry.example/acme/kvsim:1.4"}, "image_not_pinned"),
        (
            {"image": "registry.example/acme/kvsim", "digest": "sha256:1"},
            "image_reference_invalid",
        ),
        ({"name": "kvsim"}, "image_reference_invalid"),
    ],
)
def test_bad_image_reference_is_named(reference: dict[str, str], code: str) -> None:
    result = check(
        "container_image", {"containers/r.json": json.dumps(reference).encode()}
    )

    assert not result["ok"]
    assert codes(result) == [code]


def test_a_stray_image_file_is_unrecognised() -> None:
    result = check("container_image", {"containers/image.tar": b"tar"})

    assert codes(result) == ["container_image_unrecognised"]


# --- infrastructure as code ---------------------------------------------------------

GOOD_IAC = {
    "iac/main.tf": b'resource "null_resource" "t" {\n  triggers = { a = "}" }\n}\n',
    "iac/vars.tf.json": b'{"variable": {"targets": {"default": 4}}}',
    "iac/k8s/target.yaml": (
        b"apiVersion: apps/v1\nkind: Deployment\n---\napiVersion: v1\nkind: Service\n"
    ),
    "iac/site.yml": b"- hosts: targets\n  roles: [nvmeof]\n",
    "iac/chart/Chart.yaml": b"apiVersion: v2\nname: kv\nversion: 0.1.0\n",
    "iac/chart/templates/svc.yaml": b"{{ .Values.name }}\n",
    "iac/chart/values.schema.json": b'{"type": "object"}',
    "iac/chart/.helmignore": b"*.tmp\n",
    "iac/README.md": b"notes",
}


def test_terraform_kubernetes_ansible_and_helm_pass() -> None:
    result = check("iac", GOOD_IAC)

    assert result["ok"], result["problems"]
    formats = {i["path"]: i["format"] for i in result["items"]}
    assert formats["iac/main.tf"] == "terraform"
    assert formats["iac/k8s/target.yaml"] == "kubernetes"
    assert formats["iac/site.yml"] == "ansible"
    assert formats["iac/chart/Chart.yaml"] == "helm"


@pytest.mark.parametrize(
    ("path", "data", "code"),
    [
        ("iac/main.tf", b"", "iac_empty"),
        ("iac/main.tf", b'resource "a" "b" {\n', "iac_unparseable"),
        ("iac/k8s.yaml", b"kind: [unclosed\n", "iac_unparseable"),
        ("iac/k8s.yaml", b"name: not a manifest\n", "iac_unrecognised"),
        ("iac/setup.sh", b"#!/bin/sh\n", "iac_unrecognised"),
        ("iac/x.tf.json", b'{"foo": 1}', "iac_unrecognised"),
        ("iac/chart/Chart.yaml", b"name: kv\n", "iac_unrecognised"),
        ("iac/deep.yaml", b"[" * 300_000, "iac_unparseable"),
        ("iac/deep.json", b"[" * 300_000 + b"]" * 300_000, "iac_unparseable"),
    ],
)
def test_bad_template_is_named(path: str, data: bytes, code: str) -> None:
    assert codes(check("iac", {path: data})) == [code]


def test_yaml_aliases_cost_nothing() -> None:
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n"
        % ((c,) * 2 + (c - 1,) * 9)
        for c in range(ord("b"), ord("k"))
    )

    assert codes(check("iac", {"iac/bomb.yaml": bomb})) == ["iac_unrecognised"]


# --- runbooks -----------------------------------------------------------------------


def test_runbook_with_heading_and_substance_passes() -> None:
    result = check(
        "runbook", {"runbooks/ops.md": RUNBOOK, "runbooks/arch.png": b"\x89PNG"}
    )

    assert result["ok"]
    assert result["items"][0]["heading"] == "Operating the cache tier"


def test_runbook_pdf_passes() -> None:
    pdf = b"%PDF-1.7\n" + b"0" * 2000 + b"\n%%EOF\n"

    assert check("runbook", {"runbooks/ops.pdf": pdf})["ok"]


@pytest.mark.parametrize(
    ("path", "data", "expected"),
    [
        ("runbooks/ops.md", b"Restart it. " * 30, ["runbook_no_heading"]),
        ("runbooks/ops.md", b"# Ops\n\nRestart it.\n", ["runbook_too_short"]),
        ("runbooks/ops.pdf", b"not a pdf", ["runbook_not_pdf"]),
        ("runbooks/ops.docx", b"PK", ["runbook_unrecognised"]),
        ("runbooks/ops.md", b"\xff\xfe", ["content_unreadable"]),
    ],
)
def test_bad_runbook_is_named(path: str, data: bytes, expected: list[str]) -> None:
    assert codes(check("runbook", {path: data})) == expected


# --- SBOMs --------------------------------------------------------------------------

CYCLONEDX = {
    "bomFormat": "CycloneDX",
    "specVersion": "1.5",
    "components": [
        {"name": "kvsim", "licenses": [{"license": {"id": "Apache-2.0"}}],
         "components": [{"name": "zstd", "licenses": [
             {"expression": "BSD-3-Clause OR GPL-2.0-only"}]}]},
        {"name": "fio", "licenses": [{"license": {"name": "GPL-2.0"}}]},
    ],
}  # fmt: skip
SPDX = {
    "spdxVersion": "SPDX-2.3",
    "packages": [
        {"name": "nvme-cli", "licenseConcluded": "GPL-2.0-only"},
        {"name": "libnvme", "licenseDeclared": "LGPL-2.1-or-later"},
        {"name": "blob", "licenseConcluded": "NOASSERTION"},
    ],
}


def test_cyclonedx_counts_nested_components_and_licences() -> None:
    result = check("sbom", {"sbom/bom.json": json.dumps(CYCLONEDX).encode()})

    assert result["ok"]
    assert result["components"] == 3
    assert result["licences"] == [
        "Apache-2.0",
        "BSD-3-Clause OR GPL-2.0-only",
        "GPL-2.0",
    ]


def test_spdx_counts_packages_and_licences() -> None:
    result = check("sbom", {"sbom/spdx.json": json.dumps(SPDX).encode()})

    assert result["ok"]
    assert result["items"][0]["format"] == "spdx"
    assert result["components"] == 3
    assert result["licences"] == ["GPL-2.0-only", "LGPL-2.1-or-later"]


def test_two_sboms_add_up() -> None:
    files = {
        "sbom/a.json": json.dumps(CYCLONEDX).encode(),
        "sbom/b.json": json.dumps(SPDX).encode(),
    }

    assert check("sbom", files)["components"] == 6


def test_deeply_nested_sbom_is_refused() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000

    assert codes(check("sbom", {"sbom/deep.json": deep})) == ["sbom_unparseable"]


def test_sbom_deeper_than_the_walk_reads_is_refused() -> None:
    nested: Any = {"name": "leaf"}
    for _ in range(MAX_DEPTH):
        nested = {"name": "c", "components": [nested]}
    bom = {**CYCLONEDX, "components": [nested]}

    assert codes(check("sbom", {"sbom/deep.json": json.dumps(bom).encode()})) == [
        "sbom_too_deep"
    ]


def test_huge_sbom_is_not_read() -> None:
    entries = [ManifestFile("sbom/huge.json", "0" * 64, 10**12, "sbom")]

    def never(path: str) -> bytes:
        raise AssertionError("read a file over the cap")

    result = content_report(entries, never)["kinds"]["sbom"]

    assert codes(result) == ["content_too_large"]


@pytest.mark.parametrize(
    ("document", "code"),
    [
        (b"not json", "sbom_unparseable"),
        (b'{"bomFormat": "CycloneDX"}', "sbom_unrecognised"),
        (b'{"spdxVersion": "SPDX-2.3", "packages": []}', "sbom_empty"),
    ],
)
def test_bad_sbom_is_named(document: bytes, code: str) -> None:
    assert codes(check("sbom", {"sbom/bom.json": document})) == [code]


def test_report_lists_failed_kinds_only_for_kinds_present() -> None:
    entries = [ManifestFile("runbooks/x.md", _sha(b"x"), 1, "runbook")]

    report = content_report(entries, {"runbooks/x.md": b"x"}.get)

    assert report["failed"] == ["runbook"]
    assert set(report["kinds"]) == {"runbook"}


def test_the_bundle_format_lists_every_content_problem_code() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs/bundle-format.md").read_text()

    assert [c for c in CONTENT_PROBLEMS if f"| `{c}` |" not in text] == []
