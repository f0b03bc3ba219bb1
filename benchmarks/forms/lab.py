"""Forms of the lab pages; choices are always scoped to what the user may use."""

from __future__ import annotations

import json
from typing import Any, cast

from django import forms
from django.contrib.auth.models import User

from accounts.lib.paging import PAGE_SIZE
from artifacts.models import Bundle
from benchmarks.models import LabPool
from benchmarks.models.pools import POOL_NAME_VALIDATOR
from benchmarks.selectors.access import (
    bundle_list_matching,
    bundle_list_startable_by,
    lab_organisation_list_for,
    pool_list_operated_by,
)
from benchmarks.selectors.gate_campaigns import GateChoice, gate_choices
from benchmarks.selectors.pools import (
    pool_choice_label,
    pool_list_with_online_hosts,
)
from benchmarks.services.campaigns import MAX_REPETITIONS


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


class BundleChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Bundle) -> str:
        return (
            f"{obj.rfp.reference} · {obj.organisation.name} · "
            f"{obj.sha256[:12]} · {obj.created_at:%Y-%m-%d %H:%M}"
        )


MAX_LAB_PLAN_CHARS = 200_000
NO_GATE = "This campaign is not linked to a gate: its runs will not be judged"


class PoolChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: LabPool) -> str:
        return pool_choice_label(obj)


class CampaignStartForm(forms.Form):
    """A campaign of an accepted bundle on a pool; with a gate chosen, a campaign
    of the scenarios that gate judges, evaluated when its runs end."""

    bundle = BundleChoiceField(queryset=Bundle.objects.none(), empty_label=None)
    gate = forms.ChoiceField(
        required=False,
        help_text="The gate these runs are judged by, when they end: a gate of "
        "the vendor's current frozen plan, which runs the plan's bundle.",
    )
    pool = PoolChoiceField(
        queryset=LabPool.objects.none(),
        empty_label=None,
        help_text="Pools with an online host come first: runs on a pool with none "
        "wait until a host joins it.",
    )
    repetitions = forms.IntegerField(min_value=1, max_value=MAX_REPETITIONS, initial=3)
    note = forms.CharField(max_length=300, required=False)
    lab_plan = forms.CharField(
        required=False,
        max_length=MAX_LAB_PLAN_CHARS,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        help_text="Optional JSON: the lab's own scenarios (e.g. a failover) and "
        'neighbour jobs, {"scenarios": [...], "neighbours": {...}}. With a gate, '
        "its scenarios run beside the ones the gate judges.",
    )

    def __init__(self, user: User, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        bundle_field = cast(forms.ModelChoiceField, self.fields["bundle"])
        self.startable = bundle_list_startable_by(user)
        bundle_field.queryset = self.startable
        pool_field = cast(forms.ModelChoiceField, self.fields["pool"])
        pool_field.queryset = pool_list_with_online_hosts(pool_list_operated_by(user))
        self.gates: dict[str, GateChoice] = {c.value: c for c in gate_choices(user)}
        gate_field = cast(forms.ChoiceField, self.fields["gate"])
        gate_field.choices = [
            ("", f"No gate. {NO_GATE}."),
            *((c.value, c.label) for c in self.gates.values()),
        ]

    def preselect_gate(self, value: str) -> None:
        """Start from one gate (the gate page's "Run this gate"): the gate, its
        bundle and the runs per scenario it needs."""
        choice = self.gates.get(value)
        if choice is not None:
            self.initial.update(
                gate=value, bundle=choice.bundle_id, repetitions=choice.repetitions
            )

    def offer_bundles(self, search: str = "") -> None:
        """Offer at most ``PAGE_SIZE`` bundles, the newest (those matching
        ``search``: an RFP reference, a vendor's name or a SHA-256 prefix), and
        the one already chosen; any startable bundle is still accepted."""
        field = cast(BundleChoiceField, self.fields["bundle"])
        bundles = bundle_list_matching(self.startable, search)
        offered = list(bundles[:PAGE_SIZE])
        chosen = _int_or_none(
            (self.data if self.is_bound else self.initial).get("bundle")
        )
        if chosen is not None and chosen not in {b.pk for b in offered}:
            offered[:0] = self.startable.filter(pk=chosen)
        field.widget.choices = [(b.pk, field.label_from_instance(b)) for b in offered]
        self.bundles_more = len(offered) >= PAGE_SIZE or bool(search)
        self.bundles_limit, self.bundles_search = PAGE_SIZE, search

    def clean_lab_plan(self) -> dict[str, Any] | None:
        text = self.cleaned_data.get("lab_plan") or ""
        if not text.strip():
            return None
        try:
            plan = json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not JSON: {error}") from None
        if not isinstance(plan, dict):
            raise forms.ValidationError("Must be a JSON object.")
        return plan

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        choice = self.gates.get(data.get("gate") or "")
        bundle = data.get("bundle")
        if choice is not None and bundle is not None and bundle.pk != choice.bundle_id:
            self.add_error(
                "bundle", "The chosen gate runs another bundle: choose that one."
            )
        return data


class PoolCreateForm(forms.Form):
    lab_organisation = forms.ModelChoiceField(
        queryset=LabPool.objects.none(), empty_label=None, label="Lab"
    )
    name = forms.CharField(
        max_length=63,
        validators=[POOL_NAME_VALIDATOR],
        help_text="Workers consume the queue pool.<name>.",
    )
    hardware_class = forms.CharField(max_length=120, required=False)
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False
    )

    def __init__(self, user: User, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        lab_organisation_field = cast(
            forms.ModelChoiceField, self.fields["lab_organisation"]
        )
        lab_organisation_field.queryset = lab_organisation_list_for(user)


class HostJoinForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        label="Host name",
        help_text="How the pool calls the host, e.g. lab-07.",
    )


class PoolPolicyForm(forms.Form):
    """The pool's policy as JSON text; parsed here, validated by the service."""

    policy = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        label="Device and endpoint policy (JSON, reprogate.lab-policy/v1)",
        help_text="Empty: no devices and no network for the pool's runs.",
    )

    def clean_policy(self) -> object:
        text = self.cleaned_data["policy"].strip()
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError as error:
            raise forms.ValidationError(f"Not valid JSON: {error}") from None
