"""The report tests' fixtures: the gates fixtures (``rfp``, ``frozen_plan``,
``gate_campaign``, ``evaluate``), the installation's report keys and statement key
in a fresh folder per test (never the repository's ``var/``), no time-stamping
authority unless a test names one, and ``chromium``: rendering a benchmark report
draws its charts with kaleido's Chromium (skipped locally without it, never in
CI), plus ``passed`` / ``promoted``: a PASSing evaluation and its recorded
promotion."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.gates.support import (  # noqa: F401
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
)
from tests.reports.support import passed, promoted  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture
def report_keys(settings: Any) -> Path:
    """The report key directory of this test (tests/conftest.py points it at the
    test's own folder; created on first use)."""
    return Path(settings.REPROGATE_REPORT_KEYS_DIR)


@pytest.fixture
def chromium() -> None:
    """A benchmark report's charts are drawn by kaleido's Chromium: skip without
    it locally, fail in CI (tests/browser/conftest.py's rule)."""
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: apt-get install -y chromium"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must render the reports, never skip them)")
    pytest.skip(reason)
