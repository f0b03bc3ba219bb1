"""The trail as people read it: sealed rows, labels, and runner noise grouped.

Templates and exports never see an ``AuditEvent``, only an ``AuditRow`` made
here, so that a sealed event (``sealed`` annotation of the trail selector) can
show nothing but its time, its kind and its commitment hash: no actor, target,
organisation, request id or any other data that could tell who the vendor is."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from accounts.lib.audit_labels import action_label
from accounts.models import AuditEvent
from accounts.selectors.audit_scope import SEALED_DATA_KEYS
from accounts.selectors.users import AuditPage


@dataclass(frozen=True)
class AuditRow:
    occurred_at: datetime
    action: str
    label: str
    sealed: bool
    actor: str
    organisation: str  # of an event outside the reader's own trail, else ""
    target_type: str
    target: str
    rfp: str
    details: dict[str, Any] = field(default_factory=dict)
    request_id: str = ""

    is_group = False

    @property
    def campaign(self) -> str:
        return str(self.details.get("campaign", ""))


@dataclass(frozen=True)
class AuditGroup:
    """Consecutive ``rows`` of one grouped action in one campaign."""

    rows: tuple[AuditRow, ...]

    is_group = True

    @property
    def first(self) -> AuditRow:
        """The newest (the trail runs newest first)."""
        return self.rows[0]

    @property
    def last(self) -> AuditRow:
        return self.rows[-1]

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def summary(self) -> str:
        noun = {"run.transitioned": "run transitions"}.get(self.first.action, "events")
        return f"{self.count} {noun} in campaign {self.first.campaign}"


def audit_row(event: AuditEvent) -> AuditRow:
    """``event`` as a row; sealed when the selector marked it so."""
    sealed = bool(getattr(event, "sealed", False))
    label = action_label(event.action)
    if sealed:
        details = {k: event.data[k] for k in SEALED_DATA_KEYS if k in event.data}
        return AuditRow(
            occurred_at=event.occurred_at,
            action=event.action,
            label=label,
            sealed=True,
            actor="",
            organisation="",
            target_type="",
            target="",
            rfp=event.rfp_reference,
            details=details,
        )
    outside = bool(getattr(event, "outside", False))
    return AuditRow(
        occurred_at=event.occurred_at,
        action=event.action,
        label=label,
        sealed=False,
        actor=event.actor_repr,
        organisation=str(event.organisation) if outside and event.organisation else "",
        target_type=event.target_type.model if event.target_type else "",
        target=event.target_repr,
        rfp=event.rfp_reference,
        details=dict(event.data),
        request_id=event.request_id,
    )


def audit_rows(events: Iterable[AuditEvent]) -> Iterator[AuditRow]:
    return (audit_row(event) for event in events)


def audit_lines(page: AuditPage) -> list[AuditRow | AuditGroup]:
    """The page's lines: a grouped line of two or more events is an
    ``AuditGroup``, any other line the row of its event."""
    lines: list[AuditRow | AuditGroup] = []
    for head in page.heads:
        members = page.groups.get(head.pk, [])
        if len(members) > 1:
            lines.append(AuditGroup(tuple(audit_rows(members))))
        else:
            lines.append(audit_row(head))
    return lines
