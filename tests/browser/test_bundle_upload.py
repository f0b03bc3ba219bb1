"""The vendor's bundle upload page in Chromium: the script uploads through the API
with a progress bar, then opens the bundle page or lists the problems in place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from procurement.models import Rfp
from tests.accounts.factories import PASSWORD
from tests.artifacts.corpus.build import good_files
from tests.artifacts.ingest_support import (
    build_bundle,
    upload_rfp,  # noqa: F401 (fixture rfp)
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _upload(page: Page, rfp: Rfp, bundle: Path) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", "vendor-a")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"/artifacts/rfps/{rfp.public_id}/bundles/upload/")
    page.set_input_files("input[type=file]", str(bundle))
    expect(page.locator("[data-file-name]")).to_contain_text(bundle.name)
    page.get_by_test_id("bundle-upload-submit").click()


def test_script_uploads_and_opens_the_accepted_bundle(
    page: Page, rfp: Rfp, tmp_path: Path
) -> None:
    _upload(page, rfp, build_bundle(tmp_path))

    expect(page).to_have_url(re.compile(r"/artifacts/bundles/[0-9a-f-]{36}/$"))
    expect(page.get_by_test_id("bundle-status")).to_have_text("accepted")
    files = page.get_by_test_id("bundle-file")
    expect(files).to_have_count(len(good_files()))


def test_script_lists_the_problems_of_a_rejected_bundle_in_place(
    page: Page, rfp: Rfp, tmp_path: Path
) -> None:
    files = {**good_files(), "../escape.sh": b"#!/bin/sh\n"}
    bundle = build_bundle(tmp_path, files, name="hostile.tar.gz")

    _upload(page, rfp, bundle)

    problems = page.locator("[data-problems]")
    expect(problems).to_be_visible()
    expect(problems).to_contain_text("path_traversal")
    expect(page.locator("[data-file-name]")).to_contain_text("hostile.tar.gz")
    expect(page).to_have_url(re.compile(r"/bundles/upload/$"))
