"""A run's working directory on the runner host, for the server's own lab
workers: the Django-free file handling (``benchmarks.lib.sandbox.workspace``) with
this deployment's limits and the bundle read from blob storage.

``Workspace``, ``WorkspaceError``, ``make_executable``, ``Collection`` and
``Collected`` are the library's; ``fetch_archive``, ``extract_bundle`` and
``collect_outputs`` take a ``Bundle`` row or read ``benchmarks.conf`` and
``artifacts.conf``.
"""

from __future__ import annotations

from pathlib import Path

from artifacts.conf import bundle_archive_limits
from artifacts.models import Bundle
from artifacts.storage.blobs import blob_open
from benchmarks import conf
from benchmarks.lib.sandbox import workspace as library
from benchmarks.lib.sandbox.workspace import CHUNK, copy_checked, extract_archive
from benchmarks.lib.sandbox.workspace import Beat as Beat
from benchmarks.lib.sandbox.workspace import Collected as Collected
from benchmarks.lib.sandbox.workspace import Collection as Collection
from benchmarks.lib.sandbox.workspace import Workspace as Workspace
from benchmarks.lib.sandbox.workspace import WorkspaceError as WorkspaceError
from benchmarks.lib.sandbox.workspace import make_executable as make_executable


def fetch_archive(bundle: Bundle, target: Path, beat: Beat) -> None:
    """Copy the bundle's archive out of blob storage, checking its digest."""
    if bundle.archive_blob is None:
        raise WorkspaceError("bundle_unreadable", "The bundle has no archive.")
    with blob_open(bundle.archive_blob) as source, target.open("wb") as sink:
        copy_checked(
            iter(lambda: source.read(CHUNK), b""),
            sink,
            bundle.sha256,
            bundle.size,
            beat,
        )


def extract_bundle(
    archive_path: Path, bundle: Bundle, target: Path, beat: Beat
) -> None:
    """Write every member of the archive under ``target`` and check the
    manifest's files (all present, each with its SHA-256 and size)."""
    files = (bundle.manifest or {}).get("files") or []
    extract_archive(archive_path, files, target, bundle_archive_limits(), beat)


def collect_outputs(space: Workspace, beat: Beat) -> Collection:
    """Copy the regular files of the output directory to the spool."""
    return library.collect_outputs(
        space,
        beat,
        max_files=conf.max_output_files(),
        limit_bytes=conf.output_limit_bytes(),
    )
