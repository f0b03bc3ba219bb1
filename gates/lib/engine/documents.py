"""Canonical JSON and digests of the three gate documents (docs/gate-documents.md).

Canonical JSON is UTF-8, keys sorted, no insignificant whitespace, non-ASCII
characters as themselves (``ensure_ascii=False``), numbers as Python writes them
(the shortest text that reads back as the same double); NaN and infinities are
refused. It is the same rule as the sealed bids' commitments.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from artifacts.lib.canonical import canonical_json

PLAN_SCHEMA: Final = "reprogate.gate-plan/v1"
RESULTS_SCHEMA: Final = "reprogate.results/v1"
EVALUATION_SCHEMA: Final = "reprogate.evaluation/v1"


def sha256_hex(value: Any) -> str:
    """The SHA-256 hex digest of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def evaluation_bytes(doc: dict[str, Any]) -> bytes:
    """An evaluation document as the bytes that are stored, printed and hashed."""
    return canonical_json(doc)


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes | str) -> Any:
    """Parse a JSON document strictly: ``NaN``/``Infinity`` are refused (they are
    not JSON), so a document that loads can always be written canonically."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_no_constants)
