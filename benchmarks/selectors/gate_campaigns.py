"""The gates a lab campaign may be run for, read and started without importing
gates.

The dependency runs gates → benchmarks, so the lab's campaign form cannot ask
for gate plans itself. gates registers a *gate campaign source*
(``gate_campaign_source``) when Django starts (``GatesConfig.ready()``): the
gates of current frozen plans a lab operator may run (``choices``), the start of
a campaign for one of them (the plan's bundle, the scenarios the gate judges,
evaluated when its runs end: ``start``), and the gates a campaign was run for
(``judged_by``), which the campaign page names. With no source (benchmarks on its
own) the form offers no gate and every campaign reads as not linked to a gate:
its runs are not judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from artifacts.models import Bundle
    from benchmarks.models import Campaign, LabPool


@dataclass(frozen=True)
class GateChoice:
    """One gate a lab operator may run: ``value`` names it in a form,
    ``bundle_id`` is the bundle the gate judges, ``repetitions`` the runs per
    scenario the gate needs."""

    value: str
    label: str
    bundle_id: int
    repetitions: int


@dataclass(frozen=True)
class GateLink:
    """A gate a campaign was run for: its name and plan, and the gate's page."""

    label: str
    url: str


class GateCampaignStart(Protocol):
    def __call__(
        self,
        *,
        choice: str,
        bundle: Bundle,
        pool: LabPool,
        repetitions: int,
        note: str,
        actor: User,
        lab_plan: Mapping[str, Any] | None = None,
    ) -> Campaign: ...


@dataclass(frozen=True)
class GateCampaignSource:
    choices: Callable[[User | AnonymousUser], Sequence[GateChoice]]
    start: GateCampaignStart
    judged_by: Callable[[Campaign], Sequence[GateLink]]


def _no_gate_start(
    *,
    choice: str,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    note: str,
    actor: User,
    lab_plan: Mapping[str, Any] | None = None,
) -> Campaign:
    raise LookupError("No gate campaign source is registered.")


NO_GATES: Final = GateCampaignSource(
    choices=lambda user: (), start=_no_gate_start, judged_by=lambda campaign: ()
)

# gates' source (``gates.selectors.runs`` and ``gates.services.runs``); without it
# no gate is offered and no campaign is judged.
gate_campaign_source: Registry[GateCampaignSource] = Registry(
    "benchmarks.selectors.gate_campaigns.gate_campaign_source", default=NO_GATES
)


def gate_choices(user: User | AnonymousUser) -> Sequence[GateChoice]:
    """The gates ``user`` may run a campaign for (none without a source)."""
    return gate_campaign_source.get().choices(user)


def gate_campaign_start(
    *,
    choice: str,
    bundle: Bundle,
    pool: LabPool,
    repetitions: int,
    note: str,
    actor: User,
    lab_plan: Mapping[str, Any] | None = None,
) -> Campaign:
    """Start the campaign for the chosen gate (the source refuses a gate it does
    not offer, or another bundle than the gate's, with an ``ApplicationError``)."""
    return gate_campaign_source.get().start(
        choice=choice,
        bundle=bundle,
        pool=pool,
        repetitions=repetitions,
        note=note,
        actor=actor,
        lab_plan=lab_plan,
    )


def campaign_judged_by(campaign: Campaign) -> Sequence[GateLink]:
    """The gates ``campaign`` was run for (empty: its runs are not judged)."""
    return gate_campaign_source.get().judged_by(campaign)
