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

No Django here: the ``reprogate`` CLI and the offline verifier import this module.
"""

from __future__ import annotations

import hashlib
import os
import queue
import stat
import struct
import threading
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final, Literal, Protocol

from artifacts.problems import BundleProblem, ProblemList

KiB: Final = 1024
MiB: Final = 1024 * KiB
GiB: Final = 1024 * MiB
CHUNK_SIZE: Final = 1 * MiB
MAX_PATH_LENGTH: Final = 1024  # characters of a bundle path
MAX_EXTENDED_HEADER: Final = 64 * KiB  # a pax or GNU long-name header's data
MAX_TRAILING_BYTES: Final = 1 * MiB  # zero padding accepted after a tar's end
ZIP_DIRECTORY_BYTES_PER_MEMBER: Final = 1 * KiB
THREADED_HASH_BYTES: Final = 4 * MiB  # members this large are hashed in a thread

Format = Literal["tar", "tar.gz", "zip"]
Kind = Literal["file", "dir", "symlink", "hardlink", "device", "fifo", "other"]


@dataclass(frozen=True)
class ArchiveLimits:
    """Limits for one bundle. The compression ratio is checked only once more
    than ``ratio_grace_bytes`` were unpacked: tiny archives compress well."""

    max_member_bytes: int = 2 * GiB
    max_members: int = 10_000
    max_total_bytes: int = 8 * GiB
    max_ratio: float = 200.0
    ratio_grace_bytes: int = 1 * MiB

    def ratio_exceeded(self, unpacked: int, packed: int) -> bool:
        return unpacked > self.ratio_grace_bytes and unpacked > self.max_ratio * max(
            packed, 1
        )


DEFAULT_LIMITS: Final = ArchiveLimits()


@dataclass(frozen=True)
class Member:
    """A safe regular file of the archive. ``name`` is its bundle path."""

    name: str
    size: int  # as the archive header declares it


class _Abort(Exception):
    """Stop reading the archive: ``problem`` says why."""

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.problem = BundleProblem(code, message, path)


def _show(name: str, limit: int = 120) -> str:
    """A name fit for a message: control characters escaped, long names cut."""
    text = "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode()
        for char in name.encode("utf-8", "surrogateescape").decode(
            "utf-8", "backslashreplace"
        )
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- bundle paths ------------------------------------------------------------------


def strip_dot_prefix(name: str) -> str:
    """Drop leading ``./`` components (``tar -C dir .``) and a trailing ``/``."""
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/") or name


def path_problems(name: str) -> list[tuple[str, str]]:
    """``(code, message)`` for every rule ``name`` breaks as a bundle path
    (relative POSIX, no ``..``, no backslash, no control characters, no empty or
    ``.`` components). Backslashes count as separators for the other checks."""
    found: list[tuple[str, str]] = []
    if not name.isprintable():
        found.append(("path_invalid", "The path has control or invisible characters."))
    if "\\" in name:
        found.append(("path_backslash", "The path contains a backslash."))
    posix = name.replace("\\", "/")
    if posix.startswith("/") or (len(posix) > 1 and posix[1] == ":"):
        found.append(("path_absolute", "The path is absolute."))
    parts = posix.lstrip("/").split("/")
    if ".." in parts:
        found.append(("path_traversal", "The path climbs out of the bundle with '..'."))
    if posix.strip("/") in ("", "."):
        found.append(("path_empty", "The path is empty."))
    elif any(part in ("", ".") for part in parts):
        found.append(("path_invalid", "The path has an empty or '.' component."))
    if len(name) > MAX_PATH_LENGTH:
        found.append(
            ("path_invalid", f"The path is over {MAX_PATH_LENGTH} characters.")
        )
    return found


def fold_name(name: str) -> str:
    """The key under which two names collide: NFC, case-folded, NFC again."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


