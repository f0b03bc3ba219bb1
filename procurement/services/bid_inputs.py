"""What a vendor hands in with a bid, checked before any row is written: the
documents (stored content-addressed while hashing, before the bid's transaction),
the claimed metrics and cost-model inputs (validated, every problem named), and
the signed bundle the bid relies on, whose manifest claims and cost model the
claims and cost inputs are taken from (what the vendor types instead is kept and
flagged as differing from the bundle).

Re-exported by ``procurement.services.bids``, where callers import them from."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import PurePosixPath
from typing import Any

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.template.defaultfilters import filesizeformat

from accounts.exceptions import Problem
from procurement import conf
from procurement.exceptions import ProcurementError
from procurement.lib.tco import COST_INPUT_FIELDS
from procurement.models import CostModelInput, Rfp
from procurement.models.bid import claim_key
from procurement.selectors.evidence_sources import (
    SignedBundle,
    bundles_accepted,
    bundles_own,
)

STATS = ("mean", "min", "max", "p50", "p90", "p95", "p99", "p99.5", "p99.9", "p99.99")
METRIC_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_CLAIMS = 200


@dataclass(frozen=True)
class StoredDocument:
    """A blob in ``default_storage``, ready to become a ``BidDocument``."""

    name: str
    sha256: str
    size: int
    content_type: str
    storage_key: str


def document_name(raw: str | None) -> str:
    """The vendor's file name for display only: no folders, no control characters."""
    name = PurePosixPath((raw or "").replace("\\", "/")).name
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    return (name or "document")[:200]


def bid_document_store(*, upload: File) -> StoredDocument:
    """Hash the upload while streaming it, refuse it past the size limit, and store
    it at ``bids/<sha256>`` (never under the vendor's file name)."""
    name, limit = document_name(upload.name), conf.bid_document_max_bytes()
    too_large = ProcurementError(
        f"“{name}” is larger than {filesizeformat(limit)}, the limit per document.",
        code="document_too_large",
    )
    if (upload.size or 0) > limit:
        raise too_large
    digest, size = hashlib.sha256(), 0
    for chunk in upload.chunks():
        size += len(chunk)
        if size > limit:
            raise too_large
        digest.update(chunk)
    if size == 0:
        raise ProcurementError(f"“{name}” is empty.", code="document_empty")
    key = f"bids/{digest.hexdigest()}"
    if not default_storage.exists(key):
        key = default_storage.save(key, upload)
    content_type = str(getattr(upload, "content_type", "") or "")[:100]
    return StoredDocument(name, digest.hexdigest(), size, content_type, key)


def bid_documents_store(*, uploads: Iterable[File]) -> list[StoredDocument]:
    return [bid_document_store(upload=upload) for upload in uploads]


