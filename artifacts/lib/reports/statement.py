"""The in-toto Statement beside a report PDF: ``<pdf>.intoto.json`` or
``<pdf>.dsse``, a DSSE envelope (``payloadType`` ``application/vnd.in-toto+json``)
signed with one of the vendor's registered keys (Ed25519 or ECDSA, the keys its
manifests are signed with), whose Statement v1 names the PDF's SHA-256 among its
subjects. The predicate says what the report claims; it is kept (up to
``MAX_PREDICATE_BYTES``) to be shown beside the PDF's own signature.

``check_statement`` returns a JSON-able dict::

    {"path", "status": "valid" | "invalid", "key": "<fingerprint>" | None,
     "predicate_type", "predicate", "claims": [[key, text], …], "subject_name",
     "problem": {"code", "message"}  # absent when valid
    }
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures import SignatureError, dsse
from artifacts.lib.signatures.sshkeys import SshPublicKey
from artifacts.lib.signatures.statement import PAYLOAD_TYPE, STATEMENT_TYPE

SUFFIXES: Final = (".intoto.json", ".dsse")
MAX_ENVELOPE_BYTES: Final = 1024 * 1024
MAX_PREDICATE_BYTES: Final = 16 * 1024
MAX_TEXT: Final = 200
MAX_CLAIMS: Final = 50


def statement_paths(pdf_path: str) -> tuple[str, ...]:
    """Where a statement about ``pdf_path`` may lie, in the order looked at."""
    return tuple(pdf_path + suffix for suffix in SUFFIXES)


def _invalid(path: str, message: str, **facts: Any) -> dict[str, Any]:
    return {
        "path": path,
        "status": "invalid",
        "key": None,
        **facts,
        "problem": {"code": "report_statement_invalid", "message": message},
    }


def size_refused(size: int, path: str) -> dict[str, Any] | None:
    """The verdict on a statement of ``size`` bytes that is too large to read."""
    if size <= MAX_ENVELOPE_BYTES:
        return None
    return _invalid(path, f"invalid statement: it is over {MAX_ENVELOPE_BYTES} bytes.")


def _statement(envelope: dsse.Envelope) -> dict[str, Any]:
    """The Statement v1 of a verified envelope; ``ValueError`` says what is wrong."""
    if envelope.payload_type != PAYLOAD_TYPE:
        shown = envelope.payload_type[:80]
        raise ValueError(f"payloadType is {shown!r}, not {PAYLOAD_TYPE!r}")
    try:
        document = json.loads(envelope.payload)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("the signed payload is not UTF-8 JSON") from None
    if not isinstance(document, dict) or document.get("_type") != STATEMENT_TYPE:
        raise ValueError(f"the signed payload is not an in-toto {STATEMENT_TYPE}")
    return document


def _subject_name(document: dict[str, Any], sha256: str) -> str | None:
    subjects = document.get("subject")
    for subject in subjects if isinstance(subjects, list) else []:
        digest = subject.get("digest") if isinstance(subject, dict) else None
        if isinstance(digest, dict) and digest.get("sha256") == sha256:
            return str(subject.get("name", ""))[:MAX_TEXT]
    return None


def _predicate(document: dict[str, Any]) -> dict[str, Any]:
    predicate = document.get("predicate")
    if not isinstance(predicate, dict):
        return {}
    try:
        size = len(canonical_json(predicate))
    except (TypeError, ValueError):
        return {"truncated": True}
    return predicate if size <= MAX_PREDICATE_BYTES else {"truncated": True}


def _claims(predicate: dict[str, Any]) -> list[list[str]]:
    """The predicate's top-level entries as ``[key, JSON text]`` pairs to show."""
    shown = []
    for key, value in list(predicate.items())[:MAX_CLAIMS]:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        shown.append([str(key)[:MAX_TEXT], text[:MAX_TEXT]])
    return shown


def check_statement(
    data: bytes,
    *,
    path: str,
    pdf_sha256: str,
    public_keys: Sequence[SshPublicKey],
) -> dict[str, Any]:
    """The verdict on the envelope ``data`` found at ``path`` about a PDF whose
    SHA-256 is ``pdf_sha256``, signed with one of ``public_keys``. Checked in
    DSSE's order: a signature over PAE first, then the payload type and the
    payload. Never raises for bad input."""
    refused = size_refused(len(data), path)
    if refused is not None:
        return refused
    try:
        envelope = dsse.parse(data)
        verified = dsse.verify(
            envelope,
            public_keys=public_keys,
            expected_payload=envelope.payload,
            payload_type=envelope.payload_type,
        )
        document = _statement(envelope)
    except SignatureError as error:
        return _invalid(path, f"invalid statement signature: {error.message}")
    except ValueError as error:
        return _invalid(path, f"invalid statement: {error}.")
    predicate = _predicate(document)
    facts = {
        "key": verified.public_key.fingerprint,
        "predicate_type": str(document.get("predicateType", ""))[:MAX_TEXT],
        "predicate": predicate,
        "claims": _claims(predicate),
    }
    name = _subject_name(document, pdf_sha256)
    if name is None:
        message = "invalid statement: no subject has the PDF's SHA-256."
        return {**_invalid(path, message), **facts}
    return {"path": path, "status": "valid", "subject_name": name, **facts}
