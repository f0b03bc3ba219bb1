"""Shared pieces of the archive reader: limits, members, bundle path rules,
name collisions, member streams and the walk's counters. No Django."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Final, Literal, Protocol

from artifacts.lib.confusables import skeleton
from artifacts.lib.problems import BundleProblem

KiB: Final = 1024
MiB: Final = 1024 * KiB
GiB: Final = 1024 * MiB
CHUNK_SIZE: Final = 1 * MiB
MAX_PATH_LENGTH: Final = 1024  # characters of a bundle path
MAX_EXTENDED_HEADER: Final = 64 * KiB  # a pax or GNU long-name header's data
MAX_TRAILING_BYTES: Final = 1 * MiB  # zero padding accepted after a tar's end
ZIP_DIRECTORY_BYTES_PER_MEMBER: Final = 1 * KiB
THREADED_HASH_BYTES: Final = 4 * MiB  # members this large are hashed in a thread

_GZIP_MAGIC: Final = b"\x1f\x8b"

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
    ``.`` components, Unicode NFC). Backslashes count as separators for the other
    checks."""
    found: list[tuple[str, str]] = []
    if not name.isprintable():
        found.append(("path_invalid", "The path has control or invisible characters."))
    if unicodedata.is_normalized("NFC", name) is False:
        found.append(("path_not_nfc", NOT_NFC))
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


NOT_NFC: Final = (
    "The path is not in Unicode normalisation form C (a letter and its accent "
    "stored apart): save it with composed characters."
)


def confusable_problem(name: str, other: str) -> tuple[str, str]:
    """``path_confusable`` for ``name``, which looks like the earlier ``other``."""
    return (
        "path_confusable",
        f"The path {_show(name)!r} looks the same as {_show(other)!r} (Unicode "
        "look-alike characters, such as a Cyrillic a, U+0430, for a Latin a).",
    )


class LookAlikes:
    """Paths seen so far, by their Unicode TR39 skeletons: as written and case-folded
    (``I`` looks like ``l``; the Cyrillic capital A, U+0410, folds to the
    Cyrillic small a, U+0430, that looks like the Latin ``a``)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}  # skeleton -> first path

    def first_like(self, name: str) -> str | None:
        """An earlier, different path that looks the same as ``name`` (None if
        there is none); ``name`` is remembered either way."""
        keys = {skeleton(name), skeleton(fold_name(name))}
        earlier = [self.seen[key] for key in keys if key in self.seen]
        for key in keys:
            self.seen.setdefault(key, name)
        return next((first for first in earlier if first != name), None)


def fold_name(name: str) -> str:
    """The key under which two names collide: NFC, case-folded, NFC again."""
    if name.isascii():  # NFC leaves ASCII as it is; its case folding is lower()
        return name.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


class _Names:
    """Names seen so far: exact duplicates, case/Unicode collisions, and a file
    that another entry uses as a directory."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # folded -> first name
        self.dirs: dict[str, str] = {}  # folded directory -> a name using it
        self.look_alikes = LookAlikes()

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
        if not is_dir and (like := self.look_alikes.first_like(name)):
            return confusable_problem(name, like)
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


class WalkedArchive(Protocol):
    """What the tar and zip walkers use of the archive they walk: the
    ``reader.BundleArchive`` (which imports them, so they name this instead)."""

    limits: ArchiveLimits
    format: Format | None
    size: int
    unsafe: set[str]
    _file: BinaryIO

    def add_problem(self, code: str, message: str, path: str | None = None) -> None: ...

    def admit(self, names: _Names, raw: str, kind: Kind, size: int) -> str | None: ...


class _Walker:
    def __init__(self, archive: WalkedArchive) -> None:
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
