"""The zip walker: the central directory checked before ``zipfile`` reads it,
member data read and inflated here, sizes and CRCs checked. No Django."""

from __future__ import annotations

import stat
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from typing import Final

from artifacts.lib.archive.base import (
    CHUNK_SIZE,
    ZIP_DIRECTORY_BYTES_PER_MEMBER,
    Kind,
    Member,
    MemberStream,
    _Abort,
    _show,
    _too_large,
    _Walker,
    strip_dot_prefix,
)
from artifacts.lib.archive.inflate import INFLATE_ERRORS, Inflater, crc32, raw_inflater

KiB: Final = 1024


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
    inflater: Inflater | None = field(default=None)

    def pieces(self) -> Iterator[bytes]:
        raw, left = self.walker.archive._file, self.info.compress_size
        position = self.data_start
        if self.info.compress_type == _DEFLATED:
            self.inflater = raw_inflater()
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
                except INFLATE_ERRORS as error:
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
                self.crc = crc32(out, self.crc)
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
