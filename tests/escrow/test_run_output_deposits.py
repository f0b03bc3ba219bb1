"""Run outputs in escrow: a lab run's deposit belongs to the vendor whose bundle
was run (it names that bundle) — the deposit list's vendor filter and column
show it there, in the page and the API — while the bundle's own evidence
package stays the bundle's deposit only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Organisation
from artifacts.models import Deposit
from artifacts.selectors.escrow import bundle_deposits, deposit_filter_choices
from benchmarks.models import Run
from tests.benchmarks.in_process_agent import execute_in_process
from tests.benchmarks.runner.support import (
    accepted_bundle,
    make_pool,
    runner_work_dir,  # noqa: F401 (fixture)
    runs_of,
    start,
)
from tests.escrow.conftest import ingest_and_deposit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("runner_work_dir")]


@pytest.fixture
def run_output(
    tmp_path: Path,
    rfp: Any,
    vendor_a: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    buyer_org: Organisation,
    labops: Any,
) -> Deposit:
    """acme-flash's bundle run once by the lab; bolt-storage's bundle too, not run."""
    ingest_and_deposit(tmp_path / "b", rfp, vendor_b_org, vendor_b, key="vendor_b")
    bundle = accepted_bundle(tmp_path / "a", rfp, vendor_a_org, vendor_a)  # opens
    pool = make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB))
    run = runs_of(start(bundle, pool, labops))[0]
    execute_in_process(run)
    run = Run.objects.get(pk=run.pk)
    assert run.state == Run.State.SUCCEEDED, run.reason
    return run.output_deposit


def _rows(user: Any, query: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/artifacts/escrow/{query}").content.decode()


def test_vendor_filter_covers_the_runs_of_its_bundles(
    run_output: Deposit, auditor: Any
) -> None:
    acme = _rows(auditor, "?vendor=acme-flash")
    bolt = _rows(auditor, "?vendor=bolt-storage")

    assert acme.count('data-testid="deposit-row"') == 2  # its bundle and the run
    assert f"#{run_output.log_index}<" in acme
    assert bolt.count('data-testid="deposit-row"') == 1
    assert f"#{run_output.log_index}<" not in bolt


def test_vendor_filter_and_kind_select_the_run_outputs(
    run_output: Deposit, auditor: Any
) -> None:
    page = _rows(auditor, "?vendor=acme-flash&kind=run_output")

    assert page.count('data-testid="deposit-row"') == 1
    vendor = page[page.index('data-testid="deposit-vendor"') :]
    assert vendor.startswith(
        f'data-testid="deposit-vendor">{run_output.bundle.organisation.name} '
    )
    assert "deposited by" in vendor  # the lab, not the vendor, deposited it
    assert 'data-testid="evidence-download"' not in page  # no bundle package
    record = f"/artifacts/escrow/deposits/{run_output.public_id}/"
    assert f'href="{record}" data-testid="evidence-record"' in page


def test_vendor_choices_are_vendors_not_the_lab(
    run_output: Deposit, auditor: Any
) -> None:
    choices = deposit_filter_choices(auditor)

    assert choices["vendors"] == ["acme-flash", "bolt-storage"]


def test_api_vendor_filter_covers_run_outputs(
    run_output: Deposit, auditor: Any
) -> None:
    client = APIClient()
    client.force_authenticate(auditor)

    body = client.get("/api/v1/escrow/deposits/?vendor=acme-flash").json()

    by_kind = {item["kind"]: item for item in body["results"]}
    assert body["count"] == 2
    run = by_kind["run_output"]
    assert run["bundle_id"] == str(run_output.bundle.public_id)
    assert run["evidence_url"] is None
    assert run["vendor"] == "acme-flash"  # whose bundle ran
    assert run["depositor"] == run_output.organisation.slug != "acme-flash"


def test_the_bundles_evidence_package_holds_its_own_deposit_only(
    run_output: Deposit,
) -> None:
    deposits = bundle_deposits(run_output.bundle)

    assert [d.kind for d in deposits] == [Deposit.Kind.BUNDLE]
