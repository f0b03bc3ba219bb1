"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 signatures, and the
checkpoints a transparency log signs with them (c2sp.org/tlog-checkpoint).

A checkpoint note::

    reprogate.example/log          origin: names the log, also the key's name
    1024                           tree size, decimal, no leading zero
    3q2+7w…=                       base64 of the 32-byte root hash
                                   blank line
    — reprogate.example/log AbCd…  em dash, key name, base64(key id || signature)

The key id is the first 4 bytes of ``SHA-256(name || "\\n" || 0x01 || public
key)``; a verifier key is written ``<name>+<key id, 8 hex>+<base64(0x01 || public
key)>`` as Go's golang.org/x/mod/sumdb/note does. Signatures by unknown keys are
ignored (witness cosignatures, key rotation); one by the given key must verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from artifacts.lib.transparency.merkle import HASH_SIZE

ED25519: Final = 0x01  # signature type byte (signed-note §Signature types)
EM_DASH: Final = "\u2014"
MAX_NOTE_BYTES: Final = 1024 * 1024
MAX_SIGNATURES: Final = 100
_SIZE = re.compile(r"0|[1-9][0-9]{0,19}")


class NoteError(ValueError):
    """A note or checkpoint is malformed, unsigned by the expected key, or not the
    expected log's; the message says which."""


@dataclass(frozen=True)
class Checkpoint:
    """The body of a checkpoint: which log, how many leaves, which root."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    """Strict standard base64: the only encoding that re-encodes to ``text``."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise NoteError(f"{what} is not base64") from None
    if _b64(data) != text:
        raise NoteError(f"{what} is not canonical base64")
    return data


def check_name(name: str, what: str = "the key name") -> None:
    """Key names and origins: non-empty, no spaces, no ``+``, no control chars."""
    if not isinstance(name, str) or not name:
        raise NoteError(f"{what} is empty")
    if any(ch.isspace() or ch == "+" or ord(ch) < 0x20 or ch == "\x7f" for ch in name):
        raise NoteError(f"{what} {name!r} contains a space, '+' or a control char")


def _check_text(text: str) -> None:
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise NoteError("the note is not valid UTF-8") from None
    if size > MAX_NOTE_BYTES:
        raise NoteError(f"the note is larger than {MAX_NOTE_BYTES} bytes")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise NoteError("the note contains a control character other than newline")


def _public_bytes(public_key: Ed25519PublicKey | bytes) -> bytes:
    if isinstance(public_key, Ed25519PublicKey):
        return public_key.public_bytes_raw()
    if isinstance(public_key, bytes) and len(public_key) == 32:
        return public_key
    raise NoteError("an Ed25519 public key is 32 bytes")


def key_id(name: str, public_key: Ed25519PublicKey | bytes) -> bytes:
    """The 4-byte key id of an Ed25519 note key."""
    material = name.encode() + b"\n" + bytes([ED25519]) + _public_bytes(public_key)
    return hashlib.sha256(material).digest()[:4]


def verifier_key(name: str, public_key: Ed25519PublicKey | bytes) -> str:
    """``<name>+<key id hex>+<base64(0x01 || public key)>``."""
    check_name(name)
    raw = _public_bytes(public_key)
    return f"{name}+{key_id(name, raw).hex()}+{_b64(bytes([ED25519]) + raw)}"


@dataclass(frozen=True)
class VerifierKey:
    name: str
    key_id: bytes
    public_key: Ed25519PublicKey


