"""Forms of the RFP editor, the RFP list and the RFP overview's buyer actions."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, cast

from django import forms
from django.core.validators import RegexValidator
from django.db.models import QuerySet

from accounts.forms.users import UtcDateTimeInput
from accounts.models import Organisation
from accounts.selectors import clock
from procurement.lib import requirements as req
from procurement.models import ArtifactKind, Rfp, RfpTemplate
from procurement.models.rfp import RFP_TERMS_FIELDS


def _datetime_field(label: str, *, required: bool) -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=required,
        widget=UtcDateTimeInput(),
        help_text="UTC, as YYYY-MM-DD HH:MM.",
    )


def _check_deadlines(form: forms.BaseForm, data: dict[str, Any]) -> None:
    questions, submission = (
        data.get("questions_deadline"),
        data.get("submission_deadline"),
    )
    if questions and submission and questions >= submission:
        form.add_error(
            "questions_deadline",
            "The questions deadline must come before the submission deadline.",
        )


class RfpFilterForm(forms.Form):
    status = forms.ChoiceField(
        required=False, choices=[("", "Any status"), *Rfp.Status.choices]
    )


class RfpCreateForm(forms.Form):
    """A new draft: what identifies it and where its configuration comes from."""

    buyer_organisation = forms.ModelChoiceField(
        queryset=Organisation.objects.none(), empty_label=None, label="Buyer"
    )
    template = forms.ModelChoiceField(
        queryset=RfpTemplate.objects.none(),
        required=False,
        empty_label="Standard checklist (six artifact kinds, metrics, criteria)",
        label="Start from",
        to_field_name="public_id",
    )
    reference = forms.CharField(
        max_length=40,
        validators=[Rfp._meta.get_field("reference").validators[0]],
        help_text="Capital letters, digits and dashes, e.g. RFP-2026-07.",
    )
    title = forms.CharField(max_length=200)
    questions_deadline = _datetime_field("Questions due", required=False)
    submission_deadline = _datetime_field("Submission deadline", required=True)

    def __init__(
        self,
        *args: Any,
        organisations: QuerySet[Organisation],
        templates: QuerySet[RfpTemplate],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        buyer_organisation_field = cast(
            forms.ModelChoiceField, self.fields["buyer_organisation"]
        )
        buyer_organisation_field.queryset = organisations
        if len(organisations) == 1:
            self.fields["buyer_organisation"].initial = organisations[0]
        template_field = cast(forms.ModelChoiceField, self.fields["template"])
        template_field.queryset = templates

    def clean_reference(self) -> str:
        reference = self.cleaned_data["reference"]
        if Rfp.objects.filter(reference=reference).exists():
            raise forms.ValidationError(f"{reference} is taken; choose another.")
        return reference

    def clean_submission_deadline(self) -> Any:
        deadline = self.cleaned_data["submission_deadline"]
        if deadline <= clock.now():
            raise forms.ValidationError(
                "The submission deadline must be in the future."
            )
        return deadline

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        template = data.get("template")
        organisation = data.get("buyer_organisation")
        if template and organisation and template.buyer_organisation != organisation:
            self.add_error("template", "That template belongs to another organisation.")
        _check_deadlines(self, data)
        return data


class RfpBasicsForm(forms.ModelForm):
    questions_deadline = _datetime_field("Questions due", required=False)
    submission_deadline = _datetime_field("Submission deadline", required=True)

    class Meta:
        model = Rfp
        fields = [
            "reference",
            "title",
            "description",
            "questions_deadline",
            "submission_deadline",
            "min_bids",
            "addendum_extension_days",
        ]
        labels = {
            "min_bids": "Minimum number of bids",
            "addendum_extension_days": "Addendum extension (days)",
        }
        help_texts = {
            "description": "Markdown: **bold**, lists, tables, links.",
            "min_bids": "Closing with fewer valid bids makes the RFP unsuccessful.",
            "addendum_extension_days": (
                "An addendum within this many days of the deadline pushes it out "
                "so that this many days remain."
            ),
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 10})}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        _check_deadlines(self, data)
        return data


class RfpWorkloadsForm(forms.ModelForm):
    class Meta:
        model = Rfp
        fields = ["workload_requirements"]
        widgets = {"workload_requirements": forms.Textarea(attrs={"rows": 6})}


class RfpTermsForm(forms.ModelForm):
    class Meta:
        model = Rfp
        fields = list(RFP_TERMS_FIELDS)
        labels = {
            "escrow_clause": "Artifact escrow",
            "escrow_retention_years": "Escrow retention (years)",
            "acceptance_clause": "Gate-based acceptance with stop-loss",
            "retest_clause": "Re-test",
            "retest_tolerance_pct": "Tolerance band (%)",
            "retest_vendor_funded": "Re-tests are vendor-funded",
            "retest_deadline_days": "Re-test deadline (days after a failed gate)",
            "retest_max_attempts": "Re-test attempts per obligation",
            "audit_rights_clause": "Audit rights (third-party re-runs)",
            "dispute_window_days": (
                "Dispute window (days a vendor may contest a verdict)"
            ),
            "update_deposit_days": "Update deposit deadline (days after an update)",
            "drift_policy": "Drift policy (JSON; empty for the defaults)",
            "standstill_days": "Standstill period after award (days)",
        }
        widgets = {
            name: forms.Textarea(attrs={"rows": 4})
            for name in (
                "escrow_clause",
                "acceptance_clause",
                "retest_clause",
                "audit_rights_clause",
                "drift_policy",
            )
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.KEEP_WHEN_EMPTY:  # left empty: the value stays as it is
            self.fields[name].required = False

    KEEP_WHEN_EMPTY = (
        "retest_deadline_days",
        "retest_max_attempts",
        "dispute_window_days",
        "update_deposit_days",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name in self.KEEP_WHEN_EMPTY:
            if data.get(name) is None:
                data[name] = getattr(self.instance, name)
        if data.get("drift_policy") is None:  # left empty: the defaults
            data["drift_policy"] = {}
        return data


# --- rows: artifacts, metrics, criteria ---------------------------------------------


class RowFormSet(forms.BaseFormSet):
    """A list of rows; blank extra rows are ignored, ticked rows deleted."""

    unique_field = ""

    def rows(self) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in form.cleaned_data.items() if k != "DELETE"}
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]

    def clean(self) -> None:
        if any(self.errors) or not self.unique_field:
            return
        names = Counter(row[self.unique_field] for row in self.rows())
        twice = sorted(name for name, n in names.items() if n > 1)
        if twice:
            raise forms.ValidationError(
                f"Each name may appear once: {', '.join(twice)}."
            )


class ArtifactForm(forms.Form):
    kind = forms.ChoiceField(choices=[("", "Choose a kind…"), *ArtifactKind.choices])
    title = forms.CharField(max_length=200)
    guidance = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    mandatory = forms.BooleanField(required=False)


class MetricForm(forms.Form):
    name = forms.CharField(
        max_length=64,
        validators=[RegexValidator(r"^[a-z][a-z0-9_]*$", "Use lower_snake_case.")],
        help_text="With its unit, e.g. ttft_ms.",
    )
    stats = forms.CharField(
        max_length=100,
        required=False,
        validators=[
            RegexValidator(
                r"^[a-z0-9.]+(,[a-z0-9.]+)*$",
                "Comma-separated statistics without spaces, e.g. p50,p95,p99.",
            )
        ],
    )
    series = forms.BooleanField(
        required=False, label="Series", help_text="Also as a curve over time."
    )
    description = forms.CharField(max_length=200, required=False)


class CriterionForm(forms.Form):
    name = forms.CharField(max_length=120)
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    weight = forms.IntegerField(min_value=0, max_value=100)


class MetricFormSet(RowFormSet):
    unique_field = "name"


class CriterionFormSet(RowFormSet):
    unique_field = "name"

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        total = sum(row["weight"] for row in self.rows())
        if total != 100:
            raise forms.ValidationError(
                f"The weights add up to {total}; they must add up to 100."
            )


ArtifactFormSetFactory = forms.formset_factory(
    ArtifactForm, formset=RowFormSet, extra=1, can_delete=True
)
MetricFormSetFactory = forms.formset_factory(
    MetricForm, formset=MetricFormSet, extra=1, can_delete=True
)
CriterionFormSetFactory = forms.formset_factory(
    CriterionForm, formset=CriterionFormSet, extra=1, can_delete=True
)


# --- invitations and buyer actions --------------------------------------------------


class InviteForm(forms.Form):
    vendor = forms.ModelChoiceField(
        queryset=Organisation.objects.none(),
        label="Vendor organisation",
        empty_label="Choose a vendor…",
        to_field_name="slug",
    )

    def __init__(
        self, *args: Any, vendors: QuerySet[Organisation], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        vendor_field = cast(forms.ModelChoiceField, self.fields["vendor"])
        vendor_field.queryset = vendors


class CancelForm(forms.Form):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Invited vendors receive it.",
    )


class TemplateSaveForm(forms.Form):
    name = forms.CharField(
        max_length=120,
        label="Template name",
        help_text="Saves the checklist, metrics, criteria and terms; not the "
        "reference, deadlines or invitations.",
    )


# --- the requirements document (the "workloads and metrics" step) -------------------


def _checkboxes(names: tuple[str, ...], label: str) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        label=label,
        required=False,
        choices=[(n, n) for n in names],
        widget=forms.CheckboxSelectMultiple,
    )


class RfpRequirementsForm(forms.Form):
    """The requirements document's single-valued sections."""

    approaches = _checkboxes(req.APPROACHES, "Approaches bids may take")
    transports = _checkboxes(req.TRANSPORTS, "Fabric transports allowed")
    qos = forms.BooleanField(label="The fabric must offer QoS", required=False)
    pinned = _checkboxes(req.PINNED_FIELDS, "Environment facts pinned on every run")
    bid_requires_bundle = forms.BooleanField(
        label="A bid needs an accepted bundle with every mandatory artifact",
        required=False,
    )


