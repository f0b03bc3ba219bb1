from __future__ import annotations

import ast
import itertools
from pathlib import Path
from typing import Any

import pytest

from accounts.exceptions import InvalidTransition
from accounts.models import AuditEvent, Organisation
from procurement.exceptions import ProcurementError
from procurement.models import RFP_TRANSITIONS, Rfp
from procurement.services.rfp_lifecycle import rfp_transition
from procurement.services.rfps import rfp_create, rfp_invite_vendor
from tests.procurement.factories import RfpFactory
from tests.transition_moves import Move

pytestmark = pytest.mark.django_db

ALL_MOVES = list(itertools.product(Rfp.Status.values, Rfp.Status.values))


@pytest.mark.parametrize(("current", "to"), ALL_MOVES)
def test_rfp_transition_follows_the_table(
    current: str, to: str, buyer: Any, transition_moves: list[Move]
) -> None:
    rfp = RfpFactory.create(status=current)

    if to in RFP_TRANSITIONS[current]:
        rfp_transition(rfp=rfp, to=to, actor=buyer)
    else:
        with pytest.raises(InvalidTransition):
            rfp_transition(rfp=rfp, to=to, actor=buyer)

    rfp.refresh_from_db()
    allowed = to in RFP_TRANSITIONS[current]
    assert rfp.status == (to if allowed else current)
    assert AuditEvent.objects.filter(action="rfp.transitioned").count() == allowed
    assert transition_moves == (
        [Move("procurement.rfp", current, to)] if allowed else []
    )


def test_the_matrix_covers_every_status_including_unsuccessful() -> None:
    assert set(RFP_TRANSITIONS) == set(Rfp.Status.values)
    assert ("closed", "unsuccessful") in ALL_MOVES
    assert ("unsuccessful", "opened") in ALL_MOVES
    assert RFP_TRANSITIONS[Rfp.Status.UNSUCCESSFUL] == frozenset()
    assert len(ALL_MOVES) == len(Rfp.Status.values) ** 2 == 49


def test_rfp_transition_event_names_both_states(buyer: Any) -> None:
    rfp = RfpFactory.create()

    rfp_transition(rfp=rfp, to=Rfp.Status.PUBLISHED, actor=buyer, note="go")

    event = AuditEvent.objects.get(action="rfp.transitioned")
    assert event.data == {
        "rfp": rfp.reference,
        "from": "draft",
        "to": "published",
        "note": "go",
    }
    assert event.actor == buyer
    assert event.organisation_id == rfp.buyer_organisation_id


def test_rfp_create_refuses_a_vendor_as_buyer(vendor_a_org: Organisation) -> None:
    with pytest.raises(ProcurementError):
        rfp_create(
            reference="RFP-X-1",
            title="x",
            buyer_organisation=vendor_a_org,
            submission_deadline=RfpFactory.build().submission_deadline,
            actor=None,
        )

    assert not Rfp.objects.exists()
    assert not AuditEvent.objects.exists()


def test_rfp_create_rejects_a_malformed_reference(buyer_org: Organisation) -> None:
    with pytest.raises(Exception, match="capital letters"):
        rfp_create(
            reference="rfp 1",
            title="x",
            buyer_organisation=buyer_org,
            submission_deadline=RfpFactory.build().submission_deadline,
            actor=None,
        )

    assert not Rfp.objects.exists()


def test_rfp_invite_vendor_refuses_non_vendors_and_duplicates(
    buyer_org: Organisation, vendor_a_org: Organisation
) -> None:
    rfp = RfpFactory.create(buyer_organisation=buyer_org)
    rfp_invite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)

    with pytest.raises(ProcurementError, match="already invited"):
        rfp_invite_vendor(rfp=rfp, vendor=vendor_a_org, actor=None)
    with pytest.raises(ProcurementError, match="not a vendor"):
        rfp_invite_vendor(rfp=rfp, vendor=buyer_org, actor=None)

    assert AuditEvent.objects.filter(action="rfp.vendor_invited").count() == 1


APPS = ("accounts", "procurement", "artifacts", "benchmarks", "gates", "portal")


def _line(node: ast.AST) -> int:
    """A statement's line (typeshed's ``ast.AST`` declares no ``lineno``)."""
    return int(getattr(node, "lineno", 0))


def _status_writes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing function) of every ``<obj>.status = …`` (and a run's
    ``<obj>.state = …``) outside ``self`` (plain objects keep their own)."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = child.name
            targets: list[ast.expr] = []
            if isinstance(child, ast.Assign):
                targets = list(child.targets)
            elif isinstance(child, ast.AugAssign | ast.AnnAssign):
                targets = [child.target]
            for target in targets:
                for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if (
                        isinstance(item, ast.Attribute)
                        and item.attr in ("status", "state")
                        and not (
                            isinstance(item.value, ast.Name) and item.value.id == "self"
                        )
                    ):
                        found.append((_line(child), name))
            if _queryset_update_of_status(child):
                found.append((_line(child), name))
            walk(child, name)

    walk(tree, "")
    return found


def _queryset_update_of_status(node: ast.AST) -> bool:
    """``Model.objects….update(status=…)`` (or ``state=``): a bulk status write."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "update"
        and any(k.arg in ("status", "state") for k in node.keywords)
    ):
        return False
    receiver = node.func.value
    while isinstance(receiver, ast.Call | ast.Attribute):
        if isinstance(receiver, ast.Attribute) and receiver.attr == "objects":
            return True
        receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
    return False


def test_status_is_assigned_only_in_transition_functions() -> None:
    """Every status change goes through its entity's ``*_transition`` (checked
    against its ``*_TRANSITIONS`` table, with its one audit row)."""
    root = Path(__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}:{line} in {function or 'module'}"
        for app in APPS
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts
        for line, function in _status_writes(ast.parse(path.read_text()))
        if not function.endswith("_transition")
    ]

    assert offenders == []


def test_the_status_write_check_finds_a_write_outside_a_transition() -> None:
    source = (
        "def bid_withdraw(bid):\n    bid.status = 'withdrawn'\n"
        "def bid_transition(bid, to):\n    old, bid.status = bid.status, to\n"
        "class Commands:\n    def __init__(self):\n        self.status = {}\n"
        "def run_claim(pk):\n    Run.objects.filter(pk=pk).update(state='preparing')\n"
        "def detail(data):\n    data.update(status='ok')\n"
    )

    assert _status_writes(ast.parse(source)) == [
        (2, "bid_withdraw"),
        (4, "bid_transition"),
        (9, "run_claim"),
    ]
