"""Acceptance 1, first half: a vendor without the ``reprogate`` CLI builds a bundle
with plain tools (``sha256sum``, a text manifest, ``ssh-keygen -Y sign -n
reprogate-bundle``, ``tar``/``zip``), registers its public key through the API and
uploads the bundle through ``POST /api/v1/rfps/<id>/bundles/``: accepted."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files, good_manifest
from tests.artifacts.ingest_support import open_rfp

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("tar", "sha256sum", "ssh-keygen", "zip")),
        reason="needs tar, sha256sum, ssh-keygen and zip",
    ),
]

KEYGEN = {
    "ed25519": ["-t", "ed25519"],
    "ecdsa": ["-t", "ecdsa", "-b", "384"],
    "rsa": ["-t", "rsa", "-b", "3072"],
}


def run(*command: str, cwd: Path | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def write_tree(root: Path) -> None:
    for name, data in good_files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def sha256sum_entries(root: Path) -> list[dict[str, Any]]:
    """``sha256sum`` over every file, as a vendor's shell script would."""
    names = sorted(good_files())
    lines = run("sha256sum", "--", *names, cwd=root).splitlines()
    pairs = (line.split(maxsplit=1) for line in lines)  # digest, name
    digests = {name: digest for digest, name in pairs}
    return [
        {"path": name, "sha256": digests[name], "size": (root / name).stat().st_size,
         "kind": entry["kind"]}
        for name, entry in zip(names, good_manifest(good_files())["files"], strict=True)
    ]  # fmt: skip


def plain_bundle(tmp_path: Path, key_type: str, archive: str) -> tuple[Path, Path]:
    """The bundle archive and the public key file."""
    root = tmp_path / "bundle"
    write_tree(root)
    manifest = good_manifest(good_files()) | {"files": sha256sum_entries(root)}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    key = tmp_path / "id_vendor"
    run(
        "ssh-keygen", "-q", *KEYGEN[key_type], "-N", "", "-C", "ci@acme", "-f", str(key)
    )
    run("ssh-keygen", "-Y", "sign", "-f", str(key), "-n", "reprogate-bundle",
        str(root / "manifest.json"))  # fmt: skip
    out = tmp_path / f"bundle.{archive}"
    if archive == "zip":
        run("zip", "-q", "-r", str(out), ".", cwd=root)
    else:
        run(
            "tar",
            "-czf" if archive == "tar.gz" else "-cf",
            str(out),
            "-C",
            str(root),
            ".",
        )
    return out, key.with_suffix(".pub")


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def rfp(vendor_a_org: Organisation) -> Rfp:
    return open_rfp(vendor_a_org)


@pytest.mark.parametrize(
    ("key_type", "archive"),
    [("ed25519", "tar.gz"), ("ecdsa", "tar"), ("rsa", "zip")],
)
def test_a_bundle_made_with_plain_tools_is_accepted(
    tmp_path: Path, rfp: Rfp, vendor_a: Any, key_type: str, archive: str
) -> None:
    bundle, public_key = plain_bundle(tmp_path, key_type, archive)
    client = _api(vendor_a)
    registered = client.post(
        "/api/v1/signing-keys/", {"public_key": public_key.read_text()}, format="json"
    )

    with bundle.open("rb") as handle:
        response = client.post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/", {"file": handle},
            format="multipart",
        )  # fmt: skip

    assert registered.status_code == 201
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "accepted"
    assert (
        response.json()["signature"]["fingerprint"] == registered.json()["fingerprint"]
    )


def test_the_same_bundle_is_refused_before_its_key_is_registered(
    tmp_path: Path, rfp: Rfp, vendor_a: Any
) -> None:
    bundle, _ = plain_bundle(tmp_path, "ed25519", "tar.gz")

    with bundle.open("rb") as handle:
        response = _api(vendor_a).post(
            f"/api/v1/rfps/{rfp.public_id}/bundles/", {"file": handle},
            format="multipart",
        )  # fmt: skip

    assert response.status_code == 422
    codes = [p["code"] for p in response.json()["problems"]]
    assert codes == ["signature_key_not_allowed"]
