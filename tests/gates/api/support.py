"""The gates API tests' building blocks: an API client for a persona and a real
evaluation (a frozen plan judged by ``gate_judge`` on a campaign whose runs
finished at chosen values: ``judged``, the read-side tests' ``evaluate``).
``tests/gates/api/conftest.py`` loads the fixtures; other test folders import
them from here."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from gates.models import Evaluation, GatePlan
from tests.gates.read_support import GATE as GATE  # the API tests' gate
from tests.gates.read_support import evaluate as judged
from tests.gates.read_support import oblige

PASSING = [176.2, 171.0, 178.9]  # ms, under the 198 ms limit of a 180 ms claim
FAILING = [412.5, 405.0, 420.25]


def api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def evaluation(frozen_plan: GatePlan, gate_campaign: Any, buyer: Any) -> Evaluation:
    """A PASS of lab-validation on three finished runs."""
    return judged(frozen_plan, gate_campaign(3), buyer, PASSING)


def owed(evaluation: Evaluation, *, days: float = 14, **fields: Any) -> Any:
    """An obligation raised by ``evaluation``, due in two weeks unless told."""
    return oblige(evaluation, days=days, **fields)
