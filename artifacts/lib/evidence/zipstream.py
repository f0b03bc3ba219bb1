"""A zip archive written while it is sent: ``zipfile`` writes into a pipe that
is drained after every chunk, so at most one chunk (plus zlib's window) is in
memory, whatever the size of the members. The pipe cannot seek, so ``zipfile``
writes each member's sizes and CRC after its data (data descriptors); every zip
reader that reads the central directory (Python, Info-ZIP, 7-Zip, libarchive)
accepts that."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Final

CHUNK: Final = 64 * 1024
# 1980-01-01, the earliest zip time: members carry no server time (the package's
# times are in evidence.json), so the same evidence gives the same bytes.
ZIP_EPOCH: Final = (1980, 1, 1, 0, 0, 0)


class _Pipe(io.RawIOBase):
    """A write-only, unseekable sink whose bytes are taken with ``drain()``."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._chunks.append(bytes(data))
        return len(data)

    def drain(self) -> bytes:
        data, self._chunks = b"".join(self._chunks), []
        return data


@dataclass(frozen=True)
class Member:
    """One file of the archive: its name, size (if known) and how to open it."""

    name: str
    open: Callable[[], IO[bytes]]
    size: int | None = None
    compress: bool = True


def bytes_member(name: str, data: bytes) -> Member:
    return Member(name, lambda: io.BytesIO(data), len(data))


def stream_zip(members: Iterable[Member]) -> Iterator[bytes]:
    """The zip's bytes, chunk by chunk, members in the given order."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", allowZip64=True) as archive:
        for member in members:
            info = zipfile.ZipInfo(member.name, date_time=ZIP_EPOCH)
            info.compress_type = (
                zipfile.ZIP_DEFLATED if member.compress else zipfile.ZIP_STORED
            )
            info.external_attr = 0o644 << 16
            big = member.size is None or member.size >= zipfile.ZIP64_LIMIT
            if member.size is not None:
                info.file_size = member.size
            with (
                member.open() as source,
                archive.open(info, "w", force_zip64=big) as target,
            ):
                while chunk := source.read(CHUNK):
                    target.write(chunk)
                    if data := pipe.drain():
                        yield data
            if data := pipe.drain():
                yield data
    if data := pipe.drain():
        yield data
