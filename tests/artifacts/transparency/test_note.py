"""C2SP signed notes and checkpoints, including golang.org/x/mod/sumdb/note's own
test vectors (note_test.go: PeterNeumann and EnochRoot keys), so a note signed
here opens with Go's ``note.Open`` and the other way round."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from artifacts.lib.transparency import note
from artifacts.lib.transparency.note import Checkpoint, NoteError

PETER_SEED = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
PETER_KEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_KEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvq"
    "fqdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01o"
    "OTGwnWLox33WWd1RvMc+QQ=\n"
)
ORIGIN = "reprogate.test/log"
ROOT = hashlib.sha256(b"root").digest()


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def test_sign_note_matches_go_byte_for_byte() -> None:
    peter = Ed25519PrivateKey.from_private_bytes(PETER_SEED)

    signed = note.sign_note(TEXT, "PeterNeumann", peter)

    assert signed == TEXT + "\n" + PETER_SIG
    assert note.verifier_key("PeterNeumann", peter.public_key()) == PETER_KEY


def test_open_note_ignores_signatures_of_other_keys() -> None:
    signed = TEXT + "\n" + PETER_SIG + ENOCH_SIG

    assert note.open_note(signed, PETER_KEY) == TEXT
    assert note.open_note(signed, ENOCH_KEY) == TEXT


def test_open_note_refuses_a_note_without_the_keys_signature() -> None:
    with pytest.raises(NoteError, match="no signature by the key EnochRoot"):
        note.open_note(TEXT + "\n" + PETER_SIG, ENOCH_KEY)


def test_open_note_refuses_a_bad_signature_by_the_key() -> None:
    mangled = PETER_SIG[:60] + "ABCD" + PETER_SIG[60:]

    with pytest.raises(NoteError, match="signature by PeterNeumann does not verify"):
        note.open_note(TEXT + "\n" + mangled, PETER_KEY)


def test_open_note_refuses_a_changed_text() -> None:
    changed = TEXT.replace("answer", "Answer") + "\n" + PETER_SIG

    with pytest.raises(NoteError, match="does not verify"):
        note.open_note(changed, PETER_KEY)


@pytest.mark.parametrize(
    "malformed",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + "— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNI=\n",
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG * 101,
        TEXT + "\n" + PETER_SIG.replace("AM=", "AM"),
    ],
)
def test_open_note_refuses_malformed_notes(malformed: str) -> None:
    with pytest.raises(NoteError):
        note.open_note(malformed, PETER_KEY)


def test_open_note_refuses_bytes_that_are_not_utf8() -> None:
    with pytest.raises(NoteError, match="not valid UTF-8"):
        note.open_note(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), PETER_KEY)


def _manglings(key: str) -> list[str]:
    """Go's TestNewVerifier: every proper substring, every byte incremented."""
    data = key.encode()
    cuts = {data[i:j] for i in range(len(data)) for j in range(i + 1, len(data) + 1)}
    cuts.discard(data)
    bumped = {data[:i] + bytes([data[i] + 1]) + data[i + 1 :] for i in range(len(data))}
    return [m.decode("latin-1") for m in cuts | bumped]


def test_verifier_key_manglings_are_refused() -> None:
    for mangled in _manglings(PETER_KEY):
        with pytest.raises(NoteError):
            note.parse_verifier_key(mangled)


def test_key_id_is_the_c2sp_formula(key: Ed25519PrivateKey) -> None:
    raw = key.public_key().public_bytes_raw()

    expected = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + raw).digest()[:4]

    assert note.key_id(ORIGIN, key.public_key()) == expected
    assert note.verifier_key(ORIGIN, raw).split("+")[1] == expected.hex()


@pytest.mark.parametrize("name", ["", "a b", "a+b", "tab\there", "nbsp\u00a0"])
def test_names_with_spaces_or_plus_are_refused(
    name: str, key: Ed25519PrivateKey
) -> None:
    with pytest.raises(NoteError):
        note.sign_note(TEXT, name, key)


@pytest.mark.parametrize("body", ["", "\n", "no final newline", "bell\x07\n"])
def test_sign_note_refuses_a_bad_body(body: str, key: Ed25519PrivateKey) -> None:
    with pytest.raises(NoteError):
        note.sign_note(body, ORIGIN, key)


def _signed(checkpoint: Checkpoint, key: Ed25519PrivateKey) -> tuple[str, str]:
    text = note.sign_note(note.format_checkpoint(checkpoint), ORIGIN, key)
    return text, note.verifier_key(ORIGIN, key.public_key())


def test_checkpoint_body_is_the_c2sp_format() -> None:
    body = note.format_checkpoint(Checkpoint(ORIGIN, 1024, ROOT))

    assert body == f"{ORIGIN}\n1024\n{base64.b64encode(ROOT).decode()}\n"


def test_checkpoint_round_trips_with_extensions(key: Ed25519PrivateKey) -> None:
    checkpoint = Checkpoint(ORIGIN, 7, ROOT, ("ext one", "ext two"))

    text, vkey = _signed(checkpoint, key)

    assert note.open_checkpoint(text, vkey) == checkpoint


def test_empty_tree_checkpoint_is_size_0(key: Ed25519PrivateKey) -> None:
    text, vkey = _signed(Checkpoint(ORIGIN, 0, hashlib.sha256().digest()), key)

    assert note.open_checkpoint(text, vkey).size == 0


def test_open_checkpoint_refuses_another_logs_origin(key: Ed25519PrivateKey) -> None:
    text = note.sign_note(
        note.format_checkpoint(Checkpoint("other.example/log", 3, ROOT)), ORIGIN, key
    )
    vkey = note.verifier_key(ORIGIN, key.public_key())

    with pytest.raises(NoteError, match=r"from the log 'other\.example/log'"):
        note.open_checkpoint(text, vkey)


def test_open_checkpoint_refuses_an_unknown_key(key: Ed25519PrivateKey) -> None:
    text, _ = _signed(Checkpoint(ORIGIN, 3, ROOT), key)
    stranger = note.verifier_key(ORIGIN, Ed25519PrivateKey.generate().public_key())

    with pytest.raises(NoteError, match="no signature by the key"):
        note.open_checkpoint(text, stranger)


B64_ROOT = base64.b64encode(ROOT).decode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f"{ORIGIN}\n07\n{B64_ROOT}\n", "leading 0"),
        (f"{ORIGIN}\n-7\n{B64_ROOT}\n", "leading 0"),
        (f"{ORIGIN}\n\u0667\n{B64_ROOT}\n", "leading 0"),  # an Arabic-Indic 7
        (f"{ORIGIN}\n7\n{B64_ROOT[:-1]}\n", "not base64"),
        (f"{ORIGIN}\n7\n{base64.b64encode(ROOT[:31]).decode()}\n", "31 bytes"),
        (f"{ORIGIN}\n7\n", "three non-empty lines"),
        (f"{ORIGIN}\n7\n{B64_ROOT}\n\next\n", "three non-empty lines"),
    ],
)
def test_malformed_checkpoints_are_refused(body: str, message: str) -> None:
    with pytest.raises(NoteError, match=message):
        note.parse_checkpoint(body)
