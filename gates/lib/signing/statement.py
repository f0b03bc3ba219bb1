"""The in-toto Statement v1 beside every report, with the test-result predicate,
in a DSSE envelope signed with the installation's Ed25519 key (docs/reports.md,
"The in-toto statement").

The statement and envelope encoding, the signature and its check are the shared
``artifacts.lib.signatures.statement``'s (the lab hosts' run statements use the
same code); this module adds the test-result predicate. ``statement_open``
verifies in the order DSSE prescribes: a signature by the given key over PAE
first, then the payload type, and only then the payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from artifacts.lib.signatures.statement import (
    StatementError,
    descriptors,
    envelope_open,
    envelope_sign,
    statement,
)

PREDICATE_TYPE: Final = "https://in-toto.io/attestation/test-result/v0.1"
RESULTS: Final = ("PASSED", "WARNED", "FAILED")


def statement_result(verdict: str) -> str:
    """The test-result ``result`` of a gate verdict: PASS → PASSED, WARN →
    WARNED, anything else (FAIL, INCONCLUSIVE, …) → FAILED."""
    return {"PASS": "PASSED", "WARN": "WARNED"}.get(verdict, "FAILED")


def test_result_statement(
    *,
    subjects: Sequence[tuple[str, str]],
    result: str,
    configuration: Sequence[tuple[str, str]],
    passed: Sequence[str],
    warned: Sequence[str],
    failed: Sequence[str],
    url: str = "",  # noqa: PT028 (not a test: see the end of the module)
) -> dict[str, Any]:
    """An in-toto Statement v1 with the test-result v0.1 predicate; ``subjects``
    and ``configuration`` are (name, SHA-256 hex) pairs. ``ValueError`` for no
    subject, a digest that is not SHA-256 hex or an unknown ``result``."""
    if not subjects:
        raise ValueError("An in-toto statement needs at least one subject.")
    if result not in RESULTS:
        raise ValueError(f"result is {result!r}, not one of {', '.join(RESULTS)}.")
    predicate: dict[str, Any] = {
        "result": result,
        "configuration": descriptors(configuration),
        "passedTests": [str(name) for name in passed],
        "warnedTests": [str(name) for name in warned],
        "failedTests": [str(name) for name in failed],
    }
    if url:
        predicate["url"] = url
    return statement(
        subjects=subjects, predicate_type=PREDICATE_TYPE, predicate=predicate
    )


def statement_sign(document: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The DSSE JSON envelope (canonical JSON bytes) of ``document``."""
    return envelope_sign(document, key)


def statement_open(envelope: bytes, public_key_pem: bytes) -> dict[str, Any]:
    """The statement in ``envelope`` once a signature by the key in
    ``public_key_pem`` verifies and it is an in-toto Statement v1 with the
    test-result predicate; ``StatementError`` otherwise."""
    try:
        return envelope_open(envelope, public_key_pem, predicate_type=PREDICATE_TYPE)
    except StatementError as error:
        message = str(error).replace("The key is", "The statement key is")
        raise StatementError(message) from None


# Not a test, whatever its name: pytest collects functions named test_* that a
# test module imports.
test_result_statement.__test__ = False  # type: ignore[attr-defined]
