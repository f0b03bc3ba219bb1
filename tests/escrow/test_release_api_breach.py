"""The release request API cites a recorded breach on the breach condition,
as the request page does: a failed or expired re-test obligation of the
awarded vendor's is quoted in the statement and named by the request's log
entry; an unknown id, another vendor's obligation, or a breach cited on
another condition answer 400 with the problem at ``breach``. The schema
documents the field."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from accounts.models import Organisation
from artifacts.models import Bundle, EscrowEvent, Release
from artifacts.selectors.breaches import breaches_citable
from gates.models import RetestObligation
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.benchmarks.runner.support import accepted_bundle, make_pool, start
from tests.escrow.release_support import award_to
from tests.gates.reproduced_support import runner_bundle
from tests.gates.support import FAIL, LAB, finish_runs, make_frozen_plan

pytestmark = pytest.mark.django_db
URL = "/api/v1/escrow/releases/"


@pytest.fixture
def bolt_bundle(tmp_path: Path, rfp: Rfp, vendor_b_org: Organisation, vendor_b: Any):
    """The other vendor's bundle, ingested while the RFP takes bids."""
    return runner_bundle(tmp_path / "bolt", rfp, vendor_b_org, vendor_b)


@pytest.fixture
def acme_bundle(
    tmp_path: Path,
    rfp: Rfp,
    vendor_a_org: Organisation,
    vendor_a: Any,
    bolt_bundle: Bundle,
) -> Bundle:
    """Acme's bundle, after Bolt's: it opens the bids."""
    return accepted_bundle(tmp_path / "acme", rfp, vendor_a_org, vendor_a)


@pytest.fixture
def oblige(buyer_org: Organisation, buyer: Any, labops: Any) -> Any:
    """``oblige(bundle)``: the re-test obligation a failed lab-validation gate
    of a new campaign of ``bundle`` raises on its vendor."""

    def make(bundle: Bundle) -> RetestObligation:
        bundle.rfp.refresh_from_db()
        vendor = bundle.organisation
        lab = buyer_org.engages.get(kind=Organisation.Kind.LAB)
        pool = make_pool(lab, name=f"pool-{vendor.slug}")
        campaign = start(bundle, pool, labops, repetitions=3)
        finish_runs(campaign, {"cold-c1": FAIL})
        plan = make_frozen_plan(bundle.rfp, vendor, buyer)
        gate_judge(plan=plan, gate=LAB, campaign=campaign, actor=buyer)
        return RetestObligation.objects.get(vendor_organisation=vendor)

    return make


@pytest.fixture
def breaches(
    rfp: Rfp,
    oblige: Any,
    acme_bundle: Bundle,
    bolt_bundle: Bundle,
    vendor_a_org: Organisation,
    buyer: Any,
    clock: Any,
) -> dict[str, RetestObligation]:
    """Both vendors' re-test obligations, expired; the RFP awarded to Acme."""
    acme, bolt = oblige(acme_bundle), oblige(bolt_bundle)
    award_to(rfp, vendor_a_org, buyer)
    clock.advance(days=rfp.retest_deadline_days + 1)
    return {"acme": acme, "bolt": bolt}


def _post(buyer: Any, rfp: Rfp, **fields: Any) -> Any:
    client = Client()
    client.force_login(buyer)
    body = {"rfp": str(rfp.public_id), "condition": "breach", "statement": ""}
    return client.post(URL, {**body, **fields}, content_type="application/json")


def test_a_request_cites_the_vendors_expired_obligation(
    breaches: dict[str, RetestObligation], rfp: Rfp, buyer: Any
) -> None:
    obligation = breaches["acme"]

    response = _post(buyer, rfp, breach=str(obligation.public_id))

    assert response.status_code == 201, response.json()
    assert response.json()["statement"].startswith(
        f"Re-test obligation {obligation.public_id} on the gate {LAB}"
    )
    release = Release.objects.get()
    event = EscrowEvent.objects.get(action="release.requested")
    logged = json.loads(bytes(event.leaf))["breach"]
    assert (logged["id"], logged["kind"]) == (
        str(obligation.public_id),
        "retest_obligation",
    )
    assert release.statement == response.json()["statement"]


def _refused(response: Any, code: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code
    assert [p["path"] for p in body["problems"]] == ["breach"]
    assert not Release.objects.exists()


def test_an_unknown_breach_is_refused_at_its_field(
    breaches: dict[str, RetestObligation], rfp: Rfp, buyer: Any
) -> None:
    _refused(_post(buyer, rfp, breach=str(uuid.uuid4())), "unknown_breach")


def test_another_vendors_obligation_is_not_citable(
    breaches: dict[str, RetestObligation], rfp: Rfp, buyer: Any
) -> None:
    bolt = breaches["bolt"]
    citable = breaches_citable(rfp, bolt.vendor_organisation_id)
    assert [b.id for b in citable] == [str(bolt.public_id)]  # Bolt's own breach

    _refused(_post(buyer, rfp, breach=str(bolt.public_id)), "unknown_breach")


def test_a_breach_on_another_condition_is_refused(
    breaches: dict[str, RetestObligation], rfp: Rfp, buyer: Any
) -> None:
    cited = str(breaches["acme"].public_id)

    response = _post(buyer, rfp, condition="insolvency", breach=cited)

    _refused(response, "breach_cited")


def test_an_open_obligation_is_not_yet_a_breach(
    rfp: Rfp, oblige: Any, acme_bundle: Bundle, vendor_a_org: Any, buyer: Any
) -> None:
    obligation = oblige(acme_bundle)
    award_to(rfp, vendor_a_org, buyer)

    response = _post(buyer, rfp, breach=str(obligation.public_id))

    _refused(response, "unknown_breach")


def test_the_schema_documents_the_breach_field(db: None) -> None:
    schema = Client().get("/api/v1/schema/", {"format": "json"}).json()

    request = schema["components"]["schemas"]["EscrowReleaseRequestInput"]
    assert request["properties"]["breach"]["type"] == "string"
    assert "re-test obligation" in request["properties"]["breach"]["description"]
    assert "breach" not in request.get("required", [])