class _Names:
    """Names seen so far: exact duplicates, case/Unicode collisions, and a file
    that another entry uses as a directory."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # folded -> first name
        self.dirs: dict[str, str] = {}  # folded directory -> a name using it

    def clash(self, name: str, is_dir: bool) -> tuple[str, str] | None:
        folded = fold_name(name)
        parents = _parents(folded)
        if not is_dir and folded in self.files:
            first = self.files[folded]
            if first == name:
                return "name_duplicate", "Two entries have this path."
            return "name_collision", f"The path collides with {_show(first)!r}."
        if folded in self.files or (not is_dir and folded in self.dirs):
            other = self.files.get(folded) or self.dirs[folded]
            return (
                "name_collision",
                f"The path is both a file and a directory ({_show(other)!r}).",
            )
        for parent in parents:
            if parent in self.files:
                first = _show(self.files[parent])
                return (
                    "name_collision",
                    f"The path uses the file {first!r} as a folder.",
                )
        for parent in [*parents, folded] if is_dir else parents:
            self.dirs.setdefault(parent, name)
        if not is_dir:
            self.files[folded] = name
        return None


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


# --- member streams ---------------------------------------------------------------


class MemberStream:
    """One safe regular file during ``scan()``. Read ``chunks()`` at most once,
    before the scan moves on; ``complete`` tells whether every byte was read and
    checked."""

    def __init__(
        self, member: Member, reader: Callable[[MemberStream], Iterator[bytes]]
    ) -> None:
        self.member = member
        self.complete = False
        self._reader = reader
        self._started = False
        self._open = True

    @property
    def name(self) -> str:
        return self.member.name

    def chunks(self) -> Iterator[bytes]:
        if self._started or not self._open:
            raise RuntimeError(
                f"{self.member.name!r} can be read once, during its scan"
            )
        self._started = True
        return self._reader(self)


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


def _kind_problem(kind: Kind) -> list[tuple[str, str]]:
    messages = {
        "symlink": ("member_symlink", "The entry is a symbolic link."),
        "hardlink": ("member_hardlink", "The entry is a hard link."),
        "device": ("member_device", "The entry is a device node."),
        "fifo": ("member_fifo", "The entry is a named pipe or socket."),
        "other": (
            "member_unsupported",
            "The entry is not a regular file or directory.",
        ),
    }
    return [messages[kind]] if kind in messages else []


def _too_large(size: int, limits: ArchiveLimits) -> str:
    return (
        f"The file has {size} bytes; a bundle file may have {limits.max_member_bytes}."
    )


_GZIP_MAGIC: Final = b"\x1f\x8b"
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


# --- tar --------------------------------------------------------------------------

_BLOCK: Final = 512
_ZERO_BLOCK: Final = bytes(_BLOCK)
_GNU_MAGIC: Final = b"ustar  \x00"
_TAR_KINDS: Final[Mapping[bytes, Kind]] = {
    b"0": "file",
    b"\x00": "file",
    b"7": "file",
    b"5": "dir",
    b"1": "hardlink",
    b"2": "symlink",
    b"3": "device",
    b"4": "device",
    b"6": "fifo",
}
_EXTENDED: Final = frozenset({b"x", b"g", b"L", b"K"})
_GLOBAL_FORBIDDEN: Final = frozenset({"path", "linkpath", "size"})


def _checksum_ok(block: bytes) -> bool:
    try:
        stored = _tar_number(block[148:156])
    except ValueError:
        return False
    unsigned = 256 + sum(block[:148]) + sum(block[156:])
    signed = 256 + sum(struct.unpack_from("148b8x356b", block))
    return stored in (unsigned, signed)


def _tar_number(data: bytes) -> int:
    """Octal (NUL/space padded) or base-256 (GNU) as ``tarfile`` reads it."""
    if data and data[0] in (0x80, 0xFF):
        if data[0] == 0xFF:
            raise ValueError("negative number")
        return int.from_bytes(data[1:], "big")
    text = data.split(b"\x00", 1)[0].strip(b" ")
    if text and not all(0x30 <= byte <= 0x37 for byte in text):
        raise ValueError("not an octal number")
    return int(text or b"0", 8)


def _cut(data: bytes) -> bytes:
    return data.split(b"\x00", 1)[0]


def _decode(name: bytes) -> tuple[str, bool]:
    try:
        return name.decode("utf-8"), True
    except UnicodeDecodeError:
        return name.decode("utf-8", "surrogateescape"), False


def _pax_records(data: bytes) -> dict[str, bytes]:
    """``"%d %s=%s\\n"`` records, parsed strictly and in linear time."""
    records: dict[str, bytes] = {}
    pos = 0
    while pos < len(data):
        if data[pos] == 0 and not data[pos:].strip(b"\x00"):
            break
        space = data.find(b" ", pos, pos + 21)
        digits = data[pos:space] if space > pos else b""
        if not digits.isdigit():
            raise _Abort("archive_format", "A pax header record has no valid length.")
        end = pos + int(digits)
        keyword, equals, value = data[space + 1 : end - 1].partition(b"=")
        malformed = end <= space + 1 or end > len(data) or data[end - 1] != 0x0A
        if malformed or not equals or not keyword:
            raise _Abort("archive_format", "A pax header record is malformed.")
        key = keyword.decode("utf-8", "replace")
        if key in records:
            raise _Abort("archive_format", f"A pax header sets {key!r} twice.")
        records[key] = value
        pos = end
    return records


@dataclass
class _Extensions:
    """Extended headers waiting for the entry they describe."""

    longname: bytes | None = None
    longlink: bytes | None = None
    pax: dict[str, bytes] | None = None

    def __bool__(self) -> bool:
        return (
            self.longname is not None
            or self.longlink is not None
            or self.pax is not None
        )


class _Source:
    """The archive's (decompressed) bytes, read sequentially, with the
    compression-ratio limit enforced on every piece produced."""

    def __init__(
        self, raw: BinaryIO, *, gzip: bool, limits: ArchiveLimits, packed: int
    ) -> None:
        self._raw = raw
        self._limits = limits
        self._packed = packed
        self._gzip = gzip
        self._inflater = zlib.decompressobj(wbits=31) if gzip else None
        self._pending = b""
        self._buffer = b""
        self._pos = 0
        self.offset = 0  # bytes handed out
        self.produced = 0
        self.garbage_after_gzip = False

    def _input(self) -> bytes:
        data, self._pending = self._pending, b""
        return data or self._raw.read(CHUNK_SIZE)

    def _inflate(self) -> bytes:
        while self._inflater is not None:
            data = self._input()
            if not data:
                raise _Abort(
                    "archive_truncated", "The gzip stream ends before its end marker."
                )
            try:
                out = self._inflater.decompress(data, CHUNK_SIZE)
            except zlib.error as error:
                raise _Abort(
                    "archive_unreadable", f"The gzip data is corrupt ({error})."
                ) from None
            self._pending = self._inflater.unconsumed_tail
            if self._inflater.eof:
                self._pending = self._inflater.unused_data
                self._inflater = self._next_gzip_member()
            if out:
                return out
        return b""

    def _next_gzip_member(self) -> zlib._Decompress | None:
        rest = self._input()
        if len(rest) == 1:
            rest += self._raw.read(1)
        if not rest:
            return None
        if not rest.startswith(_GZIP_MAGIC):
            self.garbage_after_gzip = True
            return None
        self._pending = rest
        return zlib.decompressobj(wbits=31)

    def _produce(self) -> bytes:
        data = self._inflate() if self._gzip else self._raw.read(CHUNK_SIZE)
        self.produced += len(data)
        if self._gzip and self._limits.ratio_exceeded(self.produced, self._packed):
            raise _Abort(
                "compression_ratio",
                f"The archive unpacks to over {self._limits.max_ratio:g} times its "
                f"{self._packed} bytes.",
            )
        return data

    def read_some(self, limit: int) -> bytes:
        if self._pos >= len(self._buffer):
            self._buffer, self._pos = self._produce(), 0
        end = min(len(self._buffer), self._pos + limit)
        piece = self._buffer[self._pos : end]
        self._pos = end
        self.offset += len(piece)
        return piece

    def read_exact(self, size: int) -> bytes:
        parts = []
        while size and (piece := self.read_some(size)):
            parts.append(piece)
            size -= len(piece)
        return b"".join(parts)

    def skip(self, size: int) -> bool:
        while size and (piece := self.read_some(min(size, CHUNK_SIZE))):
            size -= len(piece)
        return size == 0


class _Walker:
    def __init__(self, archive: BundleArchive) -> None:
        self.archive = archive
        self.limits = archive.limits
        self.names = _Names()
        self.aborted = False
        self.members = 0
        self.total = 0

    def stop(self, abort: _Abort) -> None:
        self.aborted = True
        problem = abort.problem
        self.archive.add_problem(problem.code, problem.message, problem.path)

    def count_member(self) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise _Abort(
                "too_many_members",
                f"The archive has more than {self.limits.max_members} entries.",
            )

    def count_bytes(self, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_total_bytes:
            raise _Abort(
                "total_too_large",
                f"The files exceed {self.limits.max_total_bytes} bytes in total.",
            )


class _TarWalker(_Walker):
    def walk(self) -> Iterator[MemberStream]:
        raw = self.archive._file
        raw.seek(0)
        gzip = self.archive.format == "tar.gz"
        self.source = _Source(
            raw, gzip=gzip, limits=self.limits, packed=self.archive.size
        )
        extensions, headers = _Extensions(), 0
        while (block := self._next_header(extensions)) is not None:
            headers += 1
            if headers > 4 * self.limits.max_members + 16:
                raise _Abort("too_many_members", "The archive has too many headers.")
            if block[156:157] in _EXTENDED:
                self._extended(block, extensions)
                continue
            yield from self._member(block, extensions)
            extensions = _Extensions()
            if self.aborted:
                return

    def _next_header(self, extensions: _Extensions) -> bytes | None:
        """The next header block; None at the end-of-archive marker."""
        offset = self.source.offset
        block = self.source.read_exact(_BLOCK)
        if len(block) < _BLOCK:
            raise _Abort(
                "archive_truncated",
                f"The archive ends at byte {offset + len(block)} without its "
                "end-of-archive marker.",
            )
        if block == _ZERO_BLOCK:
            if extensions:
                message = "An extended header describes no entry."
                raise _Abort("archive_format", message)
            self._check_end()
            return None
        if not _checksum_ok(block):
            if not offset:
                raise _Abort("archive_format", "The data is not a tar archive.")
            message = f"The header at byte {offset} is corrupt (checksum mismatch)."
            raise _Abort("archive_unreadable", message)
        return block

    def _extended(self, block: bytes, extensions: _Extensions) -> None:
        typeflag, size = block[156:157], self._number(block[124:136])
        if size > MAX_EXTENDED_HEADER:
            raise _Abort("archive_format", f"An extended header has {size} bytes.")
        data = self.source.read_exact(size)
        if len(data) < size or not self.source.skip(-size % _BLOCK):
            raise _Abort(
                "archive_truncated", "The archive ends inside an extended header."
            )
        if typeflag == b"g":
            records = _pax_records(data)
            if _GLOBAL_FORBIDDEN & records.keys() or _sparse(records):
                raise _Abort(
                    "archive_format", "A global pax header sets a path or size."
                )
            return
        slot = {b"L": "longname", b"K": "longlink", b"x": "pax"}[typeflag]
        if getattr(extensions, slot) is not None:
            raise _Abort(
                "archive_format", "Two extended headers of one kind describe one entry."
            )
        setattr(
            extensions, slot, _pax_records(data) if typeflag == b"x" else _cut(data)
        )

    def _number(self, data: bytes) -> int:
        try:
            return _tar_number(data)
        except ValueError:
            raise _Abort(
                "archive_unreadable", "A tar header has an invalid number."
            ) from None

    def _member(self, block: bytes, ext: _Extensions) -> Iterator[MemberStream]:
        self.count_member()
        typeflag = block[156:157]
        raw_name, size = _cut(block[0:100]), self._number(block[124:136])
        kind: Kind = _TAR_KINDS.get(typeflag, "other")
        if typeflag == b"\x00" and raw_name.endswith(b"/"):
            kind = "dir"
        prefix = _cut(block[345:500])
        if prefix and block[257:265] == _GNU_MAGIC:
            raise _Abort(
                "archive_format", "A GNU tar header carries a ustar name prefix."
            )
        if prefix:
            raw_name = prefix + b"/" + raw_name
        pax = ext.pax or {}
        if ext.longname is not None and "path" in pax:
            raise _Abort("archive_format", "Two long-name headers describe one entry.")
        if typeflag == b"S" or _sparse(pax):
            raise _Abort("member_unsupported", "The archive holds a sparse file.")
        raw_name = ext.longname if ext.longname is not None else raw_name
        if "path" in pax:
            raw_name = pax["path"].rstrip(b"/") or pax["path"]
        if "size" in pax:
            if not pax["size"].isdigit():
                raise _Abort("archive_format", "A pax header has an invalid size.")
            size = int(pax["size"])
        data_size = size if kind in ("file", "other") else 0
        yield from self._offer(raw_name, kind, size, data_size)

    def _offer(
        self, raw_name: bytes, kind: Kind, size: int, data_size: int
    ) -> Iterator[MemberStream]:
        text, utf8 = _decode(raw_name)
        if not utf8:
            self.archive.add_problem(
                "path_invalid", "The path is not UTF-8.", _show(text)
            )
            self.archive.unsafe.add(text)
        name = self.archive.admit(self.names, text, kind, size) if utf8 else None
        if kind == "file":
            self.count_bytes(size)
        state = {"left": data_size}
        if name is not None:
            stream = MemberStream(Member(name, size), lambda s: self._chunks(s, state))
            yield stream
            stream._open = False
            if self.aborted:
                return
        if not self.source.skip(state["left"] + (-data_size % _BLOCK)):
            raise _Abort(
                "archive_truncated", f"The archive ends inside {_show(text)!r}."
            )

    def _chunks(self, stream: MemberStream, state: dict[str, int]) -> Iterator[bytes]:
        try:
            while state["left"] and stream._open:
                piece = self.source.read_some(min(state["left"], CHUNK_SIZE))
                if not piece:
                    raise _Abort(
                        "archive_truncated", f"The archive ends inside {stream.name!r}."
                    )
                state["left"] -= len(piece)
                yield piece
        except _Abort as abort:
            self.stop(abort)
            return
        stream.complete = state["left"] == 0

    def _check_end(self) -> None:
        rest = self.source.read_exact(MAX_TRAILING_BYTES + 1)
        if (
            rest.strip(b"\x00")
            or len(rest) > MAX_TRAILING_BYTES
            or self.source.garbage_after_gzip
        ):
            self.archive.add_problem(
                "archive_trailing_data",
                "Data follows the archive's end-of-archive marker.",
            )


def _sparse(records: Mapping[str, bytes]) -> bool:
    return any(key.startswith("GNU.sparse") for key in records)


# --- zip --------------------------------------------------------------------------

_LOCAL_HEADER: Final = struct.Struct("<4s2B4HL2L2H")
_DEFLATED, _STORED = zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED


def _zip_kind(info: zipfile.ZipInfo) -> Kind:
    # zipfile (and so the runner) takes a name ending in "/" for a directory and
    # anything else for a file, whatever the mode bits say.
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if info.filename.endswith("/"):
        return "dir"
    kinds: dict[int, Kind] = {
        stat.S_IFDIR: "other",
        stat.S_IFLNK: "symlink",
        stat.S_IFCHR: "device",
        stat.S_IFBLK: "device",
        stat.S_IFIFO: "fifo",
        stat.S_IFSOCK: "fifo",
    }
    return kinds.get(file_type, "file")


class _ZipWalker(_Walker):
    def walk(self) -> Iterator[MemberStream]:
        infos, start_dir = self._directory()
        self._check_declared(infos)
        end_of_previous = 0
        for info in sorted(infos, key=lambda item: item.header_offset):
            data_start = self._local_header(info, end_of_previous, start_dir)
            if data_start is not None:
                end_of_previous = data_start + info.compress_size
            name = None if data_start is None else self._admit(info)
            if name is None or data_start is None:
                if not info.filename.endswith("/"):
                    self.archive.unsafe.add(strip_dot_prefix(info.filename))
                continue
            reader = partial(self._chunks, info=info, data_start=data_start)
            stream = MemberStream(Member(name, info.file_size), reader)
            yield stream
            stream._open = False
            if self.aborted:
                return

    def _end_record(self) -> tuple[int, int]:
        """Entry count and directory size from the end record, as ZipFile reads
        it, checked before ZipFile reads the whole directory into memory."""
        try:
            end = zipfile._EndRecData(self.archive._file)  # type: ignore[attr-defined]
        except OSError:  # shorter than an end record
            end = None
        if end is None:
            message = "The zip has no end-of-central-directory record."
            raise _Abort("archive_truncated", message)
        entries, directory_size = end[4], end[5]  # _ECD_ENTRIES_TOTAL, _ECD_SIZE
        budget = self.limits.max_members * ZIP_DIRECTORY_BYTES_PER_MEMBER
        if entries > self.limits.max_members or directory_size > max(budget, 64 * KiB):
            raise _Abort(
                "too_many_members",
                f"The zip lists {entries} entries in {directory_size} bytes; the limit "
                f"is {self.limits.max_members} entries.",
            )
        return entries, directory_size

    def _directory(self) -> tuple[list[zipfile.ZipInfo], int]:
        entries, _ = self._end_record()
        try:
            archive = zipfile.ZipFile(self.archive._file)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
            message = f"The zip's directory is unreadable ({error})."
            raise _Abort("archive_unreadable", message) from None
        except NotImplementedError as error:  # e.g. spanned over several disks
            raise _Abort("archive_format", f"The zip uses {error}.") from None
        infos = archive.infolist()
        for _ in infos:
            self.count_member()
        if len(infos) != entries:
            self.archive.add_problem(
                "archive_format",
                f"The zip's end record counts {entries} entries, "
                f"its directory {len(infos)}.",
            )
        return infos, archive.start_dir

    def _check_declared(self, infos: list[zipfile.ZipInfo]) -> None:
        declared = sum(info.file_size for info in infos)
        if declared > self.limits.max_total_bytes:
            self.archive.add_problem(
                "total_too_large",
                f"The zip declares {declared} bytes in total; the limit is "
                f"{self.limits.max_total_bytes}.",
            )
        if self.limits.ratio_exceeded(declared, self.archive.size):
            self.archive.add_problem(
                "compression_ratio",
                f"The zip declares {declared} bytes unpacked from {self.archive.size}.",
            )

    def _local_header(
        self, info: zipfile.ZipInfo, previous_end: int, start_dir: int
    ) -> int | None:
        """Where the entry's data starts, or None (problem recorded)."""
        local = self._read_local_header(info)
        if local is None:
            return self._refuse(info, "archive_unreadable", "Its local header is gone.")
        flags, name, method, data_start = local
        if name != info.orig_filename or method != info.compress_type:
            message = "Its local header differs from the central directory."
            return self._refuse(info, "archive_format", message)
        data_end = data_start + info.compress_size
        if info.header_offset < previous_end or data_end > start_dir:
            message = "Its data overlaps another entry."
            return self._refuse(info, "member_overlap", message)
        if flags & 0x41:
            return self._refuse(info, "member_encrypted", "The entry is encrypted.")
        return data_start

    def _refuse(self, info: zipfile.ZipInfo, code: str, message: str) -> int | None:
        self.archive.add_problem(code, message, _show(info.filename))
        return None

    def _read_local_header(
        self, info: zipfile.ZipInfo
    ) -> tuple[int, str, int, int] | None:
        """``(flags, name, method, data start)`` of the entry's local header."""
        raw = self.archive._file
        raw.seek(info.header_offset)
        header = raw.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            return None
        fields = _LOCAL_HEADER.unpack(header)
        flags, method, name_length, extra_length = itemgetter(3, 4, 10, 11)(fields)
        encoding = "utf-8" if flags & 0x800 else "cp437"
        name = raw.read(name_length).decode(encoding, "replace")
        data_start = (
            info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        )
        return flags, name, method, data_start

    def _admit(self, info: zipfile.ZipInfo) -> str | None:
        shown = _show(info.orig_filename)
        if "\x00" in info.orig_filename:
            self.archive.add_problem(
                "path_invalid", "The path contains a NUL character.", shown
            )
            return None
        if info.flag_bits & 0x41:
            self.archive.add_problem(
                "member_encrypted", "The entry is encrypted.", shown
            )
            return None
        kind = _zip_kind(info)
        if kind == "file" and info.compress_type not in (_STORED, _DEFLATED):
            self.archive.add_problem(
                "member_unsupported",
                f"Compression method {info.compress_type} is not supported "
                "(use stored or deflate).",
                shown,
            )
            return None
        name = self.archive.admit(self.names, info.filename, kind, info.file_size)
        if name is not None and self.limits.ratio_exceeded(
            info.file_size, info.compress_size
        ):
            self.archive.add_problem(
                "compression_ratio",
                f"The entry declares {info.file_size} bytes from {info.compress_size}.",
                shown,
            )
            self.archive.unsafe.add(name)
            return None
        return name

    def _chunks(
        self, stream: MemberStream, info: zipfile.ZipInfo, data_start: int
    ) -> Iterator[bytes]:
        reader = _ZipData(self, info, data_start)
        try:
            for piece in reader.pieces():
                if not stream._open:
                    return
                yield piece
            stream.complete = reader.finish()
        except _Abort as abort:
            self.stop(abort)
        except _MemberFailed as failed:
            self.archive.add_problem(failed.code, failed.message, stream.name)


