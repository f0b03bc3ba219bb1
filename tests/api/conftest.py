"""The API's test world: an opened RFP of ``buyer_org`` with an accepted bundle of
Acme Flash (so a deposit in escrow), a campaign of the engaged lab on it, and an
API token each for the buyer and the vendor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from accounts.services.users import api_token_issue
from artifacts.models import Bundle
from benchmarks.models import Campaign
from procurement.models import Rfp
from tests.artifacts.ingest_support import (
    upload_rfp,  # noqa: F401 (fixture rfp)
)
from tests.benchmarks.runner.support import (
    accepted_bundle,
    make_pool,
    runner_work_dir,  # noqa: F401 (fixture)
    start,
)


@dataclass(frozen=True)
class World:
    rfp: Rfp
    bundle: Bundle
    campaign: Campaign
    tokens: dict[str, str]  # "buyer", "vendor": the raw token


@pytest.fixture
def world(
    tmp_path: Path,
    rfp: Rfp,
    buyer: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
    labops: Any,
    runner_work_dir: Path,  # noqa: F811
) -> World:
    bundle = accepted_bundle(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)
    lab = rfp.buyer_organisation.engages.get(kind=Organisation.Kind.LAB)
    campaign = start(bundle, make_pool(lab), labops)
    tokens = {
        role: api_token_issue(user=user, name="openapi test")[1]
        for role, user in (("buyer", buyer), ("vendor", vendor_a))
    }
    return World(rfp=rfp, bundle=bundle, campaign=campaign, tokens=tokens)
