"""Deflate decoding for the walkers: Intel ISA-L (``isal``) where installed, else
the standard library's ``zlib``. No Django.

``isal.isal_zlib`` has ``zlib``'s API (``decompressobj`` with ``max_length``,
``unconsumed_tail``, ``unused_data``, ``eof``; ``crc32``) and checks the gzip
trailer the same way, but inflates with SIMD and computes CRC-32 with carry-less
multiplication: on the development VM a 1 GiB tar.gz inflated in 0.70 s instead
of 0.90 s, and CRC-32 over 1 GiB took 0.05 s instead of 0.52 s (beyond reading).
Both libraries release the GIL while they work. The fallback keeps the archive
reader working where no ``isal`` wheel exists (it is an ordinary dependency, so
that is rare).
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Final, Protocol

_impl: ModuleType
try:
    from isal import isal_zlib as _impl
except ImportError:  # pragma: no cover - isal is a dependency; this is a fallback
    _impl = zlib

LIBRARY: Final = "isal" if _impl is not zlib else "zlib"
# What a corrupt stream raises (isal's error is not a subclass of zlib.error).
INFLATE_ERRORS: Final[tuple[type[Exception], ...]] = tuple({zlib.error, _impl.error})


class Inflater(Protocol):
    eof: bool
    unconsumed_tail: bytes
    unused_data: bytes

    def decompress(self, data: bytes, max_length: int = 0, /) -> bytes: ...


def gzip_inflater() -> Inflater:
    """One gzip member (header, deflate data, CRC-32 and size checked)."""
    return _impl.decompressobj(wbits=31)


def raw_inflater() -> Inflater:
    """Raw deflate data (a zip entry's)."""
    return _impl.decompressobj(wbits=-15)


def crc32(data: bytes, value: int = 0) -> int:
    return _impl.crc32(data, value)
