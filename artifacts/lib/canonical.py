"""Canonical JSON, the one encoding every signed or hashed document uses: the
escrow's deposit and event records, evidence packages, release certificates and
the three gate documents. UTF-8, keys sorted, no insignificant whitespace; NaN
and infinities are refused (``ValueError``), so equal values give equal bytes and
an outsider can recompute every digest."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON bytes (raises ``ValueError`` on NaN/inf)."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    ).encode("utf-8")
