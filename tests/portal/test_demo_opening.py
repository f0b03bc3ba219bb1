"""RFP-DEMO-3, seeded with ``--opening-in`` (``scripts/run`` passes 5 minutes):
both vendors' sealed bids in, its deadline minutes ahead, so that two people on
the buyer side open its bids by hand once it has passed; seeded once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.exceptions import ApplicationError
from accounts.selectors import clock
from artifacts.models import Bundle
from portal.demo import OPENING_RFP, demo_seed
from procurement.models import Rfp
from procurement.services.opening import bid_opening_confirm, bid_opening_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(settings: Any, tmp_path: Path) -> Iterator[Rfp]:
    settings.VAR_DIR = tmp_path
    demo_seed(opening_in=timedelta(minutes=5))  # the real clock, as scripts/run
    yield Rfp.objects.get(reference=OPENING_RFP)
    clock.travel_to(None)


@pytest.mark.slow
def test_its_deadline_is_minutes_ahead_with_both_vendors_sealed_bids(
    seeded: Rfp,
) -> None:
    ahead = seeded.submission_deadline - clock.now()

    assert seeded.status == Rfp.Status.PUBLISHED
    assert timedelta(minutes=4) < ahead <= timedelta(minutes=5)
    assert sorted(seeded.bids.values_list("vendor_organisation__slug", flat=True)) == [
        "acme-flash",
        "bolt-storage",
    ]
    bundles = Bundle.objects.filter(rfp=seeded, status=Bundle.Status.ACCEPTED)
    assert bundles.count() == 2


@pytest.mark.slow
def test_buyer_and_evaluator_open_its_bids_once_the_deadline_passed(
    seeded: Rfp,
) -> None:
    users = get_user_model().objects
    buyer, evaluator = users.get(username="buyer"), users.get(username="evaluator")
    with pytest.raises(ApplicationError):  # sealed until the deadline
        bid_opening_request(rfp=seeded, actor=buyer)

    clock.travel_to(seeded.submission_deadline + timedelta(seconds=1))
    bid_opening_request(rfp=seeded, actor=buyer)
    bid_opening_confirm(rfp=seeded, actor=evaluator)

    seeded.refresh_from_db()
    assert seeded.status == Rfp.Status.OPENED


@pytest.mark.slow
def test_a_second_seed_leaves_it_as_it_is(seeded: Rfp) -> None:
    clock.travel_to(seeded.submission_deadline + timedelta(minutes=10))

    report = demo_seed(opening_in=timedelta(minutes=5))

    assert str(report) == "Demo data already present; nothing changed."
    assert Rfp.objects.filter(reference=OPENING_RFP).count() == 1
    assert Rfp.objects.get(reference=OPENING_RFP).bids.count() == 2


@pytest.mark.slow
def test_without_opening_in_there_is_no_third_rfp(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path

    demo_seed()

    assert not Rfp.objects.filter(reference=OPENING_RFP).exists()


@pytest.mark.parametrize("minutes", ["0", "-3", "five", "1441"])
def test_the_command_refuses_an_opening_that_is_no_whole_minute_count(
    minutes: str,
) -> None:
    with pytest.raises(CommandError, match="--opening-in"):
        call_command("seed_demo", "--opening-in", minutes)

    assert not Rfp.objects.exists()
