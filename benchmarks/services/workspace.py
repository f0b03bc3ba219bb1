"""The Django-free run workspace (``benchmarks.lib.sandbox.workspace``, which the
lab agent uses) with this deployment's limits: the types the server's side of a
run names (``Collection``, ``Collected``, ``Beat``), and ``extract_bundle`` /
``collect_outputs`` that take a ``Bundle`` row or read ``benchmarks.conf`` and
``artifacts.conf``.
"""

from __future__ import annotations

from pathlib import Path

from artifacts.conf import bundle_archive_limits
from artifacts.models import Bundle
from benchmarks import conf
from benchmarks.lib.sandbox import workspace as library
from benchmarks.lib.sandbox.workspace import Beat as Beat
from benchmarks.lib.sandbox.workspace import Collected as Collected
from benchmarks.lib.sandbox.workspace import Collection as Collection
from benchmarks.lib.sandbox.workspace import Workspace as Workspace
from benchmarks.lib.sandbox.workspace import WorkspaceError as WorkspaceError
from benchmarks.lib.sandbox.workspace import extract_archive
from benchmarks.lib.sandbox.workspace import make_executable as make_executable


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
