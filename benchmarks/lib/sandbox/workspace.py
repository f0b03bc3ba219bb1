"""A run's working directory on the runner host, and the files that go in and
out of it, without Django: the callers pass their limits in. Nothing here
trusts the bundle or the harness:

- a bundle archive is copied in while its SHA-256 and size are checked
  (``copy_checked``), then extracted with the ingest's own reader
  (``artifacts.lib.archive.BundleArchive.scan``), never ``tarfile.extractall``:
  every member is written as a new regular file (``O_EXCL | O_NOFOLLOW``) under
  a fresh directory and checked against the manifest's SHA-256 and size;
- the harness's output directory is walked through directory descriptors
  without following links (``O_NOFOLLOW``), regular files only, up to
  ``max_files`` files and ``limit_bytes`` bytes; each file is copied out to a
  spool the harness never saw before it is parsed, stored or uploaded, so a
  link or a file swapped later cannot make the runner read anything else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from artifacts.lib.archive import ArchiveLimits, BundleArchive, path_problems

CHUNK: Final = 1024 * 1024
MAX_OUTPUT_PATH: Final = 500
MAX_DEPTH: Final = 16
Beat = Callable[[], Any]


class WorkspaceError(Exception):
    """The run cannot go on: ``stop_reason`` and a message for people."""

    def __init__(self, stop_reason: str, message: str) -> None:
        super().__init__(message)
        self.stop_reason, self.message = stop_reason, message


@dataclass(frozen=True)
class Workspace:
    root: Path
    bundle_dir: Path  # the harness's cwd: the bundle's files, nothing else
    output_dir: Path  # REPROGATE_OUTPUT_DIR, empty
    spool_dir: Path  # the runner's own copies of the outputs
    trace_dir: Path  # REPROGATE_TRACE_DIR, empty

    @classmethod
    def create(cls, root: Path) -> Workspace:
        space = cls(
            root, root / "bundle", root / "output", root / "spool", root / "trace"
        )
        for folder in (
            space.bundle_dir,
            space.output_dir,
            space.spool_dir,
            space.trace_dir,
        ):
            folder.mkdir(mode=0o755)
        space.spool_dir.chmod(0o700)
        return space


def copy_checked(
    chunks: Iterable[bytes],
    sink: IO[bytes],
    sha256: str,
    size: int,
    beat: Beat,
    where: str = "The stored archive",
) -> None:
    """Write ``chunks`` to ``sink``; ``bundle_corrupt`` unless they hash to
    ``sha256`` and make exactly ``size`` bytes (reading stops past ``size``)."""
    digest, read = hashlib.sha256(), 0
    for chunk in chunks:
        read += len(chunk)
        if read > size:
            raise WorkspaceError(
                "bundle_corrupt",
                f"{where} is longer than the bundle's {size} bytes.",
            )
        digest.update(chunk)
        sink.write(chunk)
        beat()
    if digest.hexdigest() != sha256 or read != size:
        raise WorkspaceError(
            "bundle_corrupt",
            f"{where} does not match the bundle's SHA-256 {sha256} "
            f"(read {read} bytes hashing to {digest.hexdigest()}).",
        )


def _make_parents(root_fd: int, parts: list[str]) -> int:
    """A descriptor of ``parts`` (folders) under ``root_fd``, created as needed;
    never through a link."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(
                part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd
            )
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _write_member(
    root_fd: int, name: str, chunks: Iterator[bytes], beat: Beat
) -> tuple[str, int]:
    *folders, leaf = name.split("/")
    parent = _make_parents(root_fd, folders)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(leaf, flags, 0o644, dir_fd=parent)
    finally:
        os.close(parent)
    digest, size = hashlib.sha256(), 0
    with os.fdopen(fd, "wb") as sink:
        for chunk in chunks:
            digest.update(chunk)
            size += len(chunk)
            sink.write(chunk)
            beat()
    return digest.hexdigest(), size


def extract_archive(
    archive_path: Path,
    files: Iterable[Mapping[str, Any]],
    target: Path,
    limits: ArchiveLimits,
    beat: Beat,
) -> None:
    """Write every member of the archive under ``target`` and check the
    manifest's ``files`` (all present, each with its SHA-256 and size)."""
    expected = {f["path"]: (f["sha256"], f["size"]) for f in files}
    written: dict[str, tuple[str, int]] = {}
    root_fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        with BundleArchive(archive_path, limits) as archive:
            for stream in archive.scan():
                if path_problems(stream.name) or stream.name in written:
                    raise WorkspaceError(
                        "bundle_unreadable", f"Unsafe member {stream.name!r}."
                    )
                written[stream.name] = _write_member(
                    root_fd, stream.name, stream.chunks(), beat
                )
            problems = [p.message for p in archive.problems]
            if problems or not archive.complete:
                raise WorkspaceError(
                    "bundle_unreadable",
                    "The archive cannot be read: "
                    + "; ".join(problems or ["it ends early"]),
                )
    finally:
        os.close(root_fd)
    wrong = sorted(p for p, want in expected.items() if written.get(p) != tuple(want))
    if wrong:
        raise WorkspaceError(
            "bundle_corrupt",
            "Files missing or changed since the bundle was accepted: "
            + ", ".join(wrong[:10]),
        )


