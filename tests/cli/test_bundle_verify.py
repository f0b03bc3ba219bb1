"""``reprogate bundle verify``: the server's checks offline, the allowed_signers
rules of ``ssh-keygen -Y verify``, and interoperability with plain tools."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from artifacts.lib.bundle_build import build_bundle, load_key
from artifacts.lib.bundle_verify import parse_allowed_signers, parse_time
from artifacts.lib.signatures import dsse
from reprogate_cli.main import main
from tests.artifacts.keys import ssh_keygen_key, ssh_keygen_sign, ssh_keygen_verify
from tests.cli.test_bundle_build import EXAMPLES, make_source

NAMESPACES = 'namespaces="reprogate-bundle"'


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return ssh_keygen_key(tmp_path, "ed25519", "acme-flash@example")


@pytest.fixture
def bundle(tmp_path: Path, key: Path) -> Path:
    source = make_source(tmp_path / "src")
    output = tmp_path / "bundle.tar.gz"
    build_bundle(source, key=load_key(key), output=output)
    return output


def signers(
    tmp_path: Path, key: Path, principal: str = "acme-flash", options: str = NAMESPACES
) -> Path:
    public = Path(f"{key}.pub").read_text().strip()
    path = tmp_path / "allowed_signers"
    path.write_text(f"# exported\n{principal} {options} {public}\n".replace("  ", " "))
    return path


def verify(bundle: Path, allowed: Path, *extra: str) -> int:
    return main(
        ["bundle", "verify", str(bundle), "--allowed-signers", str(allowed), *extra]
    )


def rewrite(
    bundle: Path, out: Path, replace: dict[str, bytes | None], add: dict[str, bytes]
) -> Path:
    """A copy of ``bundle`` with members replaced (None drops one) or added."""
    with tarfile.open(bundle) as tar:
        content = {m.name: tar.extractfile(m).read() for m in tar}
    content.update(add)
    content.update(replace)
    with tarfile.open(out, "w:gz") as tar:
        for name, data in content.items():
            if data is not None:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out


def test_a_built_bundle_verifies(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = verify(bundle, signers(tmp_path, key))

    out = capsys.readouterr().out
    assert status == 0, out
    assert out.startswith(f"OK {bundle}")
    assert "as acme-flash" in out


def test_plain_tar_and_ssh_keygen_verify_a_built_bundle(
    bundle: Path, key: Path, tmp_path: Path
) -> None:
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    subprocess.run(["tar", "-xzf", str(bundle), "-C", str(unpacked)], check=True)
    manifest = (unpacked / "manifest.json").read_bytes()

    signed = ssh_keygen_verify(
        signers(tmp_path, key), "acme-flash", unpacked / "manifest.json.sig", manifest
    )
    listing = "".join(
        f"{f['sha256']}  {f['path']}\n" for f in json.loads(manifest)["files"]
    )
    hashes = subprocess.run(
        ["sha256sum", "--check", "--strict", "-"],
        cwd=unpacked,
        input=listing.encode(),
        capture_output=True,
        check=False,
    )

    assert signed.returncode == 0, signed.stderr
    assert b'Good "reprogate-bundle" signature for acme-flash' in signed.stdout
    assert hashes.returncode == 0, hashes.stdout


def test_a_bundle_made_with_plain_tools_verifies(
    key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_source(tmp_path / "plain")
    template = json.loads((folder / "bundle.json").read_text())
    (folder / "bundle.json").unlink()
    files = [
        {
            "path": p.relative_to(folder).as_posix(),
            "size": p.stat().st_size,
            "sha256": sha256sum(p),
            "kind": "harness" if "harness" in p.parts else "other",
        }
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    ]
    manifest = {
        "schema": "reprogate.bundle/v1",
        "created": "2026-11-29T12:00:00Z",
        **template,
        "files": files,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    ssh_keygen_sign(key, folder / "manifest.json")
    bundle = tmp_path / "plain.tar.gz"
    subprocess.run(["tar", "-czf", str(bundle), "-C", str(folder), "."], check=True)

    assert verify(bundle, signers(tmp_path, key)) == 0, capsys.readouterr().out


def sha256sum(path: Path) -> str:
    result = subprocess.run(["sha256sum", str(path)], capture_output=True, check=True)
    return result.stdout.split()[0].decode()


def test_example_bundles_verify_with_the_cli_and_ssh_keygen(tmp_path: Path) -> None:
    run = subprocess.run(
        ["bash", str(EXAMPLES / "build.sh"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )

    assert run.returncode == 0, run.stderr
    printed = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert set(printed) == {"acme-flash", "bolt-storage"}
    allowed = tmp_path / "out" / "allowed_signers"
    for vendor in printed:
        unpacked = tmp_path / vendor
        unpacked.mkdir()
        archive = tmp_path / "out" / f"{vendor}.tar.gz"
        subprocess.run(["tar", "-xzf", str(archive), "-C", str(unpacked)], check=True)
        manifest = (unpacked / "manifest.json").read_bytes()
        signature = unpacked / "manifest.json.sig"
        assert ssh_keygen_verify(allowed, vendor, signature, manifest).returncode == 0
        assert verify(archive, allowed) == 0


def test_long_and_non_ascii_paths_survive_build_and_verify(
    key: Path, tmp_path: Path
) -> None:
    source = make_source(tmp_path / "src")
    long_name = source / "traces" / ("run-" + "x" * 140 + ".json")
    long_name.write_text("{}")
    (source / "données").mkdir()
    (source / "données" / "résumé.txt").write_text("é")
    output = tmp_path / "b.tar.gz"

    build_bundle(source, key=load_key(key), output=output)

    assert verify(output, signers(tmp_path, key)) == 0


# --- what is wrong, every problem at once --------------------------------------------


def test_a_tampered_file_an_extra_file_and_a_missing_file_are_all_reported(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changes = {"traces/fio.json": b'{"jobs": [1]}\n', "notes/why.txt": None}
    bad = rewrite(bundle, tmp_path / "bad.tar.gz", changes, {"extra.bin": b"x"})

    status = verify(bad, signers(tmp_path, key))

    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith(f"INVALID {bad}: 4 problems")
    assert "digest_mismatch  traces/fio.json:" in out
    assert "size_mismatch  traces/fio.json:" in out
    assert "file_missing  notes/why.txt:" in out
    assert "file_unlisted  extra.bin:" in out


def test_a_tampered_manifest_breaks_the_signature(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tarfile.open(bundle) as tar:
        manifest = tar.extractfile("manifest.json").read()
    forged = manifest.replace(b'"value": 180.0', b'"value": 90.0')
    bad = rewrite(bundle, tmp_path / "bad.tar.gz", {"manifest.json": forged}, {})

    assert verify(bad, signers(tmp_path, key)) == 1
    assert "signature_invalid  manifest.json.sig:" in capsys.readouterr().out


def test_a_key_not_in_the_file_is_not_allowed(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "other").mkdir()
    other = ssh_keygen_key(tmp_path / "other", "ed25519")

    assert verify(bundle, signers(tmp_path, other)) == 1
    assert "not in the allowed signers file" in capsys.readouterr().out


def test_another_principal_is_refused_and_the_vendor_checked(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed = signers(tmp_path, key, principal="acme-flash")

    status = verify(bundle, allowed, "--principal", "bolt-storage")

    out = capsys.readouterr().out
    assert status == 1
    assert "signature_key_not_allowed  manifest.json.sig:" in out
    assert "vendor_mismatch  vendor:" in out


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ('namespaces="file,git"', "signature_key_not_allowed"),
        ('valid-before="20260101Z"', "signature_key_expired"),
        ('valid-after="20991231235959Z"', "signature_key_not_yet_valid"),
    ],
)
def test_allowed_signers_options_are_enforced(
    options: str,
    code: str,
    bundle: Path,
    key: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    allowed = signers(tmp_path, key, options=options)

    assert verify(bundle, allowed, "--at", "2026-11-29T12:00:00Z") == 1
    assert f"{code}  manifest.json.sig:" in capsys.readouterr().out


def test_at_moves_the_validity_check(bundle: Path, key: Path, tmp_path: Path) -> None:
    allowed = signers(tmp_path, key, options='valid-before="20260101Z"')

    assert verify(bundle, allowed, "--at", "2025-06-01T00:00:00Z") == 0


def test_the_rfp_is_checked_when_given(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(bundle, signers(tmp_path, key), "--rfp", "RFP-OTHER") == 1
    assert "rfp_mismatch  rfp:" in capsys.readouterr().out


def test_a_dsse_envelope_instead_of_a_signature_verifies(
    bundle: Path, key: Path, tmp_path: Path
) -> None:
    with tarfile.open(bundle) as tar:
        manifest = tar.extractfile("manifest.json").read()
    envelope = dsse.sign(manifest, load_key(key))
    changes: dict[str, bytes | None] = {"manifest.json.sig": None}
    signed = rewrite(
        bundle, tmp_path / "d.tar.gz", changes, {"manifest.json.dsse": envelope}
    )

    assert verify(signed, signers(tmp_path, key)) == 0


def test_a_bundle_without_signature_is_invalid(
    bundle: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = rewrite(bundle, tmp_path / "u.tar.gz", {"manifest.json.sig": None}, {})

    assert verify(bad, signers(tmp_path, key)) == 1
    assert "signature_missing" in capsys.readouterr().out


def test_not_an_archive_is_invalid(
    key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x.tar.gz").write_bytes(b"%PDF-1.7 not a bundle")

    assert verify(tmp_path / "x.tar.gz", signers(tmp_path, key)) == 1
    assert "archive_format" in capsys.readouterr().out


def test_a_missing_allowed_signers_file_is_a_usage_error(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(bundle, tmp_path / "nope") == 2
    assert "cannot read" in capsys.readouterr().err


# --- the allowed_signers format ------------------------------------------------------


def test_allowed_signers_patterns_quotes_and_options(key: Path) -> None:
    public = Path(f"{key}.pub").read_text().strip()
    text = (
        f'"*-flash,!evil-flash" namespaces="file,reprogate-*",'
        f'valid-after="202601010000",valid-before="20270101000000Z" {public}\n'
    )

    [entry] = parse_allowed_signers(text).signers

    assert entry.allows("acme-flash")
    assert not entry.allows("evil-flash")
    assert not entry.allows("bolt-storage")
    assert entry.allows_namespace("reprogate-bundle")
    assert entry.valid_before == datetime(2027, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("options", "warning"),
    [
        ("cert-authority", "certificate authorities"),
        ('no-touch-required,namespaces="x"', "unknown option"),
        ("namespaces=reprogate-bundle", "double quotes"),
        ('valid-after="2026-01-01"', "YYYYMMDD"),
        ('namespaces="unclosed', "quote is not closed"),
    ],
)
def test_lines_ssh_keygen_would_ignore_are_ignored_with_a_warning(
    options: str, warning: str, key: Path
) -> None:
    public = Path(f"{key}.pub").read_text().strip()

    parsed = parse_allowed_signers(f"acme-flash {options} {public}\n")

    assert parsed.signers == []
    assert warning in parsed.warnings[0]
    assert parsed.warnings[0].startswith("line 1:")


def test_times_without_z_are_local_time() -> None:
    local = datetime(2026, 3, 1, 12, 30).astimezone(UTC)

    assert parse_time("202603011230") == local
    assert parse_time("20260301Z") == datetime(2026, 3, 1, tzinfo=UTC)
