"""The comparison matrix as CSV and as JSON (both carry the same data).

Beside each vendor's claims, what the lab reproduced of them (the latest
evaluation of the vendor's lab-validation gate, ``procurement.selectors.reproduced``):

- CSV: per required metric ``claimed <metric>`` and ``reproduced <metric>``
  (per claim: estimate, 95% interval, unit, runs, criterion verdict, or "not
  yet reproduced"); ``lab_validation_gate``, ``lab_validation_verdict`` (empty:
  not yet reproduced), ``lab_validation_score_pct``, ``lab_validation_url``;
  ``tco_basis`` (``reproduced``: the TCO columns use the lab's throughput;
  ``claimed``: nothing reproduced yet, the vendor's figure), then
  ``throughput_claimed_tok_s``, ``throughput_reproduced_tok_s`` and the TCO on
  the claim (``tco_claimed_cost_per_year``, ``tco_claimed_cost_per_million_tokens``).
- JSON: ``lab_validation`` per vendor (gate, verdict, score, evaluation id,
  url), each claim of ``claimed_metrics`` with ``reproduced`` (criterion,
  verdict, estimate, ci, unit, runs, reason, url of the criterion's page; null:
  not yet reproduced) and ``current`` (the buyer's baseline median for its
  metric, with its unit; null: no baseline measured it), and ``tco`` with
  ``basis``, ``throughput`` and ``claimed`` (the TCO on the claim).
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

from accounts.selectors.exports import csv_safe
from procurement.lib import scoring
from procurement.lib.tco import TcoResult
from procurement.selectors.comparison import Comparison, ComparisonRow
from procurement.selectors.evaluation import BidTco
from procurement.selectors.evidence_sources import BidEvidence
from procurement.selectors.reproduced import (
    NOT_REPRODUCED,
    LabValidation,
    ReproducedClaim,
    current_of,
)


def _text(value: Decimal | int | None) -> str:
    return "" if value is None else str(value)


def claim_text(claim: dict[str, Any]) -> str:
    """``p99 180.0 ms (cold-c32)``"""
    parts = [str(claim.get(k, "")) for k in ("stat", "value", "unit")]
    text = " ".join(p for p in parts if p)
    return f"{text} ({claim['scenario']})" if claim.get("scenario") else text


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def reproduced_text(rc: ReproducedClaim) -> str:
    """``p99 410 ms (95% CI 400 to 420 ms, 3 runs) FAIL (cold-c32)``"""
    r, unit = rc.result, f" {rc.unit}" if rc.unit else ""
    if r is None:
        text = NOT_REPRODUCED.lower()
    elif r.estimate is None:
        text = f"{rc.claim.get('stat', '')} not measured {r.verdict}"
    else:
        ci = f"95% CI {_num(r.ci_low)} to {_num(r.ci_high)}{unit}, {r.runs} runs"
        text = f"{rc.claim.get('stat', '')} {_num(r.estimate)}{unit} ({ci}) {r.verdict}"
    scenario = rc.claim.get("scenario")
    return f"{text.strip()} ({scenario})" if scenario else text.strip()


LAB_COLUMNS = [
    "lab_validation_gate",
    "lab_validation_verdict",
    "lab_validation_score_pct",
    "lab_validation_url",
]
TCO_COLUMNS = [
    "currency",
    "tco_cost_per_year",
    "tco_cost_per_million_tokens",
    "tco_basis",
    "throughput_claimed_tok_s",
    "throughput_reproduced_tok_s",
    "tco_claimed_cost_per_year",
    "tco_claimed_cost_per_million_tokens",
    "tco_formula_version",
]


def _csv_lab(lab: LabValidation) -> list[str]:
    e = lab.evaluation
    score = "" if e is None or e.score_pct is None else str(e.score_pct)
    return [lab.gate if e else "", lab.verdict, score, lab.url]


def _csv_tco(t: BidTco, version: int) -> list[str]:
    shown, claimed = t.shown, t.claimed
    return [
        shown.currency if shown else "",
        _text(shown.total_per_year if shown else None),
        _text(shown.cost_per_million_tokens if shown else None),
        t.basis,
        _text(t.claimed_throughput),
        _text(t.reproduced_throughput),
        _text(claimed.total_per_year if claimed else None),
        _text(claimed.cost_per_million_tokens if claimed else None),
        str(version),
    ]


def _csv_claims(row: ComparisonRow) -> list[str]:
    cells = []
    for (_, claims), (_, reproduced) in zip(row.claims, row.reproduced, strict=True):
        cells.append("; ".join(claim_text(cl) for cl in claims))
        cells.append("; ".join(reproduced_text(rc) for rc in reproduced))
    return cells


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
    header += COMPLETENESS_COLUMNS + LAB_COLUMNS
    header += [f"{kind} {m}" for m in c.metrics for kind in ("claimed", "reproduced")]
    header += TCO_COLUMNS
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
        line += _csv_lab(row.lab) + _csv_claims(row)
        line += _csv_tco(row.tco_detail, c.formula.version)
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


def _json_tco_result(tco: TcoResult | None) -> dict[str, Any] | None:
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


def _json_tco(t: BidTco) -> dict[str, Any] | None:
    shown = _json_tco_result(t.shown)
    if shown is None:
        return None
    return shown | {
        "basis": t.basis,
        "throughput": {
            "claimed": _amount(t.claimed_throughput, "tok/s"),
            "reproduced": _amount(t.reproduced_throughput, "tok/s"),
            "criterion": t.throughput_result.criterion if t.throughput_result else None,
        },
        "claimed": _json_tco_result(t.claimed),
    }


def _json_lab(lab: LabValidation) -> dict[str, Any]:
    e = lab.evaluation
    return {
        "gate": lab.gate or None,
        "verdict": lab.verdict or None,
        "status": "evaluated" if e else "not_yet_reproduced",
        "score_pct": _amount(e.score_pct if e else None, "%"),
        "evaluation": str(e.public_id) if e else None,
        "plan_version": lab.plan.version if lab.plan else None,
        "evaluated_at": e.evaluated_at.isoformat() if e else None,
        "url": lab.url or None,
    }


def _json_reproduced(rc: ReproducedClaim) -> dict[str, Any] | None:
    r = rc.result
    if r is None:
        return None
    ci = None if r.ci_low is None else [r.ci_low, r.ci_high]
    return {
        "criterion": r.criterion,
        "verdict": r.verdict,
        "estimate": None
        if r.estimate is None
        else {"value": r.estimate} | {"unit": rc.unit},
        "ci": ci,
        "ci_level": 0.95,
        "runs": r.runs,
        "reason": r.reason,
        "url": rc.url or None,
    }


def _json_current(row: ComparisonRow, rc: ReproducedClaim) -> dict[str, Any] | None:
    """The buyer's baseline median for the claim's metric (null: none)."""
    value = current_of(row.baseline, rc.claim)
    return None if value is None else {"value": value, "unit": rc.unit}


def _json_claims(row: ComparisonRow) -> dict[str, list[dict[str, Any]]]:
    return {
        metric: [
            rc.claim
            | {"reproduced": _json_reproduced(rc), "current": _json_current(row, rc)}
            for rc in claims
        ]
        for metric, claims in row.reproduced
    }


def _json_fidelity(row: ComparisonRow) -> dict[str, Any] | None:
    """The vendor's fidelity matrix in short (the rows: ``/fidelity/``)."""
    if row.fidelity is None:
        return None
    matrix = row.fidelity.matrix
    return {
        "approach": row.fidelity.approach,
        "counts": matrix.counts,
        "contradicted_mandatory": [r.id for r in matrix.contradicted_mandatory],
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
                "lab_validation": _json_lab(row.lab),
                "claimed_metrics": _json_claims(row),
                "tco": _json_tco(row.tco_detail),
                "fidelity": _json_fidelity(row),
            }
            for row in c.rows
        ],
    }
