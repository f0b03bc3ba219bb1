"""Fixity has no false positives: every kind of deposit (bundle, run output,
report) and every kind of escrow event (legal hold placed and released,
retention extended, evidence downloaded, every release step), each made
through its real service, leaves ``escrow_verify`` with nothing to say; and a
tamper of each of those rows is still found, naming it."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import transaction
from django.db.models import F

from accounts.models import Organisation
from artifacts.models import Deposit, EscrowEvent, FixityRun, Release
from artifacts.services.escrow import (
    deposit_legal_hold_set,
    deposit_retention_extend,
)
from artifacts.services.evidence import evidence_package_prepare
from artifacts.services.fixity.report import FixityReport
from artifacts.services.fixity.run import fixity_check
from artifacts.services.release import (
    release_object,
    release_reject,
    release_withdraw,
)
from artifacts.services.release_execution import (
    release_download_record,
    release_execute,
)
from benchmarks.models import Run
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import (
    accepted_bundle,
    make_pool,
    runner_work_dir,  # noqa: F401 (fixture)
    runs_of,
    start,
)
from tests.escrow.release_support import (
    after_notice,
    approve_both,
    award_to,
    request_breach,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("runner_work_dir")]


def _run_output(bundle: Any, buyer_org: Organisation, labops: Any) -> Run:
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    run = runs_of(start(bundle, pool, labops))[0]
    execute_in_process(run)
    run = Run.objects.get(pk=run.pk)
    assert run.state == Run.State.SUCCEEDED, run.reason
    assert run.output_deposit is not None
    return run


def _evaluation(run: Run, vendor: Organisation, buyer: Any) -> Deposit:
    """A gate evaluation of the run's campaign (deposited with its documents)."""
    from gates.services.pipeline import gate_judge
    from tests.gates.support import make_frozen_plan

    campaign = run.campaign
    plan = make_frozen_plan(campaign.rfp, vendor, buyer)
    evaluation = gate_judge(
        plan=plan, gate="lab-validation", campaign=campaign, actor=buyer
    )
    return evaluation.deposit


def _report(evaluation_deposit: Deposit, monkeypatch: pytest.MonkeyPatch) -> Deposit:
    """The evaluation's signed report, made by the report service (its PDF and
    statement are canned bytes: fixity compares digests, not what they say)."""
    from gates.models import Report
    from gates.services import reports

    def produce(report: Report) -> reports._Produced:
        return reports._Produced(
            pdf=b"%PDF-1.7 lab validation report\n",
            statement=b'{"payloadType": "application/vnd.in-toto+json"}',
            pages=1,
            timestamped=False,
            signer_fingerprint="0" * 64,
        )

    report = Report.objects.get(evaluation__deposit=evaluation_deposit)
    with monkeypatch.context() as patch:
        patch.setattr(reports, "_produce", produce)
        report = reports.report_generate(report_id=report.pk)
    assert report is not None
    assert report.status == Report.Status.READY, report.error
    assert report.deposit is not None
    return report.deposit


def _hold_and_retention(deposit: Deposit, buyer: Any) -> None:
    deposit_legal_hold_set(deposit=deposit, hold=True, actor=buyer, reason="dispute")
    deposit_legal_hold_set(deposit=deposit, hold=False, actor=buyer, reason="settled")
    later = Deposit.objects.get(pk=deposit.pk).retain_until + timedelta(days=30)
    deposit_retention_extend(
        deposit=deposit, retain_until=later, actor=buyer, reason="claims period"
    )


