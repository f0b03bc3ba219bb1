"""The drift policy as a contract term: editor, API, addenda and the RFP page;
an invalid policy is refused with the path of each problem."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import Organisation
from procurement.exceptions import ProcurementError
from procurement.lib.drift_policy import SCHEMA
from procurement.models import Rfp
from procurement.services.addenda import rfp_amend
from tests.procurement.factories_rfps import draft_rfp, published_rfp
from tests.procurement.test_reproduced_terms import TERMS

pytestmark = pytest.mark.django_db

POLICY = {"schema": SCHEMA, "rules": {"accelerator.firmware.patch": "info"}}


def _api(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


def _terms_step(rfp: Rfp) -> str:
    return f"/rfps/{rfp.public_id}/edit/?step=terms"


def test_a_new_rfp_has_the_default_policy(buyer_org: Organisation) -> None:
    assert draft_rfp(buyer_org).drift_policy == {}


def test_the_editor_saves_a_policy_and_empty_means_the_defaults(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)

    saved = client_for(buyer).post(
        _terms_step(rfp), TERMS | {"drift_policy": json.dumps(POLICY)}
    )
    rfp.refresh_from_db()
    policy = rfp.drift_policy
    client_for(buyer).post(_terms_step(rfp), TERMS | {"drift_policy": ""})
    rfp.refresh_from_db()

    assert saved.status_code == 302
    assert policy == POLICY
    assert rfp.drift_policy == {}


def test_the_editor_refuses_an_unknown_rule(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    bad = {"schema": SCHEMA, "rules": {"gpu.colour": "major"}}

    response = client_for(buyer).post(
        _terms_step(rfp), TERMS | {"drift_policy": json.dumps(bad)}
    )

    assert response.status_code == 200
    assert "$.rules.gpu.colour: unknown rule" in response.content.decode()
    rfp.refresh_from_db()
    assert rfp.drift_policy == {}


def test_the_api_reads_writes_and_refuses_policies(
    buyer: Any, buyer_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org)
    url = f"/api/v1/rfps/{rfp.public_id}/"

    patched = _api(buyer).patch(url, {"drift_policy": POLICY}, format="json")
    refused = _api(buyer).patch(
        url, {"drift_policy": {"schema": SCHEMA, "rules": {"kernel": "fatal"}}},
        format="json",
    )  # fmt: skip

    assert patched.status_code == 200
    assert _api(buyer).get(url).json()["terms"]["drift_policy"] == POLICY
    assert refused.status_code == 400
    assert refused.json()["problems"][0]["path"].endswith("drift_policy")
    assert "one of major, minor, info, ignore" in json.dumps(refused.json())


def test_an_addendum_changes_the_policy_and_shows_it(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    response = _api(buyer).post(
        f"/api/v1/rfps/{rfp.public_id}/addenda/",
        {"changes": {"drift_policy": POLICY}, "reason": "Firmware patches are fine."},
        format="json",
    )

    assert response.status_code == 201
    (change,) = response.json()["changes"]
    assert (change["field"], change["label"], change["new"]) == (
        "drift_policy", "Drift policy", POLICY,
    )  # fmt: skip
    rfp.refresh_from_db()
    assert rfp.drift_policy == POLICY


def test_an_addendum_refuses_an_invalid_policy(
    buyer: Any, buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = published_rfp(buyer_org, vendor_a_org)

    with pytest.raises(ProcurementError):
        rfp_amend(rfp=rfp, changes={"drift_policy": [1]}, reason="x", actor=buyer)
    with pytest.raises(ProcurementError):
        rfp_amend(
            rfp=rfp, changes={"drift_policy": {"rules": {}}}, reason="x", actor=buyer
        )

    rfp.refresh_from_db()
    assert rfp.drift_policy == {}


def test_the_rfp_page_names_the_overridden_rules(
    buyer: Any, buyer_org: Organisation, client_for: Any
) -> None:
    rfp = draft_rfp(buyer_org)
    default = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()
    Rfp.objects.filter(pk=rfp.pk).update(drift_policy=POLICY)

    html = client_for(buyer).get(f"/rfps/{rfp.public_id}/").content.decode()

    assert "The default severities (accelerator count" in default
    assert "<code>accelerator.firmware.patch</code> → info" in html
