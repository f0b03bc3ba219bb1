"""Read a bundle archive (tar, tar.gz or zip) without trusting it and without
extracting anything to disk.

``BundleArchive(path).scan()`` walks the archive ONCE, in archive order. It checks
every entry's metadata (paths, entry types, duplicate and colliding names, size,
count and compression limits), records every problem it finds, and yields a
``MemberStream`` for each safe regular file; ``stream.chunks()`` streams that file
in chunks of at most 1 MiB while the limits keep being enforced, so its SHA-256
can be computed (and the bytes stored) without holding it in memory. Hashing a
whole bundle is therefore one sequential pass (``digest_archive``).

Decisions:
- The format is detected by magic bytes, never by the file name.
- Tar headers are parsed here rather than by ``tarfile``: on Python 3.11.7,
  ``tarfile`` parses pax headers with quadratic regular expressions
  (CVE-2024-6232), reads GNU long-name data of any size into memory and stops
  silently at a truncated or corrupt header. The parser follows ``tarfile``'s
  reading of names (ustar prefix, GNU ``L``/``K``, pax ``path``/``linkpath``/
  ``size``) so that the runner, which extracts accepted bundles with ``tarfile``,
  sees the same files; anything ambiguous (two long-name headers for one entry, a
  GNU header with a ustar prefix, sparse files, global ``path`` headers) is refused.
- Zip central directories are read with ``zipfile`` after the end record's entry
  count and directory size were checked; member data is read and inflated here,
  so sizes and CRCs in headers are checked against the bytes, never trusted.
- A leading ``./`` (what ``tar -C dir .`` writes) is dropped; directories are
  checked like files, then ignored.
- ``scan()`` never raises for a bad archive: problems go to ``archive.problems``.
  When a limit is crossed or the archive is unreadable, the walk stops
  (``archive.complete`` stays False) and an unfinished member's stream just ends
  (``stream.complete`` stays False).

Modules: ``base`` (limits, members, path rules, streams), ``reader``
(``BundleArchive``), ``tar`` and ``zip`` (the walkers), ``digest`` (one pass of
digests into a sink). Import from the package.

No Django here: the ``reprogate`` CLI and the offline verifier import this package.
"""

from __future__ import annotations

from artifacts.lib.archive.base import (
    CHUNK_SIZE,
    DEFAULT_LIMITS,
    MAX_PATH_LENGTH,
    ArchiveLimits,
    Format,
    GiB,
    KiB,
    Kind,
    LookAlikes,
    Member,
    MemberStream,
    MiB,
    confusable_problem,
    fold_name,
    path_problems,
    strip_dot_prefix,
)
from artifacts.lib.archive.digest import (
    ArchiveDigest,
    FileDigest,
    MemberSink,
    Sha256Hasher,
    digest_archive,
)
from artifacts.lib.archive.reader import BundleArchive

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_LIMITS",
    "MAX_PATH_LENGTH",
    "ArchiveDigest",
    "ArchiveLimits",
    "BundleArchive",
    "FileDigest",
    "Format",
    "GiB",
    "KiB",
    "Kind",
    "LookAlikes",
    "Member",
    "MemberSink",
    "MemberStream",
    "MiB",
    "Sha256Hasher",
    "confusable_problem",
    "digest_archive",
    "fold_name",
    "path_problems",
    "strip_dot_prefix",
]