def _releases(rfp: Any, people: dict[str, Any], clock: Any) -> None:
    """Withdrawn, rejected, then objected, approved, executed, downloaded."""
    buyer, auditor, vendor = people["buyer"], people["auditor"], people["vendor"]
    release_withdraw(
        release=request_breach(rfp, buyer), reason="asked too early", actor=buyer
    )
    release_reject(
        release=request_breach(rfp, buyer), reason="support answered", actor=auditor
    )
    release = request_breach(rfp, buyer)
    release_object(release=release, reason="ticket 4711 answered", actor=vendor)
    after_notice(clock)
    ack = {"note": "unanswered since March", "acknowledge_objection": True}
    release = approve_both(release, buyer, auditor, **ack)
    release = release_execute(release=release, actor=buyer)
    release_download_record(release=release, actor=buyer)


@pytest.fixture
def every_kind(
    tmp_path: Path,
    rfp: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
    buyer_org: Organisation,
    buyer: Any,
    auditor: Any,
    labops: Any,
    clock: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Deposit:
    bundle = accepted_bundle(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)
    deposit = Deposit.objects.get(kind=Deposit.Kind.BUNDLE, bundle=bundle)
    evaluated = _evaluation(_run_output(bundle, buyer_org, labops), vendor_a_org, buyer)
    _report(evaluated, monkeypatch)
    _hold_and_retention(deposit, buyer)
    evidence_package_prepare(bundle=bundle, actor=auditor)
    award_to(rfp, vendor_a_org, buyer)
    people = {"buyer": buyer, "auditor": auditor, "vendor": vendor_a}
    _releases(rfp, people, clock)
    return deposit


def test_every_deposit_and_event_kind_is_made(every_kind: Deposit) -> None:
    kinds = set(Deposit.objects.values_list("kind", flat=True))
    actions = set(EscrowEvent.objects.values_list("action", flat=True))

    assert kinds == set(Deposit.Kind.values)
    assert actions == set(EscrowEvent.Action.values)
    assert Release.objects.count() == 3


def test_escrow_verify_finds_nothing_in_every_kind(every_kind: Deposit) -> None:
    out = io.StringIO()

    call_command("escrow_verify", stdout=out)  # raises on any finding

    run = FixityRun.objects.get()
    assert run.intact, out.getvalue()
    assert run.deposits_checked == len(Deposit.Kind.values)
    assert run.events_checked == EscrowEvent.objects.count()
    assert "Escrow is intact" in out.getvalue()


class _Undo(Exception):
    pass


def _findings_after(tamper: Any) -> FixityReport:
    """What fixity finds with ``tamper`` applied (rolled back afterwards)."""
    found: list[FixityReport] = []
    try:
        with transaction.atomic():
            tamper()
            found.append(fixity_check())
            raise _Undo
    except _Undo:
        pass
    return found[0]


def _subjects(report: FixityReport) -> set[str]:
    return {f.subject for f in report.findings.items if f.kind == "row.altered"}


def test_a_moved_time_is_found_on_every_deposit_and_event(
    every_kind: Deposit,
) -> None:
    assert _subjects(fixity_check()) == set()
    second = timedelta(seconds=1)
    rows: list[tuple[Any, str, str]] = [
        (Deposit, "deposited_at", f"deposit #{d.log_index}")
        for d in Deposit.objects.all()
    ] + [
        (EscrowEvent, "occurred_at", f"escrow event #{e.log_index}")
        for e in EscrowEvent.objects.all()
    ]

    for model, field, subject in rows:
        index = int(subject.rsplit("#", 1)[1])
        rows = model._base_manager.filter(log_index=index)  # past immutability
        moved = {field: F(field) + second}

        report = _findings_after(lambda r=rows, m=moved: r.update(**m))

        assert subject in _subjects(report), (model.__name__, index)


def test_a_run_output_row_without_its_bundle_is_found(every_kind: Deposit) -> None:
    run_output = Deposit.objects.get(kind=Deposit.Kind.RUN_OUTPUT)
    rows = Deposit._base_manager.filter(pk=run_output.pk)

    report = _findings_after(lambda: rows.update(bundle=None))

    assert _subjects(report) == {f"deposit #{run_output.log_index}"}
    assert any("bundle" in f.detail for f in report.findings.items)
