"""``reprogate evidence verify PACKAGE.zip``: a readable report, exit 0 only when
every check passes, 1 naming every failure, 2 for usage errors; and README's
by-hand steps with plain tools (sha256sum, tar, ssh-keygen)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from artifacts.models import Deposit
from reprogate_cli.main import main
from tests.escrow.package_support import download_to, flip, members, rewrite

pytestmark = pytest.mark.django_db


@pytest.fixture
def package(deposit: Deposit, vendor_a: Any, client_for: Any, tmp_path: Path) -> Path:
    return download_to(client_for(vendor_a), deposit.bundle, tmp_path / "evidence.zip")


def test_cli_reports_a_valid_package(package: Path, capsys: Any) -> None:
    status = main(["evidence", "verify", str(package)])

    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith(f"VALID {package}")
    assert "checkpoint  size 2" in out
    assert "escrow.test/log" in out
    assert "manifest signed by SHA256:" in out


def test_cli_names_every_failure_and_exits_1(
    package: Path, tmp_path: Path, capsys: Any
) -> None:
    blob = next(n for n in members(package) if n.startswith("blobs/"))
    tampered = rewrite(
        package,
        tmp_path / "t.zip",
        lambda f: {
            **{k: v for k, v in f.items() if k != blob},
            "README.txt": flip(f["README.txt"], 10),
        },
    )

    status = main(["evidence", "verify", str(tampered)])

    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith(f"INVALID {tampered}: 2 failures")
    assert f"FAIL  {blob}: is missing" in out
    assert "FAIL  README.txt: is not the file the server logged" in out


def test_cli_checks_a_pinned_log_key(
    package: Path, tmp_path: Path, capsys: Any
) -> None:
    key = members(package)["log/key.pub"].decode().strip()
    key_file = tmp_path / "log.pub"
    key_file.write_text(key + "\n")

    assert main(["evidence", "verify", str(package), "--log-key", str(key_file)]) == 0
    other = key.rsplit("+", 1)[0] + "+" + base64.b64encode(b"\x01" + b"7" * 32).decode()
    assert main(["evidence", "verify", str(package), "--log-key", other]) == 1
    assert "FAIL  log/key.pub: is not the log key you gave" in capsys.readouterr().out


def test_cli_refuses_a_missing_file(tmp_path: Path, capsys: Any) -> None:
    status = main(["evidence", "verify", str(tmp_path / "nothing.zip")])

    assert status == 2
    assert "is not a file" in capsys.readouterr().err


def test_cli_runs_without_django(package: Path) -> None:
    """Python and cryptography only: a fresh interpreter with no settings."""
    code = (
        "import sys; from reprogate_cli.main import main; status = main(sys.argv[1:]);"
        "assert 'django' not in sys.modules, 'django was imported'; sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "evidence", "verify", str(package)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("VALID")


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("sha256sum", "tar", "ssh-keygen")),
    reason="needs sha256sum, tar and ssh-keygen",
)
def test_readme_steps_work_with_plain_tools(package: Path, tmp_path: Path) -> None:
    root = tmp_path / "unpacked"
    with zipfile.ZipFile(package) as archive:
        archive.extractall(root)
    blobs = root / "blobs"
    listing = "".join(f"{p.name}  {p.name}\n" for p in blobs.iterdir())
    subprocess.run(["sha256sum", "-c"], input=listing, cwd=blobs, text=True, check=True)
    evidence = json.loads((root / "evidence.json").read_text())
    leaf = base64.b64decode(evidence["deposits"][0]["leaf"])
    archive_sha = json.loads(leaf)["blobs"][0]["sha256"]
    subprocess.run(
        ["tar", "-xzf", str(blobs / archive_sha), "manifest.json", "manifest.json.sig"],
        cwd=root,
        check=True,
    )
    verified = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            "keys/allowed_signers",
            "-I",
            "acme-flash",
            "-n",
            "reprogate-bundle",
            "-s",
            "manifest.json.sig",
        ],
        stdin=(root / "manifest.json").open("rb"),
        cwd=root,
        capture_output=True,
        check=False,
    )

    assert verified.returncode == 0, verified.stderr
    assert (
        hashlib.sha256((root / "manifest.json").read_bytes()).hexdigest()
        == (json.loads(leaf)["manifest_sha256"])
    )


def test_a_bundle_package_holds_the_reports_key_once_there_is_one(
    deposit: Deposit, vendor_a: Any, client_for: Any, settings: Any, tmp_path: Path
) -> None:
    """Every evidence package holds the key the signed reports' statements verify
    with, bound by the download receipt, once the installation has one."""
    from artifacts.lib.signatures.statement import public_key_pem
    from artifacts.lib.transparency.keyfile import load_private_key

    client = client_for(vendor_a)
    before = members(download_to(client, deposit.bundle, tmp_path / "before.zip"))
    assert "keys/reports.pub" not in before  # no report signed yet: no key
    key = load_private_key(settings.REPROGATE_REPORT_STATEMENT_KEY_PATH, create=True)

    package = download_to(client, deposit.bundle, tmp_path / "after.zip")

    files = members(package)
    assert files["keys/reports.pub"] == public_key_pem(key)
    assert "keys/reports.pub" in files["README.txt"].decode()
    assert main(["evidence", "verify", str(package)]) == 0
    changed = rewrite(
        package,
        tmp_path / "changed.zip",
        lambda files: {**files, "keys/reports.pub": b"another key\n"},
    )
    assert main(["evidence", "verify", str(changed)]) == 1  # the receipt names it
