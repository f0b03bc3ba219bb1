"""The Django-free workspace of the agent's runs
(``benchmarks.lib.sandbox.workspace``): limits are the caller's, and nothing the
server hands out reaches outside the run's folder."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest

from benchmarks.lib.sandbox.reporting import json_safe
from benchmarks.lib.sandbox.workspace import (
    Workspace,
    WorkspaceError,
    collect_outputs,
    copy_checked,
    declared_environment,
    make_executable,
)


@pytest.fixture
def space(tmp_path: Path) -> Workspace:
    (tmp_path / "run").mkdir()
    return Workspace.create(tmp_path / "run")


def _noop() -> None:
    return None


def test_the_output_limits_are_the_caller_s(space: Workspace) -> None:
    for name in ("a", "b", "c"):
        (space.output_dir / name).write_bytes(b"x" * 10)

    by_count = collect_outputs(space, _noop, max_files=2, limit_bytes=1000)

    assert [f.path for f in by_count.files] == ["a", "b"]
    assert "c: over 2 output files, not kept." in by_count.warnings
    for f in by_count.files:
        f.local.unlink()

    by_size = collect_outputs(space, _noop, max_files=10, limit_bytes=25)

    assert [f.path for f in by_size.files] == ["a", "b"]
    assert by_size.total == 20
    assert "c: the outputs exceed 25 bytes, not kept." in by_size.warnings


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"y" * 100, "does not match"), (b"x" * 99, "read 99 bytes"),
     (b"x" * 101, "longer than")],
)  # fmt: skip
def test_a_copy_that_is_not_the_expected_bytes_is_corrupt(
    data: bytes, says: str
) -> None:
    want = b"x" * 100
    sink = io.BytesIO()

    with pytest.raises(WorkspaceError) as caught:
        copy_checked(
            iter([data[:50], data[50:]]), sink, hashlib.sha256(want).hexdigest(),
            len(want), _noop,
        )  # fmt: skip

    assert caught.value.stop_reason == "bundle_corrupt"
    assert says in caught.value.message


def test_a_copy_of_the_expected_bytes_is_kept() -> None:
    want, sink = b"x" * 100, io.BytesIO()

    copy_checked(iter([want]), sink, hashlib.sha256(want).hexdigest(), 100, _noop)

    assert sink.getvalue() == want


def test_make_executable_stays_inside_the_bundle(
    space: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text("#!/bin/sh\n")
    outside.chmod(0o600)
    (space.bundle_dir / "run.sh").write_text("#!/bin/sh\n")
    manifest = {
        "files": [
            {"path": "../../outside.sh", "kind": "harness"},
            {"path": str(outside), "kind": "harness"},
        ],
        "harness": {"entrypoint": "run.sh"},
    }

    make_executable(space.bundle_dir, manifest)

    assert os.stat(outside).st_mode & 0o777 == 0o600
    assert os.stat(space.bundle_dir / "run.sh").st_mode & 0o777 == 0o755


def _env_file(space: Workspace, relative: str, content: bytes) -> dict[str, str]:
    path = space.bundle_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return {"path": relative, "kind": "environment"}


def test_the_declared_environment_is_the_manifest_json_first(space: Workspace) -> None:
    files = [
        _env_file(space, "environment/a.json", b'{"os": "a"}'),
        _env_file(space, "environment/manifest.json", b'{"os": "manifest"}'),
        {"path": "other.json", "kind": "trace"},
    ]

    assert declared_environment(files, space.bundle_dir, 1000) == {"os": "manifest"}


def test_an_unreadable_declared_environment_is_passed_over(space: Workspace) -> None:
    (space.root / "outside.json").write_text('{"os": "outside"}')
    (space.bundle_dir / "environment").mkdir()
    (space.bundle_dir / "environment" / "manifest.json").symlink_to(
        space.root / "outside.json"
    )
    files = [
        {"path": "environment/manifest.json", "kind": "environment"},
        {"path": "../outside.json", "kind": "environment"},
        _env_file(space, "environment/big.json", json.dumps({"x": "y" * 50}).encode()),
        _env_file(space, "environment/broken.json", b"{not json"),
        _env_file(space, "environment/list.json", b"[1, 2]"),
        {"path": "environment/missing.json", "kind": "environment"},
        _env_file(space, "environment/z.json", b'{"os": "last"}'),
    ]

    assert declared_environment(files, space.bundle_dir, 40) == {"os": "last"}
    assert declared_environment(files[:-1], space.bundle_dir, 40) == {}


def test_json_safe_replaces_nul_and_stringifies_the_rest() -> None:
    assert json_safe({"a\x00": ["b\x00c", Path("/x")]}) == {
        "a\ufffd": ["b\ufffdc", "/x"]
    }
