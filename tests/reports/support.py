"""Fixtures of the report tests (loaded by ``conftest.py``): ``passed``, a PASSing
evaluation of the lab-validation gate, and ``promoted``, its recorded promotion;
each has requested its report (the task is not run)."""

from __future__ import annotations

from typing import Any

import pytest

from gates.models import Decision, Evaluation, GatePlan
from gates.services.decisions import decision_record, decision_second
from tests.gates.support import LAB, PASS


@pytest.fixture
def passed(evaluate: Any, frozen_plan: GatePlan) -> Evaluation:
    """A PASSing evaluation of the lab-validation gate (its report requested)."""
    return evaluate(frozen_plan, PASS)


@pytest.fixture
def promoted(
    passed: Evaluation, frozen_plan: GatePlan, buyer: Any, evaluator: Any
) -> Decision:
    """The buyer's promotion of the passed gate, signed off by the evaluator (its
    certificate requested)."""
    decision = decision_record(
        plan=frozen_plan, gate=LAB, kind="promote", rationale="Go.", actor=buyer
    )
    return decision_second(decision=decision, actor=evaluator)