class _MemberFailed(Exception):
    """This member is bad; the archive can still be read on."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class _ZipData:
    walker: _ZipWalker
    info: zipfile.ZipInfo
    data_start: int
    produced: int = 0
    crc: int = 0
    inflater: zlib._Decompress | None = field(default=None)

    def pieces(self) -> Iterator[bytes]:
        raw, left = self.walker.archive._file, self.info.compress_size
        position = self.data_start
        if self.info.compress_type == _DEFLATED:
            self.inflater = zlib.decompressobj(wbits=-15)
        while left:
            raw.seek(position)
            data = raw.read(min(left, CHUNK_SIZE))
            if not data:
                raise _MemberFailed("archive_truncated", "The entry's data is cut off.")
            position, left = position + len(data), left - len(data)
            yield from self._unpack(data)

    def _unpack(self, data: bytes) -> Iterator[bytes]:
        while data:
            if self.inflater is None:
                out, data = data, b""
            else:
                try:
                    out = self.inflater.decompress(data, CHUNK_SIZE)
                except zlib.error as error:
                    raise _MemberFailed(
                        "archive_unreadable", f"The entry's data is corrupt ({error})."
                    ) from None
                data = self.inflater.unconsumed_tail
                if self.inflater.eof and self.inflater.unused_data:
                    raise _MemberFailed(
                        "header_size_mismatch",
                        "The entry's compressed size is larger than its data.",
                    )
            if out:
                self._count(len(out))
                self.crc = zlib.crc32(out, self.crc)
                yield out

    def _count(self, size: int) -> None:
        limits, walker = self.walker.limits, self.walker
        self.produced += size
        walker.count_bytes(size)
        if self.produced > limits.max_member_bytes:
            self._lied()
            raise _MemberFailed("member_too_large", _too_large(self.produced, limits))
        if limits.ratio_exceeded(self.produced, self.info.compress_size):
            raise _MemberFailed(
                "compression_ratio",
                f"The entry expands over {limits.max_ratio:g} times when unpacked.",
            )
        if limits.ratio_exceeded(walker.total, self.walker.archive.size):
            raise _Abort(
                "compression_ratio",
                f"The zip unpacks to more than {limits.max_ratio:g} times its size.",
            )

    def _lied(self) -> None:
        if self.produced > self.info.file_size:
            self.walker.archive.add_problem(
                "header_size_mismatch",
                f"The header says {self.info.file_size} bytes; the data has more.",
                _show(self.info.filename),
            )

    def finish(self) -> bool:
        if self.inflater is not None and not self.inflater.eof:
            raise _MemberFailed(
                "archive_unreadable", "The entry's compressed data ends early."
            )
        if self.produced != self.info.file_size:
            raise _MemberFailed(
                "header_size_mismatch",
                f"The header says {self.info.file_size} bytes; "
                f"the data has {self.produced}.",
            )
        if self.crc != self.info.CRC:
            raise _MemberFailed(
                "archive_unreadable", "The entry's data is corrupt (CRC-32 mismatch)."
            )
        return True


# --- one pass: digests of every file ------------------------------------------------


@dataclass(frozen=True)
class FileDigest:
    size: int
    sha256: str


class MemberSink(Protocol):
    """Receives one member's bytes during ``digest_archive`` (e.g. blob storage)."""

    def write(self, chunk: bytes, /) -> object: ...

    def finish(self, digest: FileDigest | None, /) -> object:
        """Called once: the digest if every byte was read and checked, else None."""
        ...