# --- validation -------------------------------------------------------------------


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _claim_problems(claim: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems = []
    metric, stat = claim["metric"], claim["stat"]
    if not METRIC_NAME.fullmatch(metric):
        problems.append(("metric", f"“{metric}” is not a lower_snake_case metric."))
    if stat not in STATS:
        problems.append(("stat", f"“{stat}” is not one of {', '.join(STATS)}."))
    if claim["value"] is None:
        problems.append(("value", "The value must be a finite number."))
    if len(claim["unit"]) > 32 or len(claim["scenario"]) > 64:
        problems.append(("unit", "Units take ≤ 32 characters, scenarios ≤ 64."))
    return problems


def clean_claims(claims: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Claimed key metrics as stored: ``{metric, stat, value, unit, scenario}``."""
    if not isinstance(claims, Sequence) or len(claims) > MAX_CLAIMS:
        raise ProcurementError(f"Claim at most {MAX_CLAIMS} metrics, as a list.")
    cleaned, problems, seen = [], [], set()
    for index, raw in enumerate(claims):
        raw = raw if isinstance(raw, Mapping) else {}
        claim = {
            **{k: str(raw.get(k) or "").strip() for k in ("metric", "stat", "unit")},
            "scenario": str(raw.get("scenario") or "").strip(),
            "value": _finite(raw.get("value")),
        }
        found = _claim_problems(claim)
        key = (claim["metric"], claim["stat"], claim["scenario"])
        if not found and key in seen:
            found = [("stat", f"{key[0]} {key[1]} is claimed twice for one scenario.")]
        seen.add(key)
        problems += [Problem("invalid", m, f"claims[{index}].{f}") for f, m in found]
        cleaned.append(claim)
    if problems:
        raise ProcurementError(
            "Some claimed metrics are not valid: " + problems[0].message,
            code="invalid_claims",
            problems=problems,
        )
    return cleaned


def clean_cost_inputs(data: Mapping[str, Any]) -> dict[str, Any]:
    """Cost-model inputs validated by the model's own field rules."""
    values = {field: data.get(field) for field in COST_INPUT_FIELDS}
    values["currency"] = str(values["currency"] or "EUR").strip().upper()
    inputs = CostModelInput(**values)
    try:
        inputs.full_clean(exclude=["bid"])
        if not re.fullmatch(r"[A-Z]{3}", inputs.currency):
            raise ValidationError({"currency": "Use a three-letter code, e.g. EUR."})
    except ValidationError as exc:
        problems = [
            Problem("invalid", message, f"cost_inputs.{field}")
            for field, messages in exc.message_dict.items()
            for message in messages
        ]
        raise ProcurementError(
            "Some cost-model inputs are not valid: "
            + "; ".join(f"{p.path}: {p.message}" for p in problems[:3]),
            code="invalid_cost_inputs",
            problems=problems,
        ) from None
    return {field: getattr(inputs, field) for field in COST_INPUT_FIELDS}


# --- the signed bundle a bid relies on ----------------------------------------------

DIFFERS = "differs from the signed bundle: bundle says {}"
NOT_IN_BUNDLE = "not in the signed bundle"


def bundle_choose(
    *, rfp: Rfp, organisation_id: int, public_id: str | None
) -> SignedBundle | None:
    """The accepted bundle the bid names: ``public_id`` (one of the organisation's
    accepted bundles on ``rfp``), or without one the newest (None if there is
    none). Anything else is refused with a problem at ``bundle``."""
    if public_id is None or str(public_id).strip() == "":
        accepted = bundles_accepted(rfp, organisation_id)
        return accepted[0] if accepted else None
    found = bundles_own(organisation_id, public_id=str(public_id).strip())
    bundle = found[0] if found else None
    if bundle is None:
        code = "bundle_not_found"
        message = (
            f"No bundle of your organisation has the id “{public_id}”: a bid can "
            f"name only one of your own accepted bundles on {rfp.reference}."
        )
    elif bundle.rfp_id != rfp.pk:
        code = "bundle_other_rfp"
        message = (
            f"Bundle {bundle.bundle_id} was uploaded to {bundle.rfp_reference}, "
            f"not to {rfp.reference}: a bid names a bundle of its own RFP."
        )
    elif not bundle.accepted:
        code = "bundle_rejected"
        message = (
            f"Bundle {bundle.bundle_id} was rejected at upload: only an accepted "
            "bundle can back a bid."
        )
    else:
        return bundle
    raise ProcurementError(
        message, code=code, problems=[Problem(code, message, "bundle")]
    )


def _claim_text(claim: Mapping[str, Any]) -> str:
    value = repr(float(claim["value"]))
    return f"{value} {claim['unit']}".strip()


def _bundle_claims(bundle: SignedBundle) -> list[dict[str, Any]]:
    try:
        return clean_claims(list(bundle.claims))
    except ProcurementError as exc:
        raise ProcurementError(
            f"The claims of bundle {bundle.bundle_id} cannot back a bid: "
            + exc.message,
            code="bundle_claims_invalid",
            problems=[Problem("bundle_claims_invalid", exc.message, "bundle")],
        ) from None


def claims_with_bundle(
    bundle: SignedBundle, typed: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every claim of the bundle, in its order, with the value the vendor typed
    for it instead (same metric, stat and scenario), then the typed claims the
    bundle does not make; and a sentence per claim that differs from the bundle.
    A claim the vendor leaves out stays: it is signed."""
    own = {claim_key(c): c for c in clean_claims(typed)}
    claims, flags = [], {}
    for signed in _bundle_claims(bundle):
        key = claim_key(signed)
        mine = own.pop(key, None)
        if mine is None:
            claims.append(signed)
            continue
        claim = {
            **signed,
            "value": mine["value"],
            "unit": mine["unit"] or signed["unit"],
        }
        if (
            float(claim["value"]) != float(signed["value"])
            or claim["unit"] != signed["unit"]
        ):
            flags[key] = DIFFERS.format(_claim_text(signed))
        claims.append(claim)
    for key, mine in own.items():
        claims.append(mine)
        flags[key] = NOT_IN_BUNDLE
    return claims, flags


def bundle_cost_inputs(bundle: SignedBundle) -> dict[str, Any]:
    """The cost-model inputs the bundle's cost model names (``cost/model.json``:
    a JSON object with the ``COST_INPUT_FIELDS``; other keys, such as ``notes``, are
    ignored), as text; {} when it has none or it is not such an object."""
    if bundle.cost_model is None:
        return {}
    try:
        data = json.loads(bundle.cost_model.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    if not isinstance(data, Mapping):
        return {}
    return {
        field: str(data[field])
        for field in COST_INPUT_FIELDS
        if isinstance(data.get(field), str | int | float)
        and not isinstance(data.get(field), bool)
    }


def _same(a: Any, b: Any) -> bool:
    try:
        return Decimal(str(a).strip()) == Decimal(str(b).strip())
    except InvalidOperation:
        return str(a).strip().upper() == str(b).strip().upper()


def cost_inputs_with_bundle(
    bundle: SignedBundle, typed: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The bundle's cost inputs with the ones the vendor typed instead (a blank
    one takes the bundle's), validated; and a sentence per typed input that
    differs from the bundle."""
    signed = bundle_cost_inputs(bundle)
    mine = {
        field: value
        for field, value in (typed or {}).items()
        if field in COST_INPUT_FIELDS and value is not None and str(value).strip() != ""
    }
    inputs = clean_cost_inputs({**signed, **mine})
    flags = {
        field: DIFFERS.format(signed[field])
        for field, value in mine.items()
        if field in signed and not _same(value, signed[field])
    }
    return inputs, flags
