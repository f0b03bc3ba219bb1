"""``reprogate bundle build``: manifest, signature, deterministic tar.gz, refusals."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tarfile
from pathlib import Path
from typing import Any

import pytest

from artifacts.lib import bundle_build
from artifacts.lib.bundle_build import BuildError, SourceFile, write_archive
from artifacts.lib.manifest import parse_manifest
from artifacts.lib.signatures import sshsig
from reprogate_cli.main import main
from tests.artifacts.keys import ssh_keygen, ssh_keygen_key

EPOCH = "1795953600"  # 2026-11-29T12:00:00Z
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TEMPLATE: dict[str, Any] = {
    "rfp": "RFP-DEMO-1",
    "vendor": "acme-flash",
    "harness": {
        "entrypoint": "harness/run.sh",
        "outputs": [{"path": "metrics.json", "parser": "reprogate-metrics"}],
        "scenarios": [
            {
                "name": "cold-c32",
                "cache": "cold",
                "concurrency": 32,
                "batch_size": 8,
                "duration_s": 60,
            },
        ],
    },
    "claims": [
        {
            "metric": "ttft_ms",
            "stat": "p99",
            "scenario": "cold-c32",
            "value": 180.0,
            "unit": "ms",
        }
    ],
}


def make_source(root: Path, template: dict[str, Any] | None = None) -> Path:
    """A small bundle folder: template, harness, workload, trace, other."""
    files = {
        "bundle.json": json.dumps(template or TEMPLATE),
        "harness/run.sh": "#!/bin/sh\necho '::progress:: 1'\n",
        "workloads/chat.json": '{"model": "llama"}\n',
        "traces/fio.json": '{"jobs": []}\n',
        "notes/why.txt": "free text\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return ssh_keygen_key(tmp_path, "ed25519", "acme-flash@example")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return make_source(tmp_path / "src")


def build(source: Path, key: Path, out: Path, *extra: str) -> int:
    return main(
        ["bundle", "build", str(source), "--key", str(key), "-o", str(out), *extra]
    )


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def test_build_lists_every_file_with_size_digest_and_kind(
    source: Path, key: Path, tmp_path: Path
) -> None:
    assert build(source, key, tmp_path / "b.tar.gz") == 0

    manifest = json.loads(members(tmp_path / "b.tar.gz")["manifest.json"])
    listed = {(f["path"], f["kind"], f["size"], f["sha256"]) for f in manifest["files"]}
    expected = {
        (
            name,
            kind,
            (source / name).stat().st_size,
            hashlib.sha256((source / name).read_bytes()).hexdigest(),
        )
        for name, kind in [
            ("harness/run.sh", "harness"),
            ("notes/why.txt", "other"),
            ("traces/fio.json", "trace"),
            ("workloads/chat.json", "workload"),
        ]
    }
    assert listed == expected
    assert [f["path"] for f in manifest["files"]] == sorted(p for p, *_ in expected)


def test_built_manifest_is_valid_and_signed_by_the_key(
    source: Path, key: Path, tmp_path: Path
) -> None:
    assert build(source, key, tmp_path / "b.tar.gz") == 0

    content = members(tmp_path / "b.tar.gz")
    assert parse_manifest(content["manifest.json"]).ok
    public = bundle_build.load_key(key).public
    signed = sshsig.verify(
        content["manifest.json"], content["manifest.json.sig"], public_keys=[public]
    )
    assert signed.namespace == "reprogate-bundle"


def test_build_twice_gives_the_same_bytes(
    source: Path, key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)

    assert build(source, key, tmp_path / "one.tar.gz") == 0
    os.utime(source / "traces/fio.json", (0, 0))  # file times do not matter
    assert build(source, key, tmp_path / "two.tar.gz") == 0

    assert (tmp_path / "one.tar.gz").read_bytes() == (
        tmp_path / "two.tar.gz"
    ).read_bytes()


def test_archive_members_have_fixed_order_owner_time_and_mode(
    source: Path, key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)

    assert build(source, key, tmp_path / "b.tar.gz") == 0

    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        infos = tar.getmembers()
    names = [m.name for m in infos]
    assert names[:2] == ["manifest.json", "manifest.json.sig"]
    assert names[2:] == sorted(names[2:])
    assert {(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in infos} == {
        (0, 0, "", "", int(EPOCH))
    }
    modes = {m.name: m.mode for m in infos}
    assert modes.pop("harness/run.sh") == 0o755
    assert set(modes.values()) == {0o644}


def test_gzip_header_has_no_file_name_and_no_time(
    source: Path, key: Path, tmp_path: Path
) -> None:
    assert build(source, key, tmp_path / "b.tar.gz") == 0

    header = (tmp_path / "b.tar.gz").read_bytes()[:10]
    flags, mtime = header[3], header[4:8]
    assert flags & 0x08 == 0  # FNAME
    assert mtime == b"\x00\x00\x00\x00"


def test_created_comes_from_the_option_or_source_date_epoch(
    source: Path, key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    build(source, key, tmp_path / "a.tar.gz")
    build(source, key, tmp_path / "b.tar.gz", "--created", "2026-12-01T08:30:00+01:00")

    created = [
        json.loads(members(tmp_path / n)["manifest.json"])["created"]
        for n in ("a.tar.gz", "b.tar.gz")
    ]
    assert created == ["2026-11-29T12:00:00Z", "2026-12-01T07:30:00Z"]


def test_rfp_and_vendor_options_override_bundle_json(
    source: Path, key: Path, tmp_path: Path
) -> None:
    build(source, key, tmp_path / "b.tar.gz", "--rfp", "RFP-7", "--vendor", "bolt")

    manifest = json.loads(members(tmp_path / "b.tar.gz")["manifest.json"])
    assert (manifest["rfp"], manifest["vendor"]) == ("RFP-7", "bolt")
    assert "bundle.json" not in members(tmp_path / "b.tar.gz")


def test_update_fields_in_bundle_json_reach_the_manifest(
    key: Path, tmp_path: Path
) -> None:
    change = {"component": "nvme_firmware", "from": "0104", "to": "0107"}
    template = {**TEMPLATE, "supersedes": "c" * 64, "changes": [change]}
    source = make_source(tmp_path / "src", template)

    assert build(source, key, tmp_path / "b.tar.gz") == 0

    result = parse_manifest(members(tmp_path / "b.tar.gz")["manifest.json"])
    assert result.manifest is not None
    assert result.manifest.supersedes == "c" * 64
    assert [c.to_version for c in result.manifest.changes] == ["0107"]


def test_kinds_in_bundle_json_override_the_folders(key: Path, tmp_path: Path) -> None:
    template = {**TEMPLATE, "kinds": {"notes/": "report", "traces/fio.json": "other"}}
    source = make_source(tmp_path / "src", template)

    assert build(source, key, tmp_path / "b.tar.gz") == 0

    manifest = json.loads(members(tmp_path / "b.tar.gz")["manifest.json"])
    kinds = {f["path"]: f["kind"] for f in manifest["files"]}
    assert kinds["notes/why.txt"] == "report"
    assert kinds["traces/fio.json"] == "other"


def test_symlink_is_refused_and_nothing_is_written(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (source / "traces/link.json").symlink_to("/etc/passwd")

    status = build(source, key, tmp_path / "b.tar.gz")

    assert status == 1
    assert "member_symlink  traces/link.json" in capsys.readouterr().err
    assert list(tmp_path.glob("*.tar.gz")) == []
    assert list(tmp_path.glob(".b.tar.gz.*")) == []


def test_linked_folder_is_refused_not_followed(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (source / "more").symlink_to(source / "workloads", target_is_directory=True)

    assert build(source, key, tmp_path / "b.tar.gz") == 1
    assert "member_symlink  more:" in capsys.readouterr().err


def test_fifo_and_socket_are_refused(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(source / "traces/pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(source / "sock"))

    status = build(source, key, tmp_path / "b.tar.gz")

    server.close()
    err = capsys.readouterr().err
    assert status == 1
    assert "member_fifo  traces/pipe" in err
    assert "member_fifo  sock" in err


def test_a_manifest_in_the_folder_is_refused(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (source / "manifest.json").write_text("{}")

    assert build(source, key, tmp_path / "b.tar.gz") == 1
    assert "name_collision  manifest.json" in capsys.readouterr().err


def test_names_differing_only_in_case_are_refused(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (source / "traces/FIO.json").write_text("{}")

    assert build(source, key, tmp_path / "b.tar.gz") == 1
    assert "name_collision" in capsys.readouterr().err


def test_a_path_longer_than_the_server_stores_is_refused(
    source: Path, key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = source / ("d" * 200) / ("e" * 200) / ("f" * 150)
    deep.parent.mkdir(parents=True)
    deep.write_text("{}")

    assert build(source, key, tmp_path / "b.tar.gz") == 1
    assert "path_invalid" in capsys.readouterr().err


def test_template_errors_are_reported_by_manifest_path(
    key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = {**TEMPLATE["claims"][0], "scenario": "warm-c1", "stat": "p42"}
    source = make_source(tmp_path / "src", {**TEMPLATE, "claims": [claim]})

    status = build(source, key, tmp_path / "b.tar.gz")

    err = capsys.readouterr().err
    assert status == 1
    assert "claim_scenario_unknown  claims[0].scenario" in err
    assert "manifest_schema  claims[0].stat" in err


def test_unknown_bundle_json_keys_are_refused(
    key: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_source(tmp_path / "src", {**TEMPLATE, "files": []})

    assert build(source, key, tmp_path / "b.tar.gz") == 2
    assert "unknown keys files" in capsys.readouterr().err


def test_passphrase_protected_key_is_refused(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    ssh_keygen("-q", "-t", "ed25519", "-N", "secret", "-f", str(locked))

    assert build(source, locked, tmp_path / "b.tar.gz") == 2
    assert "private_key_encrypted" in capsys.readouterr().err


def test_output_inside_the_source_folder_is_refused(
    source: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build(source, key, source / "b.tar.gz") == 2
    assert "outside the folder" in capsys.readouterr().err


def test_a_file_changed_after_hashing_fails_the_build(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("changed")
    stale = SourceFile("a.txt", tmp_path / "a.txt", 7, "0" * 64)

    with pytest.raises(BuildError, match="changed while"):
        write_archive(
            tmp_path / "b.tar.gz",
            manifest=b"{}",
            signature=b"",
            files=[stale],
            mtime=0,
            entrypoint=None,
        )

    assert list(tmp_path.glob("*.tar.gz")) == []


@pytest.mark.parametrize("vendor", ["acme-flash", "bolt-storage"])
def test_example_bundle_builds_with_every_kind(
    vendor: str, key: Path, tmp_path: Path
) -> None:
    assert build(EXAMPLES / vendor, key, tmp_path / "b.tar.gz") == 0

    manifest = json.loads(members(tmp_path / "b.tar.gz")["manifest.json"])
    kinds = {f["kind"] for f in manifest["files"]}
    assert kinds == {
        "workload",
        "environment",
        "harness",
        "trace",
        "cost_model",
        "report",
        "container_image",
        "runbook",
        "sbom",
    }
    assert (manifest["rfp"], manifest["vendor"]) == ("RFP-DEMO-1", vendor)


# The example harnesses themselves (runner contract, a bad scenario, claims
# reproduced or over-claimed) are tested in tests/examples/.
