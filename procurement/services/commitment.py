"""Bid commitments: what a vendor submitted, reduced to one SHA-256 hash.

A commitment is public before opening (the buyer sees only commitments), so it must
bind the content without revealing it. It is

    sha256(canonical_json(payload)).hexdigest()

where ``canonical_json`` is JSON with keys sorted at every level, no whitespace
(separators ``,`` and ``:``), non-ASCII characters written as themselves and the
whole encoded as UTF-8; and ``payload`` is::

    {
      "rfp": "RFP-2026-07",                 # the RFP's reference
      "bid": "<bid public id>",             # a UUID string
      "version": 3,                         # +1 on every replacement
      "addendum": 1,                        # latest addendum accepted (0: none)
      "cover_note": "...",
      "claims": [{"metric", "stat", "value", "unit", "scenario"}, ...],
      "cost_inputs": {"currency": "EUR", "hardware_cost": "120000.00", ...},
      "documents": [{"name", "sha256", "size"}, ...],   # sorted by name
      "bundle": {                           # the signed bundle the bid relies on
        "id": "<bundle public id>",         # a UUID string
        "sha256": "<64 hex>",               # of the uploaded archive
        "manifest_sha256": "<64 hex>"       # of manifest.json's exact bytes
      },
      "salt": "<32 random hex digits>"
    }

``bundle`` is present only when the bid names one of its organisation's accepted
bundles on the RFP; a bid without a bundle has no ``bundle`` key at all (not
``null``), so that its payload has exactly the shape of the payloads issued
before bids named bundles. No version field is needed to verify either shape:
the commitment is the hash of the receipt's ``contents`` as stored, whatever keys
they hold; a reader tells the two shapes apart by the key's presence. The bundle's
claims and cost model are bound twice: by value (``claims`` and ``cost_inputs``,
which are derived from the bundle) and by digest (``bundle``).

Numbers that are not integers are written as strings (claim values as Python's
shortest round-trip ``repr``, money and rates as plain decimals with the model's
places), so that every JSON parser and database reproduces the same bytes.

The random ``salt`` makes the hash unguessable: without it, anyone who can guess a
bid's content (a cover note left empty, a couple of metrics) could test candidates
against the public commitment. The salt is kept in the receipt's ``contents``,
which *are* the payload, so that the vendor (and, after opening, anyone the vendor
shows the receipt to) can recompute the commitment: ``commitment_of(contents)``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from procurement.models import CostModelInput

SALT_BYTES = 16


def canonical_json(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def commitment_of(payload: dict[str, Any]) -> str:
    """The SHA-256 hex digest of the payload's canonical JSON."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def new_salt() -> str:
    return secrets.token_hex(SALT_BYTES)


def _decimal_text(value: Decimal, places: int) -> str:
    return format(value.quantize(Decimal(1).scaleb(-places)), "f")


def cost_inputs_payload(inputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Decimals as plain text with the model field's places; the rest as is."""
    if inputs is None:
        return None
    payload: dict[str, Any] = {}
    for name, value in inputs.items():
        if isinstance(value, Decimal):
            field = CostModelInput._meta.get_field(name)
            value = _decimal_text(value, field.decimal_places)  # type: ignore[union-attr]
        payload[name] = value
    return payload


def bid_payload(
    *,
    rfp: str,
    bid: str,
    version: int,
    addendum: int,
    cover_note: str,
    claims: Iterable[Mapping[str, Any]],
    cost_inputs: Mapping[str, Any] | None,
    documents: Iterable[Any],
    bundle: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The payload described above, with a fresh salt. ``documents`` are objects
    with ``name``, ``sha256`` and ``size``; ``bundle`` has ``id``, ``sha256`` and
    ``manifest_sha256`` (None: the key is left out)."""
    payload = {
        "rfp": rfp,
        "bid": bid,
        "version": version,
        "addendum": addendum,
        "cover_note": cover_note,
        "claims": [{**c, "value": repr(float(c["value"]))} for c in claims],
        "cost_inputs": cost_inputs_payload(cost_inputs),
        "documents": sorted(
            ({"name": d.name, "sha256": d.sha256, "size": d.size} for d in documents),
            key=lambda d: (d["name"], d["sha256"]),
        ),
        "salt": new_salt(),
    }
    if bundle is not None:
        payload["bundle"] = {
            key: str(bundle[key]) for key in ("id", "sha256", "manifest_sha256")
        }
    return payload