@dataclass
class ArchiveDigest:
    format: Format | None
    complete: bool  # the whole archive was read
    files: dict[str, FileDigest]  # safe members read in full
    rejected: set[str]  # members present but unsafe or unreadable
    kept: dict[str, bytes]  # contents of the members asked for with ``keep``
    oversized: set[str]  # ``keep`` members larger than allowed (not kept)
    problems: list[BundleProblem]

    @property
    def ok(self) -> bool:
        return self.complete and not self.problems


def digest_archive(
    path: str | os.PathLike[str],
    limits: ArchiveLimits = DEFAULT_LIMITS,
    *,
    keep: Mapping[str, int] | None = None,
    sink: Callable[[Member], MemberSink | None] | None = None,
) -> ArchiveDigest:
    """Check and hash every member in one pass. ``keep`` maps member names to the
    most bytes to keep in memory (manifest, signature); ``sink`` may return a
    ``MemberSink`` per member to receive its bytes."""
    keep = keep or {}
    result = ArchiveDigest(None, False, {}, set(), {}, set(), [])
    with BundleArchive(path, limits) as archive:
        for stream in archive.scan():
            _digest_member(stream, keep, sink, result)
        result.format, result.complete = archive.format, archive.complete
        result.rejected |= archive.unsafe
        result.problems = archive.problems
    return result


