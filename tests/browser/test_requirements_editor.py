"""The RFP editor's "workloads and metrics" step in Chromium: a buyer ticks the
approaches, fills a workload row, adds a second one without JavaScript's help
("Save and add a row"), and the API then answers the same document."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from rest_framework.test import APIClient

from accounts.models import Organisation
from tests.procurement.factories_rfps import draft_rfp

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "correct horse battery staple"


def _log_in(page: Page, user: Any) -> None:
    user.set_password(PASSWORD)
    user.save()
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(user.username)
    page.locator("#id_password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(user.username)


def _fill_workload(page: Page, row: int, workload_id: str, family: str) -> None:
    prefix = f"#id_workloads-{row}-"
    page.locator(f"{prefix}id").fill(workload_id)
    page.locator(f"{prefix}model_family").select_option(family)
    page.locator(f"{prefix}concurrency_low").fill("8")
    page.locator(f"{prefix}concurrency_high").fill("64")


def test_the_workloads_step_saves_the_document_the_api_reads(
    transactional_db: None, page: Page, buyer: Any, buyer_org: Organisation
) -> None:
    rfp = draft_rfp(buyer_org)
    _log_in(page, buyer)
    page.goto(f"/rfps/{rfp.public_id}/edit/?step=workloads")

    page.get_by_label("kv-cache-tiering").check()
    page.locator("#id_transports").get_by_label("rdma").check()
    page.locator("#id_pinned").get_by_label("nvme_firmware").check()
    page.get_by_label("A bid needs an accepted bundle").check()
    _fill_workload(page, 0, "chat-70b", "decoder")
    page.locator("#id_workloads-0-scenario_kinds").get_by_label("failover").check()
    page.get_by_test_id("save-stay").click()
    _fill_workload(page, 1, "moe-480b", "moe-decoder")
    page.get_by_test_id("save-stay").click()
    expect(page.locator("#id_workloads-1-id")).to_have_value("moe-480b")
    page.get_by_test_id("save-continue").click()  # the blank third row is skipped
    expect(page.get_by_test_id("step-criteria")).to_have_attribute(
        "aria-current", "step"
    )

    api = APIClient()
    api.force_authenticate(buyer)
    doc = api.get(f"/api/v1/rfps/{rfp.public_id}/requirements/").json()
    assert doc["approaches"] == ["kv-cache-tiering"]
    assert doc["fabric"]["transports"] == ["rdma"]
    assert doc["environment"]["pinned"] == ["nvme_firmware"]
    assert doc["artifacts"]["bid_requires_bundle"] is True
    assert [(w["id"], w["model_family"]) for w in doc["workloads"]] == [
        ("chat-70b", "decoder"),
        ("moe-480b", "moe-decoder"),
    ]
    assert doc["workloads"][0]["scenario_kinds"] == ["failover"]
    assert doc["workloads"][1]["concurrency"] == [8, 64]