def parse_verifier_key(text: str) -> VerifierKey:
    """Parse and check a verifier key (its id must match its name and key)."""
    if not isinstance(text, str):
        raise NoteError("the verifier key is not text")
    parts = text.strip().split("+", 2)  # base64 may contain "+", names may not
    if len(parts) != 3:
        raise NoteError("the verifier key is not <name>+<key id>+<base64 key>")
    name, hex_id, encoded = parts
    check_name(name, "the verifier key's name")
    if not re.fullmatch(r"[0-9a-fA-F]{8}", hex_id):
        raise NoteError("the verifier key's id is not 8 hex digits")
    raw = _unb64(encoded, "the verifier key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise NoteError("the verifier key is not an Ed25519 note key")
    if key_id(name, raw[1:]).hex() != hex_id.lower():
        raise NoteError("the verifier key's id does not match its name and key")
    public_key = Ed25519PublicKey.from_public_bytes(raw[1:])
    return VerifierKey(name, bytes.fromhex(hex_id), public_key)


def sign_note(body: str, name: str, private_key: Ed25519PrivateKey) -> str:
    """The signed note: ``body`` (ending in a newline), a blank line, one
    signature line by ``name``'s key."""
    check_name(name)
    _check_text(body)
    if not body.endswith("\n") or body == "\n":
        raise NoteError("a note's text is not empty and ends with a newline")
    signature = private_key.sign(body.encode("utf-8"))
    kid = key_id(name, private_key.public_key())
    return f"{body}\n{EM_DASH} {name} {_b64(kid + signature)}\n"


def open_note(note_text: str | bytes, verifier_key: str) -> str:
    """The note's text once a signature by ``verifier_key`` verifies."""
    key = parse_verifier_key(verifier_key)
    if isinstance(note_text, bytes):
        try:
            note_text = note_text.decode("utf-8")
        except UnicodeDecodeError:
            raise NoteError("the note is not valid UTF-8") from None
    if not isinstance(note_text, str):
        raise NoteError("the note is not text")
    _check_text(note_text)
    split = note_text.rfind("\n\n")
    if split < 0:
        raise NoteError("the note has no blank line before its signatures")
    text, block = note_text[: split + 1], note_text[split + 2 :]
    if not block or not block.endswith("\n"):
        raise NoteError("the note's signature block is empty or unterminated")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"the note has more than {MAX_SIGNATURES} signatures")
    verified = False
    for number, line in enumerate(lines, start=1):
        name, signature = _signature_line(line, number)
        if name != key.name or signature[:4] != key.key_id:
            continue  # another key's signature (a witness, an older key): ignored
        try:
            key.public_key.verify(signature[4:], text.encode("utf-8"))
        except InvalidSignature:
            raise NoteError(f"the signature by {name} does not verify") from None
        verified = True
    if not verified:
        raise NoteError(f"the note has no signature by the key {verifier_key.strip()}")
    return text


def _signature_line(line: str, number: int) -> tuple[str, bytes]:
    prefix = EM_DASH + " "
    if not line.startswith(prefix):
        raise NoteError(f"signature line {number} does not start with an em dash")
    name, _, encoded = line[len(prefix) :].partition(" ")
    check_name(name, f"the key name on signature line {number}")
    signature = _unb64(encoded, f"the signature on line {number}")
    if len(signature) < 5:
        raise NoteError(f"the signature on line {number} is too short")
    return name, signature


def format_checkpoint(checkpoint: Checkpoint) -> str:
    """The checkpoint's note text (what gets signed)."""
    check_name(checkpoint.origin, "the origin")
    if not isinstance(checkpoint.size, int) or checkpoint.size < 0:
        raise NoteError("the tree size is not a non-negative integer")
    if len(checkpoint.root_hash) != HASH_SIZE:
        raise NoteError(f"the root hash is not {HASH_SIZE} bytes")
    for extension in checkpoint.extensions:
        if not extension or "\n" in extension:
            raise NoteError("an extension line is empty or spans lines")
    lines = [checkpoint.origin, str(checkpoint.size), _b64(checkpoint.root_hash)]
    return "".join(f"{line}\n" for line in (*lines, *checkpoint.extensions))


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint body, strictly (no signature check: see ``open_checkpoint``)."""
    if not text.endswith("\n"):
        raise NoteError("the checkpoint does not end with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise NoteError("a checkpoint is at least three non-empty lines")
    origin, size, root, *extensions = lines
    check_name(origin, "the origin")
    if not _SIZE.fullmatch(size):
        raise NoteError(f"the tree size {size!r} is not a decimal without leading 0")
    root_hash = _unb64(root, "the root hash")
    if len(root_hash) != HASH_SIZE:
        raise NoteError(f"the root hash is {len(root_hash)} bytes, not {HASH_SIZE}")
    return Checkpoint(origin, int(size), root_hash, tuple(extensions))


def open_checkpoint(
    note_text: str | bytes, verifier_key: str, *, origin: str | None = None
) -> Checkpoint:
    """The checkpoint in a signed note, once its signature by ``verifier_key``
    verifies and its origin is ``origin`` (by default: the key's name)."""
    text = open_note(note_text, verifier_key)
    checkpoint = parse_checkpoint(text)
    expected = origin if origin is not None else parse_verifier_key(verifier_key).name
    if checkpoint.origin != expected:
        raise NoteError(
            f"the checkpoint is from the log {checkpoint.origin!r}, not {expected!r}"
        )
    return checkpoint
