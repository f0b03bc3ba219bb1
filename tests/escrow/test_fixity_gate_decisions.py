"""Fixity of the log entries a gate decision writes: a recorded hold and a
promotion with its second sign-off leave ``escrow_verify`` and ``fixity_check``
clean (the gates' records are theirs, not altered entries), while a decision
entry rewritten afterwards, or one whose schema artifacts does not know, is
still reported."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from artifacts.lib.transparency import merkle
from artifacts.models import FixityFinding, FixityRun, LogEntry
from artifacts.services.fixity import sources
from artifacts.services.fixity.run import fixity_check
from gates.models import Decision, GatePlan
from gates.services.decisions import LOG_SCHEMA, decision_record, decision_second
from procurement.models import Rfp
from tests.gates.support import (  # noqa: F401 (fixtures)
    FAIL,
    LAB,
    PASS,
    evaluate_fixture,
    gate_bundle,
    gate_campaign,
    make_frozen_plan,
)

pytestmark = pytest.mark.django_db
ALTERED = FixityFinding.Kind.LOG_ENTRY_ALTERED


@pytest.fixture
def plan(rfp: Rfp, vendor_a_org: Any, buyer: Any) -> GatePlan:
    return make_frozen_plan(rfp, vendor_a_org, buyer)


@pytest.fixture
def hold(plan: GatePlan, evaluate: Any, buyer: Any) -> Decision:
    evaluate(plan, FAIL)
    return decision_record(
        plan=plan, gate=LAB, kind="hold", rationale="Misses p99.", actor=buyer
    )


def _leaf(index: int) -> dict[str, Any]:
    record = json.loads(bytes(LogEntry.objects.get(index=index).leaf))
    assert isinstance(record, dict)
    return record


def _verify() -> tuple[int, str]:
    """``manage.py escrow_verify``: its exit status and output."""
    out = io.StringIO()
    try:
        call_command("escrow_verify", stdout=out, stderr=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def _rewrite(index: int, old: bytes, new: bytes, *, rehash: bool = False) -> None:
    """The leaf's bytes changed with SQL (and its stored hash made to match
    them, when ``rehash``)."""
    entry = LogEntry.objects.get(index=index)
    forged = bytes(entry.leaf).replace(old, new)
    assert forged != bytes(entry.leaf)
    hashed = merkle.leaf_hash(forged) if rehash else bytes(entry.leaf_hash)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE artifacts_logentry SET leaf = %s, leaf_hash = %s WHERE id = %s",
            [forged, hashed, entry.pk],
        )


def test_a_recorded_hold_writes_a_log_entry_that_verifies_clean(
    hold: Decision,
) -> None:
    assert hold.log_index is not None
    assert _leaf(hold.log_index)["schema"] == LOG_SCHEMA

    status, out = _verify()

    assert status == 0, out
    assert "Escrow is intact" in out
    assert FixityRun.objects.get().intact
    report = fixity_check()
    assert report.clean, report.findings.items
    assert report.counts.log_entries_checked == report.counts.log_size
    assert report.counts.log_size > hold.log_index


def test_a_promotion_and_its_second_sign_off_verify_clean(
    plan: GatePlan, evaluate: Any, buyer: Any, evaluator: Any
) -> None:
    evaluate(plan, PASS)
    pending = decision_record(
        plan=plan, gate=LAB, kind="promote", rationale="Meets.", actor=buyer
    )
    decision_second(decision=pending, actor=evaluator)
    schemas = [
        json.loads(bytes(leaf)).get("schema")
        for leaf in LogEntry.objects.order_by("index").values_list("leaf", flat=True)
    ]
    assert schemas.count(LOG_SCHEMA) >= 2, schemas  # the promotion and its second

    report = fixity_check()

    assert report.clean, report.findings.items
    assert _verify()[0] == 0


def test_a_rewritten_decision_entry_is_still_reported(hold: Decision) -> None:
    assert hold.log_index is not None
    _rewrite(hold.log_index, b'"kind":"hold"', b'"kind":"promote"')

    status, out = _verify()

    assert status == 1, out
    run = FixityRun.objects.order_by("-started_at", "-id").first()
    assert run is not None
    assert not run.intact
    altered = run.findings.filter(kind=ALTERED)
    assert list(altered.values_list("log_index", flat=True)) == [hold.log_index]
    assert "leaf hash" in altered.get().detail


def test_a_decision_entry_under_an_unknown_schema_is_reported(
    hold: Decision,
) -> None:
    """A leaf rewritten to a schema nobody registered, its stored hash made to
    match (an intruder with write access to the table and the tree): the log's
    pass still takes it as altered."""
    assert hold.log_index is not None
    forged = b"reprogate.gate-whatever/v1"
    _rewrite(hold.log_index, LOG_SCHEMA.encode(), forged, rehash=True)

    report = fixity_check()

    assert not report.clean
    flagged = [f for f in report.findings.items if f.kind == ALTERED]
    assert [f.log_index for f in flagged] == [hold.log_index]
    assert "neither a deposit nor" in flagged[0].detail


@pytest.fixture
def gates_unregistered() -> Iterator[None]:
    """Artifacts as it would run with no gates app registering its records."""
    with sources.log_record_schemas.swapped(None, key=LOG_SCHEMA):
        yield


def test_without_the_gates_registration_a_decision_is_taken_as_altered(
    hold: Decision, gates_unregistered: None
) -> None:
    assert LOG_SCHEMA not in sources.log_record_schemas

    report = fixity_check()

    flagged = [f for f in report.findings.items if f.kind == ALTERED]
    assert [f.log_index for f in flagged] == [hold.log_index]
    assert "neither a deposit nor" in flagged[0].detail