class WorkloadForm(forms.Form):
    id = forms.RegexField(
        regex=rf"^{req.WORKLOAD_ID_RE.pattern}\Z",
        max_length=64,
        label="Id",
        help_text="e.g. chat-70b",
        error_messages={"invalid": "Lower-case letters, digits, '.', '_', '-'."},
    )
    model_family = forms.ChoiceField(
        label="Model family",
        # a blank first choice: a blank row posts nothing and is skipped
        choices=[("", "Choose…"), *((f, f) for f in req.MODEL_FAMILIES)],
    )
    params_low = forms.FloatField(
        label="Params (B) from",
        required=False,
        min_value=req.MIN_PARAMS_B,
        max_value=req.MAX_PARAMS_B,
    )
    params_high = forms.FloatField(
        label="to",
        required=False,
        min_value=req.MIN_PARAMS_B,
        max_value=req.MAX_PARAMS_B,
    )
    context_tokens = forms.IntegerField(
        label="Context (tokens)",
        required=False,
        min_value=1,
        max_value=req.MAX_CONTEXT_TOKENS,
    )
    concurrency_low = forms.IntegerField(
        label="Concurrency from",
        required=False,
        min_value=1,
        max_value=req.MAX_CONCURRENCY,
    )
    concurrency_high = forms.IntegerField(
        label="to", required=False, min_value=1, max_value=req.MAX_CONCURRENCY
    )
    tenants = forms.IntegerField(
        label="Tenants", required=False, min_value=1, max_value=req.MAX_TENANTS
    )
    scenario_kinds = _checkboxes(req.SCENARIO_KINDS, "Scenarios")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for pair in (
            ("params_low", "params_high"),
            ("concurrency_low", "concurrency_high"),
        ):
            given = [data.get(name) is not None for name in pair]
            if any(given) and not all(given):
                self.add_error(pair[1], "Give both ends of the range (or neither).")
        return data

    def document(self) -> dict[str, Any]:
        """The workload as the requirements document states it."""
        data = self.cleaned_data
        workload: dict[str, Any] = {
            "id": data["id"],
            "model_family": data["model_family"],
        }
        if data.get("params_low") is not None:
            workload["params_b"] = [data["params_low"], data["params_high"]]
        if data.get("context_tokens") is not None:
            workload["context_tokens"] = data["context_tokens"]
        if data.get("concurrency_low") is not None:
            workload["concurrency"] = [
                data["concurrency_low"],
                data["concurrency_high"],
            ]
        if data.get("tenants") is not None:
            workload["tenants"] = data["tenants"]
        workload["scenario_kinds"] = data["scenario_kinds"]
        return workload

    @staticmethod
    def initial_for(workload: dict[str, Any]) -> dict[str, Any]:
        params = workload.get("params_b") or [None, None]
        concurrency = workload.get("concurrency") or [None, None]
        return {
            "id": workload["id"],
            "model_family": workload["model_family"],
            "params_low": params[0],
            "params_high": params[1],
            "context_tokens": workload.get("context_tokens"),
            "concurrency_low": concurrency[0],
            "concurrency_high": concurrency[1],
            "tenants": workload.get("tenants"),
            "scenario_kinds": workload.get("scenario_kinds", []),
        }


