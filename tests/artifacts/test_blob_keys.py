"""A blob's key is ``blobs/ab/<sha256>`` of a lowercase hex digest, and
nothing else is taken for one: hostile digests (traversal, other digits,
another case or length) are neither keys nor made into keys."""

from __future__ import annotations

import hashlib

import pytest

from artifacts.storage.blobs import SHA256_HEX, blob_key, is_blob_key, is_sha256_hex

GOOD = hashlib.sha256(b"x").hexdigest()
HOSTILE = [
    "",
    GOOD[:63],
    GOOD + "0",
    GOOD.upper(),
    GOOD[:62] + "/x",
    "../" + GOOD[3:],
    GOOD[:63] + "\n",
    GOOD[:63] + "\u0660",  # ARABIC-INDIC DIGIT ZERO: a digit, not hex
    GOOD[:63] + "g",
    " " + GOOD[1:],
    GOOD[:63] + "\x00",
]


@pytest.mark.parametrize("text", [GOOD, *HOSTILE])
def test_the_hex_check_is_the_pattern_without_it(text: str) -> None:
    assert is_sha256_hex(text) == bool(SHA256_HEX.fullmatch(text))


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_digest_is_no_key_and_makes_none(text: str) -> None:
    assert not is_blob_key(text, f"blobs/{text[:2]}/{text}")
    with pytest.raises(ValueError, match="not a lowercase SHA-256"):
        blob_key(text)


def test_a_digest_is_a_key_only_at_its_own_place() -> None:
    other = hashlib.sha256(b"y").hexdigest()

    assert is_blob_key(GOOD, blob_key(GOOD))
    assert not is_blob_key(GOOD, blob_key(other))
    assert not is_blob_key(GOOD, f"blobs/{GOOD}")
    assert not is_blob_key(GOOD, f"media/{blob_key(GOOD)}")
