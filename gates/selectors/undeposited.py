"""Undeposited updates: the lab captured, on a run of the awarded vendor's
bundles since the award, a version of a component (GPU driver, NVMe or NIC
firmware, kernel…) that drifts from what the run's bundle declares and that no
update bundle the vendor deposited declares either (its ``changes[].to``).
Once the first run that showed it is older than the RFP's
``update_deposit_days``, that is a finding the buyer sees and may cite as a
breach (``gate_breaches``, the breach source gates registers).

Derived at read time from the runs' recorded drift (reads never write): nothing
is stored, so a late deposit of the update clears the finding."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from django.urls import reverse

from accounts.selectors import clock
from artifacts.lib.evidence.layout import format_time
from artifacts.selectors.breaches import CitedBreach
from artifacts.selectors.updates import awarded_vendor_id, update_list
from benchmarks.lib.environment.matching import same_version
from benchmarks.models import Run
from gates.permissions import GateScope
from procurement.models import Award, Rfp

# Drift rules (``procurement.lib.drift_policy``) by the update component they
# are about: a rule is the prefix or the prefix and a version level.
RULE_COMPONENTS: Final = (
    ("accelerator.driver", "gpu_driver"),
    ("accelerator.firmware", "gpu_firmware"),
    ("cuda", "cuda"),
    ("nvme.firmware", "nvme_firmware"),
    ("nic.firmware", "nic_firmware"),
    ("nic.driver", "nic_driver"),
    ("kernel", "kernel"),
    ("os.distribution", "os"),
    ("os.version", "os"),
)
LEVELS: Final = ("", ".major", ".minor", ".patch")


def component_of(rule: str) -> str | None:
    """The update component a drift rule compares (None: no update's)."""
    for prefix, component in RULE_COMPONENTS:
        if rule in {prefix + level for level in LEVELS}:
            return component
    return None


@dataclass(frozen=True)
class UndepositedUpdate:
    component: str
    version: str  # as the lab captured it
    run: Run  # the first run that showed it
    first_seen: datetime
    due: datetime  # first_seen + update_deposit_days

    @property
    def label(self) -> str:
        return (
            f"undeposited update: {self.component} {self.version} seen on run "
            f"{str(self.run.public_id)[:8]} since {self.first_seen:%Y-%m-%d} UTC"
        )

    @property
    def id(self) -> str:
        digest = hashlib.sha256(self.version.encode("utf-8")).hexdigest()[:16]
        return f"undeposited-update-{self.component}-{digest}"


def _declared(rfp: Rfp, vendor_id: int) -> dict[str, list[str]]:
    """Per component, the versions the vendor's update deposits move to."""
    declared: dict[str, list[str]] = {}
    for bundle in update_list(rfp, [vendor_id]):
        for change in (bundle.manifest or {}).get("changes") or []:
            declared.setdefault(change["component"], []).append(str(change["to"]))
    return declared


def _seen(rfp: Rfp, vendor_id: int, since: datetime) -> dict[tuple[str, str], Run]:
    """(component, captured version) → the first run since ``since`` whose
    drift shows it."""
    runs = (
        Run.objects.filter(
            campaign__bundle__rfp=rfp,
            campaign__bundle__organisation_id=vendor_id,
            started_at__gte=since,
        )
        .exclude(drift=[])
        .only("id", "public_id", "started_at", "drift")
        .order_by("started_at", "id")
    )
    seen: dict[tuple[str, str], Run] = {}
    for run in runs:
        for drift in run.drift or []:
            component = component_of(str(drift.get("rule", "")))
            captured = drift.get("captured")
            if component is None or not captured:
                continue
            for version in str(captured).split(", "):
                seen.setdefault((component, version), run)
    return seen


def undeposited_updates(
    rfp: Rfp, now: datetime | None = None
) -> list[UndepositedUpdate]:
    """The awarded vendor's undeposited updates on ``rfp`` past their deposit
    deadline at ``now`` (default: the clock now), oldest first; [] before the
    award."""
    vendor_id = awarded_vendor_id(rfp)
    award = Award.objects.filter(rfp=rfp).only("decided_at").first()
    if vendor_id is None or award is None:
        return []
    now = now or clock.now()
    declared = _declared(rfp, vendor_id)
    days = timedelta(days=rfp.update_deposit_days)
    found = []
    for (component, version), run in _seen(rfp, vendor_id, award.decided_at).items():
        if any(same_version(d, version) for d in declared.get(component, [])):
            continue
        first_seen = run.started_at
        if first_seen is None or first_seen + days > now:
            continue
        found.append(
            UndepositedUpdate(component, version, run, first_seen, first_seen + days)
        )
    return sorted(found, key=lambda f: (f.first_seen, f.component, f.version))


def undeposited_breach(rfp: Rfp, finding: UndepositedUpdate) -> CitedBreach:
    statement = (
        f"Undeposited update on {rfp.reference}: the lab captured "
        f"{finding.component} {finding.version} on run {finding.run.public_id} "
        f"at {format_time(finding.first_seen)}; neither the accepted bundle nor "
        f"any update deposited declares it, and the contract requires each update "
        f"to be deposited within {rfp.update_deposit_days} days (by "
        f"{format_time(finding.due)})."
    )
    return CitedBreach(
        id=finding.id,
        kind="undeposited_update",
        label=finding.label,
        statement=statement,
        url=reverse("benchmarks:run_detail", args=[finding.run.public_id]),
        breached_at=finding.due,
    )


def undeposited_update_breaches(rfp: Rfp, organisation_id: int) -> list[CitedBreach]:
    """The vendor's undeposited updates on ``rfp`` as citable breaches."""
    if awarded_vendor_id(rfp) != organisation_id:
        return []
    return [undeposited_breach(rfp, f) for f in undeposited_updates(rfp)]


def undeposited_visible(rfp: Rfp, scope: GateScope) -> list[UndepositedUpdate]:
    """The undeposited updates the gate board shows: to the buyer side, and to
    the awarded vendor (its own); never to another vendor."""
    vendor_id = awarded_vendor_id(rfp)
    if vendor_id is None or not (scope.full or vendor_id in scope.vendor_ids):
        return []
    return undeposited_updates(rfp)
