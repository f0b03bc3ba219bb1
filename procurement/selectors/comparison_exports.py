"""The comparison matrix as CSV and as JSON (both carry the same data)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

from accounts.exports import csv_safe
from procurement import scoring
from procurement.evidence import BidEvidence
from procurement.selectors.comparison import Comparison
from procurement.tco import TcoResult


def _text(value: Decimal | int | None) -> str:
    return "" if value is None else str(value)


def claim_text(claim: dict[str, Any]) -> str:
    """``p99 180.0 ms (cold-c32)``"""
    parts = [str(claim.get(k, "")) for k in ("stat", "value", "unit")]
    text = " ".join(p for p in parts if p)
    return f"{text} ({claim['scenario']})" if claim.get("scenario") else text


COMPLETENESS_COLUMNS = [
    "bundle_status",
    "bundle_id",
    "bundle_sha256",
    "mandatory_artifacts_present",
    "mandatory_artifacts_total",
    "mandatory_artifacts_missing",
    "environment_fields_named",
    "environment_fields_total",
    "claims_in_harness",
    "claims_total",
    "required_metrics_not_claimed",
]


def _csv_completeness(evidence: BidEvidence) -> list[str]:
    """The ``COMPLETENESS_COLUMNS`` of one vendor; bundle columns empty without
    an accepted bundle."""
    missing = "; ".join(item.kind for item in evidence.mandatory_missing)
    artifacts = [evidence.mandatory_present, evidence.mandatory_total]
    s = evidence.summary
    if s is None:
        return ["no accepted bundle", "", "", *map(str, artifacts), missing]
    return [
        "accepted",
        s.bundle_id,
        s.sha256,
        *map(str, artifacts),
        missing,
        str(s.environment_named),
        str(s.environment_total),
        str(s.claims_in_harness),
        str(s.claims_total),
        "; ".join(s.metrics_missing),
    ]


def comparison_csv_rows(comparison: Comparison) -> list[list[str]]:
    """A header row, then one row per vendor. Score columns only when visible."""
    c = comparison
    scores = c.visibility.visible
    header = ["vendor", "vendor_slug", "bid_commitment", "awarded"]
    if scores:
        header += ["rank", "weighted_total_of_100", "scores_complete"]
        header += [f"{cr.name} (mean of 10, weight {cr.weight})" for cr in c.criteria]
    header += COMPLETENESS_COLUMNS
    header += [f"claimed {m}" for m in c.metrics]
    header += ["currency", "tco_cost_per_year", "tco_cost_per_million_tokens"]
    header += ["tco_formula_version"]
    rows = [[csv_safe(cell) for cell in header]]
    for row in c.rows:
        org = row.bid.vendor_organisation
        won = "yes" if row.bid.pk == c.winner_bid_id else "no"
        line = [org.name, org.slug, row.bid.commitment, won]
        if scores and row.consensus:
            r = row.consensus
            line += [str(r.rank), str(r.weighted_total), "yes" if r.complete else "no"]
            line += [_text(cell.mean) for cell in r.cells]
        completeness = _csv_completeness(row.evidence)
        line += completeness + [""] * (len(COMPLETENESS_COLUMNS) - len(completeness))
        line += ["; ".join(claim_text(cl) for cl in claims) for _, claims in row.claims]
        tco = row.tco
        line += [tco.currency if tco else "", _text(tco and tco.total_per_year)]
        line += [_text(tco and tco.cost_per_million_tokens), str(c.formula.version)]
        rows.append([csv_safe(cell) for cell in line])
    return rows


def comparison_csv_text(comparison: Comparison) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(comparison_csv_rows(comparison))
    return buffer.getvalue()


def _amount(value: Decimal | int | None, unit: str) -> dict[str, Any] | None:
    return None if value is None else {"value": str(value), "unit": unit}


def _json_consensus(c: Comparison, r: scoring.BidConsensus) -> dict[str, Any]:
    return {
        "rank": r.rank,
        "weighted_total": _amount(r.weighted_total, "points of 100"),
        "complete": r.complete,
        "criteria": [
            {
                "criterion": cr.name,
                "weight": cr.weight,
                "mean": _amount(cell.mean, "points of 10"),
                "spread": _amount(cell.spread, "points"),
                "stdev": _amount(cell.stdev, "points"),
                "scores": cell.count,
                "disagreement": cell.disagreement,
            }
            for cr, cell in zip(c.criteria, r.cells, strict=True)
        ],
    }


def _json_completeness(evidence: BidEvidence) -> dict[str, Any]:
    s = evidence.summary
    report = {
        "status": "accepted_bundle" if s is not None else "no_accepted_bundle",
        "bundle": None,
        "mandatory_artifacts": {
            "total": evidence.mandatory_total,
            "present": evidence.mandatory_present,
            "missing": [
                {"kind": i.kind, "title": i.title} for i in evidence.mandatory_missing
            ],
        },
        "artifacts": [
            {"kind": i.kind, "title": i.title, "mandatory": i.mandatory}
            | {"present": i.present}
            for i in evidence.checklist
        ],
    }
    if s is None:
        return report
    return report | {
        "bundle": {
            "id": s.bundle_id,
            "sha256": s.sha256,
            "uploaded_at": s.uploaded_at.isoformat(),
            "url": s.url,
        },
        "kinds_present": list(s.kinds_present),
        "environment": {
            "named": s.environment_named,
            "total": s.environment_total,
            "missing": list(s.environment_missing),
        },
        "claims": {
            "in_harness": s.claims_in_harness,
            "total": s.claims_total,
            "unknown_scenarios": list(s.unknown_scenarios),
        },
        "required_metrics_not_claimed": list(s.metrics_missing),
        "checks": {"passed": s.checks_passed, "total": s.checks_total},
    }


def _json_tco(tco: TcoResult | None) -> dict[str, Any] | None:
    if tco is None:
        return None
    return {
        "currency": tco.currency,
        "cost_per_year": _amount(tco.total_per_year, f"{tco.currency}/year"),
        "tokens_per_year": _amount(tco.tokens_per_year, "tokens/year"),
        "cost_per_million_tokens": _amount(
            tco.cost_per_million_tokens, f"{tco.currency}/Mtok"
        ),
    }


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as one JSON document; every number carries its unit."""
    c = comparison
    f = c.formula
    return {
        "rfp": {"reference": c.rfp.reference, "status": c.rfp.status},
        "scores_visible": c.visibility.visible,
        "scores_note": c.visibility.reason,
        "submitted_sheets": c.submitted_sheets,
        "evaluators": c.evaluators,
        "provisional": c.provisional,
        "disagreement_spread": scoring.DISAGREEMENT_SPREAD,
        "completeness_basis": c.completeness_basis,
        "tco_formula": {
            "version": f.version,
            "recorded": f.pk is not None,
            "pue": str(f.pue),
            "utilisation": str(f.utilisation),
            "hours_per_year": f.hours_per_year,
        },
        "vendors": [
            {
                "vendor": {
                    "slug": row.bid.vendor_organisation.slug,
                    "name": row.bid.vendor_organisation.name,
                },
                "bid": str(row.bid.public_id),
                "commitment": row.bid.commitment,
                "awarded": row.bid.pk == c.winner_bid_id,
                "scores": _json_consensus(c, row.consensus) if row.consensus else None,
                "completeness": _json_completeness(row.evidence),
                "claimed_metrics": dict(row.claims),
                "tco": _json_tco(row.tco),
            }
            for row in c.rows
        ],
    }
