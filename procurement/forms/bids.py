from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from django import forms
from django.forms.models import fields_for_model

from accounts.exceptions import ApplicationError
from procurement import conf
from procurement.lib.tco import COST_INPUT_FIELDS
from procurement.models import Bid, CostModelInput
from procurement.selectors.evidence_sources import SignedBundle
from procurement.services.bid_inputs import (
    STATS,
    bundle_cost_inputs,
)

COST_LABELS = {
    "currency": "Currency",
    "hardware_cost": "Hardware cost",
    "amortisation_years": "Amortisation (years)",
    "power_draw_kw": "Power draw (kW)",
    "energy_price_per_kwh": "Energy price (per kWh)",
    "rack_units": "Rack units (U)",
    "rack_unit_cost_per_year": "Cost per rack unit and year",
    "support_cost_per_year": "Support cost per year",
    "delivered_tokens_per_s": "Delivered throughput (tokens/s)",
}
CLAIMS_HELP = (
    "One claim a line: metric stat value [unit] [scenario], e.g. "
    "“ttft_ms p99 180 ms cold-c32”. Write - for no unit. Stats: "
    + ", ".join(STATS)
    + "."
)
CLAIMS_FROM_BUNDLE_HELP = (
    "Taken from the bundle you chose: its signed claims, one a line (metric stat "
    "value [unit] [scenario]). A value you change, or a claim you add, is kept "
    "and shown to the buyer as differing from the signed bundle; a claim you "
    "delete stays, as the bundle signs it. "
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)] if data else []


def claims_as_text(claims: Iterable[Mapping[str, Any]]) -> str:
    lines = []
    for claim in claims:
        unit = claim.get("unit") or ("-" if claim.get("scenario") else "")
        parts = [claim["metric"], claim["stat"], repr(float(claim["value"])), unit]
        lines.append(" ".join([*parts, claim.get("scenario") or ""]).strip())
    return "\n".join(lines)


def _claim_from_line(line: str) -> dict[str, str]:
    words = line.split()
    if not 3 <= len(words) <= 5:
        raise ValueError("write metric stat value [unit] [scenario]")
    words += [""] * (5 - len(words))
    metric, stat, value, unit, scenario = words
    return {
        "metric": metric,
        "stat": stat,
        "value": value,
        "unit": "" if unit == "-" else unit,
        "scenario": scenario,
    }


def _bundle_label(bundle: SignedBundle) -> str:
    claims = len(bundle.claims)
    return (
        f"{bundle.sha256[:16]}… accepted {bundle.uploaded_at:%Y-%m-%d %H:%M} UTC, "
        f"{claims} claim{'s' if claims != 1 else ''}"
    )


