from __future__ import annotations

from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import AuditEvent, Membership
from portal.demo import ACCOUNTS, DEMO_PASSWORD
from procurement.models import Rfp

pytestmark = pytest.mark.django_db

PANELS = {
    "buyer": "panel-buyer",
    "evaluator": "panel-evaluator",
    "vendor-a": "panel-vendor",
    "vendor-b": "panel-vendor",
    "labops": "panel-labops",
    "auditor": "panel-auditor",
}


@pytest.fixture
def demo(settings: Any) -> None:
    settings.DEBUG = True
    call_command("seed_demo", stdout=None)


@pytest.mark.slow
@pytest.mark.parametrize(("username", "panel"), PANELS.items())
def test_each_demo_account_logs_in_to_its_dashboard(
    demo: None, username: str, panel: str
) -> None:
    client = Client()

    assert client.login(username=username, password=DEMO_PASSWORD)
    html = client.get("/dashboard/").content.decode()

    assert f'data-testid="{panel}"' in html
    other_panels = set(PANELS.values()) - {panel}
    assert not any(f'data-testid="{p}"' in html for p in other_panels)


@pytest.mark.slow
@pytest.mark.parametrize("username", ["buyer", "vendor-a", "vendor-b"])
def test_demo_rfp_is_on_the_dashboard_of_buyer_and_both_vendors(
    demo: None, username: str
) -> None:
    client = Client()
    client.login(username=username, password=DEMO_PASSWORD)

    assert "RFP-DEMO-1" in client.get("/dashboard/").content.decode()


@pytest.mark.slow
def test_seed_demo_is_idempotent(demo: None) -> None:
    events = AuditEvent.objects.count()

    call_command("seed_demo")

    assert AuditEvent.objects.count() == events
    assert Membership.objects.count() == len(ACCOUNTS)
    rfp = Rfp.objects.get(reference="RFP-DEMO-1")
    assert rfp.status == Rfp.Status.PUBLISHED
    assert sorted(rfp.invited_vendors.values_list("slug", flat=True)) == [
        "acme-flash",
        "bolt-storage",
    ]


def test_seed_demo_refuses_without_debug(settings: Any) -> None:
    settings.DEBUG = False

    with pytest.raises(CommandError, match="DEBUG"):
        call_command("seed_demo")

    assert not Rfp.objects.exists()


@pytest.mark.slow
def test_seed_demo_runs_without_debug_when_forced(settings: Any) -> None:
    settings.DEBUG = False

    call_command("seed_demo", "--force")

    assert Rfp.objects.filter(reference="RFP-DEMO-1").exists()


def test_empty_dashboard_explains_itself(client_for: Any, vendor_a: Any) -> None:
    html = client_for(vendor_a).get("/dashboard/").content.decode()

    assert "No open invitations" in html


@pytest.mark.slow
def test_recent_activity_labels_each_action(demo: None) -> None:
    client = Client()
    assert client.login(username="buyer", password=DEMO_PASSWORD)

    html = client.get("/dashboard/").content.decode()

    assert (
        'Bid opening confirmed <code class="muted small">rfp.opening_confirmed' in html
    )
