"""The runner's own file handling, without a sandbox in front of it: outputs
are copied out without following links, within limits; a bundle is extracted
only if every file matches its manifest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from artifacts.models import Bundle
from benchmarks.services.workspace import (
    Workspace,
    WorkspaceError,
    collect_outputs,
    extract_bundle,
    make_executable,
)
from tests.artifacts.corpus.build import Entry, write_tar


@pytest.fixture
def space(tmp_path: Path) -> Workspace:
    (tmp_path / "run").mkdir()
    return Workspace.create(tmp_path / "run")


def _noop() -> None:
    return None


def test_collect_outputs_copies_regular_files_only(space: Workspace) -> None:
    out = space.output_dir
    (out / "metrics.json").write_text('{"metrics": []}')
    (out / "logs").mkdir()
    (out / "logs" / "fio.json").write_text("{}")
    (out / "passwd").symlink_to("/etc/passwd")
    (out / "root").symlink_to("/")
    os.mkfifo(out / "pipe")
    os.close(os.open(os.fsencode(out) + b"/bad-\xff", os.O_CREAT | os.O_WRONLY))

    found = collect_outputs(space, _noop)

    assert [f.path for f in found.files] == ["logs/fio.json", "metrics.json"]
    copy = found.by_path()["metrics.json"]
    assert copy.local.parent == space.spool_dir
    assert copy.sha256 == hashlib.sha256(b'{"metrics": []}').hexdigest()
    warnings = " ".join(found.warnings)
    for name in (
        "passwd: not a regular file",
        "root: not a regular file",
        "pipe: not a regular file",
        "its name is not UTF-8",
    ):
        assert name in warnings


def test_collect_outputs_stops_at_the_size_limit(
    space: Workspace, settings: Any
) -> None:
    settings.RUNNER_OUTPUT_LIMIT_BYTES = 10
    (space.output_dir / "a").write_bytes(b"x" * 6)
    (space.output_dir / "b").write_bytes(b"y" * 6)

    found = collect_outputs(space, _noop)

    assert [f.path for f in found.files] == ["a"]
    assert found.total == 6
    assert "b: the outputs exceed 10 bytes" in found.warnings[0]
    assert sorted(os.listdir(space.spool_dir)) == ["0"]


def test_collect_outputs_stops_at_the_file_count(
    space: Workspace, settings: Any
) -> None:
    settings.RUNNER_MAX_OUTPUT_FILES = 2
    for name in "abc":
        (space.output_dir / name).write_text(name)

    found = collect_outputs(space, _noop)

    assert [f.path for f in found.files] == ["a", "b"]
    assert "over 2 output files" in found.warnings[0]


def _bundle(files: dict[str, bytes], listed: dict[str, bytes] | None = None) -> Bundle:
    listed = files if listed is None else listed
    manifest = {
        "files": [
            {
                "path": p,
                "sha256": hashlib.sha256(d).hexdigest(),
                "size": len(d),
                "kind": "harness",
            }
            for p, d in listed.items()
        ],
        "harness": {"entrypoint": "harness/run.sh"},
    }
    return Bundle(manifest=manifest)


def test_extract_bundle_writes_the_listed_files(
    space: Workspace, tmp_path: Path
) -> None:
    files = {"harness/run.sh": b"#!/bin/sh\n", "workloads/a.json": b"{}"}
    archive = write_tar(tmp_path / "b.tar.gz", [Entry(p, d) for p, d in files.items()])
    bundle = _bundle(files)

    extract_bundle(archive, bundle, space.bundle_dir, _noop)
    make_executable(space.bundle_dir, bundle.manifest)

    assert (space.bundle_dir / "workloads" / "a.json").read_bytes() == b"{}"
    assert os.access(space.bundle_dir / "harness" / "run.sh", os.X_OK)


def test_extract_bundle_refuses_files_that_changed(
    space: Workspace, tmp_path: Path
) -> None:
    archive = write_tar(tmp_path / "b.tar.gz", [Entry("harness/run.sh", b"evil\n")])
    bundle = _bundle({}, listed={"harness/run.sh": b"#!/bin/sh\n"})

    with pytest.raises(WorkspaceError) as refused:
        extract_bundle(archive, bundle, space.bundle_dir, _noop)

    assert refused.value.stop_reason == "bundle_corrupt"


def test_extract_bundle_refuses_an_unsafe_archive(
    space: Workspace, tmp_path: Path
) -> None:
    entries = [
        Entry("harness/run.sh", b"x"),
        Entry("harness/link", type="symlink", link="/"),
    ]
    archive = write_tar(tmp_path / "b.tar.gz", entries)

    with pytest.raises(WorkspaceError) as refused:
        extract_bundle(
            archive, _bundle({"harness/run.sh": b"x"}), space.bundle_dir, _noop
        )

    assert refused.value.stop_reason == "bundle_unreadable"
    assert not (space.bundle_dir / "harness" / "link").exists()
