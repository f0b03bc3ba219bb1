"""No false tamper alarm after a lab run: a campaign executed by the real runner
code (bundle fetched, harness run in the sandbox, outputs stored, parsed and
deposited as ``run_output``) leaves escrow intact for ``escrow_verify``, and the
auditor's dashboard says so; the demo seen the same way after its campaign."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from accounts.models import Organisation
from artifacts.models import Bundle, Deposit, FixityRun
from benchmarks.models import Campaign, LabPool, Run
from portal.demo import LAB_POOL, LAB_RFP, demo_seed
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import (
    accepted_bundle,
    make_pool,
    runner_work_dir,  # noqa: F401 (fixture)
    runs_of,
    start,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("runner_work_dir")]


def run_campaign(campaign: Campaign) -> list[Run]:
    """Every run of the campaign executed by the lab agent's run path."""
    for run in runs_of(campaign):
        execute_in_process(run)
    runs = runs_of(campaign)
    assert [r.state for r in runs] == [Run.State.SUCCEEDED] * len(runs), [
        r.reason for r in runs
    ]
    return runs


def verify() -> tuple[int, str]:
    """``manage.py escrow_verify``: exit status and output."""
    out = io.StringIO()
    try:
        call_command("escrow_verify", stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


def fixity_verdict(user: Any) -> str:
    client = Client()
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    start_at = page.find('data-testid="escrow-fixity"')
    assert start_at >= 0, "no fixity verdict on the dashboard"
    return page[start_at : page.find("</div>", start_at)]


@pytest.fixture
def campaign(
    tmp_path: Path,
    rfp: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
    buyer_org: Organisation,
    labops: Any,
) -> Campaign:
    bundle = accepted_bundle(tmp_path / "bundle", rfp, vendor_a_org, vendor_a)
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    return start(bundle, pool, labops, repetitions=2)


def test_a_campaign_leaves_escrow_intact(campaign: Campaign) -> None:
    runs = run_campaign(campaign)

    status, output = verify()

    assert len(runs) == 4
    assert Deposit.objects.filter(kind=Deposit.Kind.RUN_OUTPUT).count() == 4
    assert status == 0, output
    assert "Escrow is intact" in output
    assert FixityRun.objects.get().deposits_checked == 5


def test_run_output_deposit_records_the_bundle_that_was_run(
    campaign: Campaign,
) -> None:
    run = run_campaign(campaign)[0]

    deposit = Deposit.objects.get(pk=run.output_deposit_id)

    assert deposit.bundle == campaign.bundle
    assert deposit.organisation == campaign.pool.lab_organisation
    assert Deposit.objects.filter(kind=Deposit.Kind.BUNDLE).get().bundle == (
        campaign.bundle
    )


def test_the_auditor_sees_escrow_intact_after_a_campaign(
    campaign: Campaign, auditor: Any, buyer: Any
) -> None:
    run_campaign(campaign)
    verify()

    for user in (auditor, buyer):
        verdict = fixity_verdict(user)
        assert 'data-testid="fixity-verdict">intact<' in verdict
        assert "fixity-alert" not in verdict


@pytest.mark.slow
def test_the_demo_auditor_sees_escrow_intact_after_a_lab_run(
    settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path
    demo_seed()
    users = get_user_model().objects
    bundle = Bundle.objects.filter(rfp__reference=LAB_RFP).order_by("id").first()
    campaign = start(
        bundle, LabPool.objects.get(name=LAB_POOL), users.get(username="labops")
    )
    first = runs_of(campaign)[0]  # one run is enough for its deposit
    execute_in_process(first)
    assert Run.objects.get(pk=first.pk).state == Run.State.SUCCEEDED

    status, output = verify()

    assert status == 0, output
    verdict = fixity_verdict(users.get(username="auditor"))
    assert 'data-testid="fixity-verdict">intact<' in verdict


def test_migration_gives_old_run_output_rows_the_bundle_their_leaf_names(
    campaign: Campaign,
) -> None:
    from importlib import import_module

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    from artifacts.models import DepositBlob
    from artifacts.services.escrow import deposit_create
    from artifacts.services.escrow_records import DepositItem

    blob = Deposit.objects.get(kind=Deposit.Kind.BUNDLE).items.first().blob
    old = deposit_create(  # as run outputs were deposited before: no bundle
        kind=Deposit.Kind.RUN_OUTPUT,
        organisation=campaign.pool.lab_organisation,
        rfp=campaign.rfp,
        items=[DepositItem(blob, DepositBlob.Role.OUTPUT, "metrics.json")],
        actor=None,
        extra={"bundle": str(campaign.bundle.public_id)},
    )
    assert verify()[0] == 1
    name = "0006_run_output_deposit_bundle"
    state = MigrationLoader(connection).project_state(("artifacts", name))

    import_module(f"artifacts.migrations.{name}").fill_bundle(state.apps, None)

    assert Deposit.objects.get(pk=old.pk).bundle == campaign.bundle
    assert verify()[0] == 0
