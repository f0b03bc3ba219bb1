"""``BundleArchive``: an archive opened for checking (format detection, the
per-entry checks shared by tar and zip, ``scan()``). No Django."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final

from artifacts.lib.archive.base import (
    _GZIP_MAGIC,
    DEFAULT_LIMITS,
    ArchiveLimits,
    Format,
    Kind,
    MemberStream,
    _Abort,
    _kind_problem,
    _Names,
    _show,
    _too_large,
    path_problems,
    strip_dot_prefix,
)
from artifacts.lib.archive.tar import _checksum_ok, _TarWalker
from artifacts.lib.archive.zip import _ZipWalker
from artifacts.lib.problems import BundleProblem, ProblemList

KiB: Final = 1024


class BundleArchive:
    """An archive opened for checking. Use as a context manager; run one
    ``scan()`` at a time (they share the file handle)."""

    def __init__(
        self, path: str | os.PathLike[str], limits: ArchiveLimits = DEFAULT_LIMITS
    ) -> None:
        self.path = Path(path)
        self.limits = limits
        self.complete = False
        self.unsafe: set[str] = set()  # entries seen but not offered for reading
        self._problems = ProblemList()
        self._file: BinaryIO = self.path.open("rb")
        self.size = os.fstat(self._file.fileno()).st_size
        self.format: Format | None = self._detect()

    def __enter__(self) -> BundleArchive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    @property
    def problems(self) -> list[BundleProblem]:
        return self._problems.as_list()

    def add_problem(self, code: str, message: str, path: str | None = None) -> None:
        self._problems.add(code, message, path)

    def _detect(self) -> Format | None:
        self._file.seek(0)
        head = self._file.read(512)
        detected = _detect_format(head)
        if isinstance(detected, str):
            return detected
        self.add_problem(detected.problem.code, str(detected))
        return None

    def scan(self) -> Iterator[MemberStream]:
        """Walk the archive once; yield each safe regular file in archive order."""
        if self.format is None:
            return
        self.unsafe.clear()
        walker = _ZipWalker(self) if self.format == "zip" else _TarWalker(self)
        try:
            yield from walker.walk()
        except _Abort as abort:
            walker.stop(abort)
        self.complete = not walker.aborted

    def iter_chunks(self, name: str) -> Iterator[bytes]:
        """The chunks of one member (for tar archives a scan up to it). Raises
        ``KeyError`` if no safe member has this name."""
        for stream in self.scan():
            if stream.name == name:
                yield from stream.chunks()
                return
        raise KeyError(name)

    # -- shared member checks ----------------------------------------------------

    def admit(self, names: _Names, raw: str, kind: Kind, size: int) -> str | None:
        """Record the problems of one entry; its bundle path if it is a safe
        regular file to read, else None."""
        name = strip_dot_prefix(raw)
        if kind == "dir" and name in ("", "."):
            return None  # the bundle root, as `tar -C dir .` writes it
        problems = path_problems(name)
        if kind == "file" and raw.endswith("/"):
            problems.append(("path_invalid", "A file's path ends with '/'."))
        if not problems and (clash := names.clash(name, kind == "dir")):
            problems.append(clash)
        problems.extend(_kind_problem(kind))
        if kind == "file" and size > self.limits.max_member_bytes:
            problems.append(("member_too_large", _too_large(size, self.limits)))
        for code, message in problems:
            self.add_problem(code, message, _show(raw))
        if kind == "dir":
            return None
        if problems or kind != "file":
            self.unsafe.add(name)
            return None
        return name


_OTHER_FORMATS: Final = (
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"(\xb5/\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip"),
    (b"Rar!", "RAR"),
    (b"%PDF", "PDF"),
)


def _detect_format(head: bytes) -> Format | _Abort:
    if head.startswith(_GZIP_MAGIC):
        return "tar.gz"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if len(head) == 512 and _checksum_ok(head):
        return "tar"
    if not head:
        return _Abort("archive_format", "The file is empty.")
    for magic, name in _OTHER_FORMATS:
        if head.startswith(magic):
            return _Abort(
                "archive_format",
                f"This is a {name} file; bundles are tar, tar.gz or zip archives.",
            )
    return _Abort("archive_format", "This is not a tar, tar.gz or zip archive.")