def _digest_member(
    stream: MemberStream,
    keep: Mapping[str, int],
    sink: Callable[[Member], MemberSink | None] | None,
    result: ArchiveDigest,
) -> None:
    name, size = stream.name, 0
    hasher = _Hasher(threaded=stream.member.size >= THREADED_HASH_BYTES)
    target = sink(stream.member) if sink else None
    kept: list[bytes] | None = [] if name in keep else None
    try:
        for chunk in stream.chunks():
            hasher.update(chunk)
            size += len(chunk)
            if target is not None:
                target.write(chunk)
            if kept is not None:
                kept.append(chunk)
                if size > keep[name]:
                    kept = None
                    result.oversized.add(name)
    finally:
        sha256 = hasher.hexdigest()
    digest = FileDigest(size, sha256) if stream.complete else None
    if target is not None:
        target.finish(digest)
    if digest is None:
        result.rejected.add(name)
        return
    result.files[name] = digest
    if kept is not None:
        result.kept[name] = b"".join(kept)


class _Hasher:
    """SHA-256, optionally in a worker thread: hashlib and zlib release the GIL,
    so hashing one chunk overlaps with reading and inflating the next (measured
    1.8x faster on tar.gz, 1.25x on tar, with two cores)."""

    def __init__(self, *, threaded: bool) -> None:
        self._hash = hashlib.sha256()
        self._chunks: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if threaded:
            self._chunks = queue.Queue(maxsize=4)
            self._thread = threading.Thread(
                target=self._work, args=(self._chunks,), daemon=True
            )
            self._thread.start()

    def _work(self, chunks: queue.Queue[bytes | None]) -> None:
        while (chunk := chunks.get()) is not None:
            self._hash.update(chunk)

    def update(self, chunk: bytes) -> None:
        if self._chunks is None:
            self._hash.update(chunk)
        else:
            self._chunks.put(chunk)

    def hexdigest(self) -> str:
        """The digest; ends the worker thread (call once, also on errors)."""
        if self._chunks is not None and self._thread is not None:
            self._chunks.put(None)
            self._thread.join()
            self._chunks = None
        return self._hash.hexdigest()
