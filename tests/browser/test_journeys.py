"""User journeys through a real browser (README: roles): log in and out, each role's
dashboard, vendors kept apart, API docs served offline."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from portal.demo import DEMO_PASSWORD, DEMO_RFP

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.usefixtures("demo_data"),
]

LOGIN_PATH = re.compile(r"/accounts/login/")


def log_in(page: Page, username: str, password: str = DEMO_PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_buyer_logs_in_opens_rfp_and_logs_out(page: Page) -> None:
    log_in(page, "buyer")

    expect(page.get_by_role("heading", name="What needs you now")).to_be_visible()
    panel = page.get_by_test_id("panel-buyer")
    panel.get_by_role("link", name=DEMO_RFP).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(DEMO_RFP)
    expect(page).to_have_url(re.compile(r"/rfps/[0-9a-f-]{36}/$"))

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(LOGIN_PATH)
    expect(page.locator("#id_username")).to_be_visible()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/dashboard/$"))


@pytest.mark.parametrize(
    ("username", "panel"),
    [
        ("buyer", "panel-buyer"),
        ("evaluator", "panel-evaluator"),
        ("vendor-a", "panel-vendor"),
        ("vendor-b", "panel-vendor"),
        ("labops", "panel-labops"),
        ("auditor", "panel-auditor"),
    ],
)
def test_dashboard_shows_the_panel_of_each_role(
    page: Page, username: str, panel: str
) -> None:
    log_in(page, username)

    expect(page.get_by_test_id("current-user")).to_have_text(username)
    expect(page.get_by_test_id(panel)).to_be_visible()
    if panel in {"panel-buyer", "panel-vendor"}:
        expect(page.get_by_test_id(panel)).to_contain_text(DEMO_RFP)


@pytest.mark.parametrize(
    ("username", "own", "competitor"),
    [
        ("vendor-a", "Acme Flash", "Bolt Storage"),
        ("vendor-b", "Bolt Storage", "Acme Flash"),
    ],
)
def test_rfp_detail_hides_the_other_vendor(
    page: Page, username: str, own: str, competitor: str
) -> None:
    log_in(page, username)

    page.get_by_test_id("panel-vendor").get_by_role("link", name=DEMO_RFP).click()

    expect(page.get_by_role("heading", level=1)).to_contain_text(DEMO_RFP)
    expect(page.locator("main")).to_contain_text(own)
    assert competitor not in page.content()


def test_wrong_password_shows_error_and_stays_logged_out(page: Page) -> None:
    log_in(page, "buyer", password="not-the-password")

    expect(page.get_by_role("alert")).to_contain_text("enter a correct username")
    expect(page).to_have_url(LOGIN_PATH)
    expect(page.get_by_test_id("current-user")).to_have_count(0)
    page.goto("/")
    expect(page).to_have_url(LOGIN_PATH)


def test_api_docs_render_offline(page: Page, external_requests: list[str]) -> None:
    page.goto("/api/v1/docs/")

    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    # Swagger UI draws the tags near the viewport only: scroll down to the RFPs.
    rfps = page.get_by_text("/api/v1/rfps/", exact=True)
    for _ in range(200):
        if rfps.count():
            break
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(50)
    expect(rfps.first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert external_requests == []
