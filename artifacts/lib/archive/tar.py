"""The tar and tar.gz walker: headers parsed here, not by ``tarfile`` (see the
package docstring), gzip inflated with limits. No Django."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, Final

from artifacts.lib.archive.base import (
    _GZIP_MAGIC,
    CHUNK_SIZE,
    MAX_EXTENDED_HEADER,
    MAX_TRAILING_BYTES,
    ArchiveLimits,
    Kind,
    Member,
    MemberStream,
    _Abort,
    _show,
    _Walker,
)
from artifacts.lib.archive.inflate import INFLATE_ERRORS, Inflater, gzip_inflater

KiB: Final = 1024


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
    if stored == 256 + sum(block[:148]) + sum(block[156:]):
        return True  # the usual (unsigned) sum; the signed one only if it fails
    return stored == 256 + sum(struct.unpack_from("148b8x356b", block))


def _tar_number(data: bytes) -> int:
    """Octal (NUL/space padded) or base-256 (GNU) as ``tarfile`` reads it."""
    if data and data[0] in (0x80, 0xFF):
        if data[0] == 0xFF:
            raise ValueError("negative number")
        return int.from_bytes(data[1:], "big")
    text = data.split(b"\x00", 1)[0].strip(b" ")
    if text.strip(b"01234567"):  # a byte that is no octal digit
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
        self._inflater = gzip_inflater() if gzip else None
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
            except INFLATE_ERRORS as error:
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

    def _next_gzip_member(self) -> Inflater | None:
        rest = self._input()
        if len(rest) == 1:
            rest += self._raw.read(1)
        if not rest:
            return None
        if not rest.startswith(_GZIP_MAGIC):
            self.garbage_after_gzip = True
            return None
        self._pending = rest
        return gzip_inflater()

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