class BidForm(forms.Form):
    """The vendor's bid: the signed bundle it relies on, cover note, claimed key
    metrics and cost inputs (pre-filled from the bundle), documents."""

    bundle = forms.ChoiceField(
        label="Signed bundle",
        widget=forms.RadioSelect,
        help_text=(
            "The bid names this bundle: its SHA-256 goes into your commitment, and "
            "its claims and cost model into the fields below."
        ),
    )
    cover_note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}), required=False, max_length=20000
    )
    claims = forms.CharField(
        label="Claimed key metrics",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        required=False,
        help_text=CLAIMS_HELP,
    )
    documents = MultipleFileField(required=False, label="Add documents")
    remove_documents = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Remove documents",
    )

    def __init__(
        self,
        *args: Any,
        bid: Bid | None = None,
        bundles: list[SignedBundle] | None = None,
        load: str = "",
        **kwargs: Any,
    ) -> None:
        """``bundles``: the vendor's accepted bundles on the RFP, newest first;
        ``load``: the one to pre-fill from (default: the bid's, else the newest)."""
        super().__init__(*args, **kwargs)
        self.bundles = bundles or []
        costs = fields_for_model(CostModelInput, fields=COST_INPUT_FIELDS)
        for name, field in costs.items():
            field.label = COST_LABELS[name]
            field.required = not self.bundles  # blank: the bundle's value
            self.fields[name] = field
        if self.bundles:
            bundle_field = cast(forms.ChoiceField, self.fields["bundle"])
            bundle_field.choices = [
                (b.bundle_id, _bundle_label(b)) for b in self.bundles
            ]
            self.fields["claims"].help_text = CLAIMS_FROM_BUNDLE_HELP + CLAIMS_HELP
        else:
            del self.fields["bundle"]
        limit = conf.bid_document_max_bytes() // (1024 * 1024)
        self.fields[
            "documents"
        ].help_text = (
            f"Up to {limit} MB each. A file named like a current document replaces it."
        )
        self.claim_lines: list[int] = []
        if bid is not None:
            self._fill_from(bid)
        chosen = self._chosen(bid, load)
        if chosen is not None:
            self._fill_from_bundle(chosen, bid)

    def _fill_from(self, bid: Bid) -> None:
        self.initial.update(
            cover_note=bid.cover_note, claims=claims_as_text(bid.claimed_metrics)
        )
        inputs = getattr(bid, "cost_inputs", None)
        if inputs is not None:
            self.initial.update({f: getattr(inputs, f) for f in COST_INPUT_FIELDS})
        names = [d.name for d in bid.documents.filter(superseded_at__isnull=True)]
        remove_documents_field = cast(
            forms.ChoiceField, self.fields["remove_documents"]
        )
        remove_documents_field.choices = [(n, n) for n in sorted(names)]

    def _chosen(self, bid: Bid | None, load: str) -> SignedBundle | None:
        by_id = {b.bundle_id: b for b in self.bundles}
        current = str(bid.bundle_public_id) if bid and bid.bundle_public_id else ""
        for candidate in (load, current):
            if candidate in by_id:
                return by_id[candidate]
        return self.bundles[0] if self.bundles else None

    def _fill_from_bundle(self, bundle: SignedBundle, bid: Bid | None) -> None:
        """The bundle's claims and cost inputs, unless the bid already names this
        bundle (then the bid's own values, differences included, stand)."""
        self.initial["bundle"] = bundle.bundle_id
        if bid is not None and str(bid.bundle_public_id or "") == bundle.bundle_id:
            return
        claims = [c for c in bundle.claims if {"metric", "stat", "value"} <= set(c)]
        self.initial["claims"] = claims_as_text(claims)
        self.initial.update(bundle_cost_inputs(bundle))

    @property
    def chosen_bundle(self) -> SignedBundle | None:
        """The bundle selected (bound: as posted; else the pre-filled one)."""
        chosen = self["bundle"].value() if "bundle" in self.fields else None
        return next((b for b in self.bundles if b.bundle_id == chosen), None)

    def clean_claims(self) -> list[dict[str, str]]:
        claims, errors = [], []
        for number, line in enumerate(self.cleaned_data["claims"].splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                claims.append(_claim_from_line(line))
            except ValueError as exc:
                errors.append(f"Line {number}: {exc}.")
            else:
                self.claim_lines.append(number)
        if errors:
            raise forms.ValidationError(errors)
        return claims

    def cost_inputs(self) -> dict[str, Any]:
        return {f: self.cleaned_data[f] for f in COST_INPUT_FIELDS}

    def bundle_id(self) -> str | None:
        return self.cleaned_data.get("bundle") or None

    def add_problems(self, exc: ApplicationError) -> None:
        """Show a service's refusal beside the fields it names."""
        placed = False
        for problem in exc.problems:
            path = problem.path or ""
            if path.startswith("claims[") and self.claim_lines:
                index = int(path[len("claims[") : path.index("]")])
                line = self.claim_lines[index]
                self.add_error("claims", f"Line {line}: {problem.message}")
                placed = True
            elif path.startswith("cost_inputs."):
                self.add_error(path.removeprefix("cost_inputs."), problem.message)
                placed = True
            elif path == "bundle" and "bundle" in self.fields:
                self.add_error("bundle", problem.message)
                placed = True
        if not placed:
            field = "documents" if exc.code.startswith("document_") else None
            self.add_error(field, exc.message)

    def content_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("cover_note", "claims")]

    def cost_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in COST_INPUT_FIELDS]