def make_executable(bundle_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Archive modes are not kept: the entrypoint and every harness file become
    executable (the runner contract runs the entrypoint directly). A path that
    could leave ``bundle_dir`` (absolute, ``..``) is left alone."""
    harness = {
        f["path"] for f in manifest.get("files") or [] if f.get("kind") == "harness"
    }
    harness.add((manifest.get("harness") or {}).get("entrypoint", ""))
    for relative in sorted(p for p in harness if p and not path_problems(p)):
        path = bundle_dir / relative
        if path.is_file() and not path.is_symlink():
            path.chmod(0o755)


@dataclass(frozen=True)
class Collected:
    path: str  # relative to the output directory, POSIX
    local: Path  # the runner's copy
    sha256: str
    size: int


@dataclass
class Collection:
    files: list[Collected] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    total: int = 0
    # the runner's own files about the run (path: the artefact's name)
    artefacts: list[Collected] = field(default_factory=list)

    def by_path(self) -> dict[str, Collected]:
        return {f.path: f for f in self.files}


@dataclass(frozen=True)
class _Walk:
    space: Workspace
    found: Collection
    beat: Beat
    max_files: int
    limit_bytes: int


def declared_environment(
    files: Iterable[Mapping[str, Any]], bundle_dir: Path, max_bytes: int
) -> dict[str, Any]:
    """The bundle's environment manifest among the manifest's ``files``
    (``environment/manifest.json``, else its first JSON file of kind
    environment), read from the extracted ``bundle_dir``; empty if none is a
    readable JSON object of at most ``max_bytes``."""
    paths = sorted(
        (
            str(f["path"])
            for f in files
            if f.get("kind") == "environment" and not path_problems(str(f["path"]))
        ),
        key=lambda p: (p != "environment/manifest.json", not p.endswith(".json"), p),
    )
    for relative in paths:
        path = bundle_dir / relative
        if path.is_symlink() or not path.is_file() or path.stat().st_size > max_bytes:
            continue
        try:
            document = json.loads(path.read_bytes())
        except (ValueError, OSError):
            continue
        if isinstance(document, dict):
            return document
    return {}


def output_path_problem(relative: str) -> str:
    """Why an output's path is not kept ('' if it is fine): not UTF-8, too long,
    or unsafe (absolute, ``..``, control characters …). The runner's walk of the
    output directory and the server's upload of an agent's outputs both ask."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not UTF-8"
    if len(relative) > MAX_OUTPUT_PATH:
        return f"its path is over {MAX_OUTPUT_PATH} characters"
    problems = path_problems(relative)
    return problems[0][1] if problems else ""


def collect_outputs(
    space: Workspace, beat: Beat, *, max_files: int, limit_bytes: int
) -> Collection:
    """Copy the regular files of the output directory to the spool."""
    walk = _Walk(space, Collection(), beat, max_files, limit_bytes)
    root_fd = os.open(space.output_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _walk(root_fd, "", 0, walk)
    finally:
        os.close(root_fd)
    walk.found.files.sort(key=lambda f: f.path)
    return walk.found


def _walk(dir_fd: int, prefix: str, depth: int, walk: _Walk) -> None:
    found = walk.found
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        relative = f"{prefix}{entry.name}"
        shown = relative.encode("utf-8", "backslashreplace").decode()[:200]
        if entry.is_dir(follow_symlinks=False):
            if depth >= MAX_DEPTH:
                found.warnings.append(
                    f"{shown}/: deeper than {MAX_DEPTH} folders, skipped."
                )
                continue
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            child = os.open(entry.name, flags, dir_fd=dir_fd)
            try:
                _walk(child, f"{relative}/", depth + 1, walk)
            finally:
                os.close(child)
            continue
        problem = "" if entry.is_file(follow_symlinks=False) else "not a regular file"
        problem = problem or output_path_problem(relative)
        if problem:
            found.warnings.append(f"{shown}: {problem}, not kept.")
            continue
        if len(found.files) >= walk.max_files:
            found.warnings.append(
                f"{shown}: over {walk.max_files} output files, not kept."
            )
            continue
        _copy_out(dir_fd, entry.name, relative, walk)


def _copy_out(dir_fd: int, name: str, relative: str, walk: _Walk) -> None:
    found = walk.found
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    fd = os.open(name, flags, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            found.warnings.append(f"{relative}: not a regular file, not kept.")
            return
        local = walk.space.spool_dir / str(len(found.files))
        digest, size, limit = hashlib.sha256(), 0, walk.limit_bytes
        with local.open("xb") as sink:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if found.total + size > limit:
                    found.warnings.append(
                        f"{relative}: the outputs exceed {limit} bytes, not kept."
                    )
                    local.unlink()
                    return
                digest.update(chunk)
                sink.write(chunk)
                walk.beat()
    found.total += size
    found.files.append(Collected(relative, local, digest.hexdigest(), size))
