"""The log's Ed25519 private key in a file: PKCS#8 PEM, mode 0600, never in the
database. Generated on first use; two processes generating at once end up with
the same key (the file appears atomically, with ``os.link``, and the loser reads
the winner's). A key file others may read or write is refused, as ssh does.

``openssl pkey -in FILE -pubout`` reads the same file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_KEY_FILE_BYTES: Final = 16 * 1024


class LogKeyError(RuntimeError):
    """The log key file is missing, unreadable, too open or not an Ed25519 key."""


def load_private_key(path: Path | str, *, create: bool) -> Ed25519PrivateKey:
    """The key in ``path``; if there is none and ``create``, a new one written
    there first (parent folders 0700, file 0600)."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise LogKeyError(f"the log key file {path} is missing")
        _create(path)
    return _load(path)


def _load(path: Path) -> Ed25519PrivateKey:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise LogKeyError(f"the log key {path} is not a regular file")
        if info.st_mode & 0o077:
            raise LogKeyError(
                f"the log key {path} is readable or writable by others "
                f"(mode {stat.S_IMODE(info.st_mode):o}); chmod 600 it"
            )
        with path.open("rb") as handle:
            pem = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as error:
        raise LogKeyError(f"the log key {path} cannot be read: {error}") from None
    if len(pem) > MAX_KEY_FILE_BYTES:
        raise LogKeyError(f"the log key {path} is not a key file (too large)")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise LogKeyError(f"the log key {path} is not a PEM key: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise LogKeyError(f"the log key {path} is not an Ed25519 key")
    return key


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".new-log-key-")
    try:
        os.fchmod(handle, 0o600)
        os.write(handle, pem)
        os.fsync(handle)
        os.close(handle)
        handle = -1
        with contextlib.suppress(FileExistsError):  # another process won: theirs
            os.link(temporary, path)  # atomic: the file appears complete or not
    finally:
        if handle >= 0:
            os.close(handle)
        os.unlink(temporary)
