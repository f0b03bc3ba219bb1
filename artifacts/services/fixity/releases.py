"""Fixity of escrow releases: each step row against the escrow event that
logged it (whose row ``fixity_log`` compared with the log), each release's
status against its logged steps, and a released one's certificate against
the SHA-256 its ``release.executed`` entry names. A logged release step with
no step row is reported too."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from artifacts.models import EscrowEvent, FixityFinding, Release, ReleaseStep
from artifacts.selectors.release import APPROVAL_ROLES
from artifacts.services.fixity.report import Finding, Findings

Kind = FixityFinding.Kind
STEP_ACTIONS = [f"release.{action}" for action in ReleaseStep.Action.values]
# the step each status needs in the log
STATUS_STEP: dict[str, str] = {
    Release.Status.DISPUTED: "objected",
    Release.Status.REJECTED: "rejected",
    Release.Status.WITHDRAWN: "withdrawn",
    Release.Status.RELEASED: "executed",
}


def _problems(release: Release, steps: list[ReleaseStep]) -> list[str]:
    problems = []
    logged: dict[str, dict[str, Any]] = {}
    for step in steps:
        record = json.loads(bytes(step.event.leaf))
        logged[step.action] = record
        if step.event.action != f"release.{step.action}" or record.get(
            "release"
        ) != str(release.public_id):
            problems.append(f"its {step.action} step is not the logged one")
    needed = STATUS_STEP.get(release.status)
    approvals = sum(step.action == "approved" for step in steps)
    if "requested" not in logged or (needed and needed not in logged):
        problems.append(f"its status {release.status} has no logged step")
    executable = (Release.Status.APPROVED, Release.Status.RELEASED)
    if release.status in executable and approvals < len(APPROVAL_ROLES):
        problems.append(f"it is {release.status} with {approvals} approval(s)")
    if release.status == Release.Status.RELEASED:
        digest = hashlib.sha256(bytes(release.certificate)).hexdigest()
        named = logged.get("executed", {}).get("certificate_sha256")
        if not digest == release.certificate_sha256 == named:
            problems.append("its certificate is not the one logged at execution")
    return problems


def check_releases(findings: Findings) -> None:
    releases = Release.objects.select_related("rfp").prefetch_related("steps__event")
    for release in releases.order_by("id").iterator(chunk_size=200):
        problems = _problems(release, list(release.steps.all()))
        if problems:
            findings.add(
                Finding(
                    Kind.ROW_ALTERED,
                    f"release {release.public_id}",
                    "The release differs from its logged steps: " + "; ".join(problems),
                    rfp_reference=release.rfp.reference,
                )
            )
    orphans = EscrowEvent.objects.filter(
        action__in=STEP_ACTIONS, release_step__isnull=True
    )
    for event in orphans.order_by("log_index").iterator(chunk_size=200):
        named = json.loads(bytes(event.leaf)).get("deposits") or [{}]
        findings.add(
            Finding(
                Kind.ROW_MISSING,
                f"release step #{event.log_index}",
                f"Log entry {event.log_index} records a {event.action} step that "
                "has no step row: the row was deleted.",
                log_index=event.log_index,
                deposit=str(named[0].get("deposit", "")),
            )
        )
