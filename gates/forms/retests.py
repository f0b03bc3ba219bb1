"""Forms of a re-test obligation's page: the vendor's revised bundle and the
lab's pool."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from artifacts.models import Bundle
from benchmarks.models import LabPool
from benchmarks.selectors.access import pool_list_operated_by
from benchmarks.selectors.pools import pool_list_with_online_hosts
from gates.models import RetestObligation


class RequestRetestForm(forms.Form):
    bundle = forms.ModelChoiceField(
        queryset=Bundle.objects.none(), to_field_name="public_id"
    )

    def __init__(self, *args: Any, obligation: RetestObligation, **kwargs: Any):
        super().__init__(*args, **kwargs)
        used = [obligation.bundle_id]
        if obligation.evaluation is not None:
            used.append(obligation.evaluation.campaign.bundle_id)
        bundle_field = cast(forms.ModelChoiceField, self.fields["bundle"])
        bundle_field.queryset = (
            Bundle.objects.filter(
                rfp_id=obligation.rfp_id,
                organisation_id=obligation.vendor_organisation_id,
                status=Bundle.Status.ACCEPTED,
            )
            .exclude(pk__in=[pk for pk in used if pk])
            .order_by("-id")
        )


class StartCampaignForm(forms.Form):
    pool = forms.ModelChoiceField(
        queryset=LabPool.objects.none(), to_field_name="public_id"
    )

    def __init__(self, *args: Any, obligation: RetestObligation, user: Any, **kw: Any):
        super().__init__(*args, **kw)
        labs = obligation.rfp.buyer_organisation.engages.values("pk")
        pool_field = cast(forms.ModelChoiceField, self.fields["pool"])
        pool_field.queryset = pool_list_with_online_hosts(
            pool_list_operated_by(user).filter(lab_organisation_id__in=labs)
        )
