"""What artifacts gives procurement without procurement importing artifacts: the
evidence provider (``procurement.evidence``) that turns each vendor's newest
accepted bundle's completeness report (``artifacts.completeness``) into an
``EvidenceSummary``. Registered by ``ArtifactsConfig.ready()``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from django.urls import reverse

from artifacts.models import Bundle
from artifacts.selectors import bundle_latest_accepted_completeness
from procurement.evidence import EvidenceSummary, register_evidence_provider
from procurement.models import Rfp


def _part(report: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    part = report.get(key)
    return part if isinstance(part, Mapping) else {}


def _strings(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values) if isinstance(values, list) else ()


def evidence_summary(bundle: Bundle) -> EvidenceSummary:
    """The bundle's completeness report in short. Read tolerantly: a report
    missing a part counts that part as nothing found."""
    report = bundle.completeness if isinstance(bundle.completeness, Mapping) else {}
    environment, claims = _part(report, "environment"), _part(report, "claims")
    fields = [f for f in environment.get("fields", []) if isinstance(f, Mapping)]
    claim_rows = [c for c in claims.get("claims", []) if isinstance(c, Mapping)]
    score = _part(report, "score")
    return EvidenceSummary(
        bundle_id=str(bundle.public_id),
        url=reverse("artifacts:bundle_detail", args=[bundle.public_id]),
        sha256=bundle.sha256,
        uploaded_at=bundle.created_at,
        kinds_present=_strings(_part(report, "artifacts").get("kinds_present")),
        environment_named=sum(1 for f in fields if f.get("found") is True),
        environment_total=len(fields),
        environment_missing=tuple(
            str(f.get("label", f.get("key", ""))) for f in fields if not f.get("found")
        ),
        claims_in_harness=sum(1 for c in claim_rows if c.get("scenario_in_harness")),
        claims_total=len(claim_rows),
        unknown_scenarios=_strings(claims.get("unknown_scenarios")),
        metrics_missing=_strings(_part(report, "metrics").get("missing")),
        checks_passed=int(score.get("passed", 0)),
        checks_total=int(score.get("total", 0)),
    )


def bundle_evidence(
    rfp: Rfp, organisation_ids: Collection[int] | None = None
) -> dict[int, EvidenceSummary]:
    """The evidence provider: one query whatever the number of vendors."""
    latest = bundle_latest_accepted_completeness(rfp, organisation_ids)
    return {org: evidence_summary(bundle) for org, bundle in latest.items()}


def register() -> None:
    register_evidence_provider(bundle_evidence)