_SDK_ENTRY = re.compile(rf"({req.SDK_NAME_RE.pattern})\s*({req.SDK_SPEC_RE.pattern})")


class AcceleratorForm(forms.Form):
    vendors = _checkboxes(req.ACCELERATOR_VENDORS, "Vendors")
    per_node = forms.IntegerField(
        label="Per node", required=False, min_value=1, max_value=req.MAX_PER_NODE
    )
    sdk = forms.CharField(
        label="SDK versions",
        required=False,
        max_length=400,
        help_text="e.g. cuda>=12.2; cann>=8.0,<9",
    )

    def clean_vendors(self) -> list[str]:
        vendors = self.cleaned_data["vendors"]
        if not vendors:
            raise forms.ValidationError("Tick at least one vendor.")
        return vendors

    def clean_sdk(self) -> dict[str, str]:
        entries = [e.strip() for e in self.cleaned_data["sdk"].split(";") if e.strip()]
        sdk: dict[str, str] = {}
        for entry in entries:
            match = _SDK_ENTRY.fullmatch(entry.replace(" ", ""))
            if match is None:
                raise forms.ValidationError(
                    f"{entry!r}: an SDK name and its versions, e.g. cuda>=12.2."
                )
            sdk[match.group(1)] = match.group(2)
        if len(sdk) > req.MAX_SDKS:
            raise forms.ValidationError(f"At most {req.MAX_SDKS} SDKs.")
        return sdk

    def document(self) -> dict[str, Any]:
        data = self.cleaned_data
        accelerator: dict[str, Any] = {"vendors": data["vendors"]}
        if data.get("per_node") is not None:
            accelerator["per_node"] = data["per_node"]
        accelerator["sdk"] = data["sdk"]
        return accelerator

    @staticmethod
    def initial_for(accelerator: dict[str, Any]) -> dict[str, Any]:
        sdk = "; ".join(f"{n}{v}" for n, v in accelerator.get("sdk", {}).items())
        return {
            "vendors": accelerator["vendors"],
            "per_node": accelerator.get("per_node"),
            "sdk": sdk,
        }


class DocumentFormSet(RowFormSet):
    """Rows that are parts of the requirements document."""

    def documents(self) -> list[dict[str, Any]]:
        return [
            form.document()
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]


class WorkloadFormSet(DocumentFormSet):
    unique_field = "id"


WorkloadFormSetFactory = forms.formset_factory(
    WorkloadForm,
    formset=WorkloadFormSet,
    extra=1,
    can_delete=True,
    max_num=req.MAX_WORKLOADS,
    validate_max=True,
)
AcceleratorFormSetFactory = forms.formset_factory(
    AcceleratorForm,
    formset=DocumentFormSet,
    extra=1,
    can_delete=True,
    max_num=req.MAX_ACCELERATORS,
    validate_max=True,
)
