"""Bundle completeness where people act on it: the vendor's bids page and bid form
(its own newest accepted bundle's checklist, a warning when mandatory artifacts are
missing) and the evaluator's score sheet (each bid's evidence beside it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Organisation
from gates.lib.signing.pki import signer_load_or_create
from procurement.models import Rfp
from tests.artifacts.corpus.build import good_files
from tests.artifacts.signed_report_support import render_pdf, signed
from tests.procurement.factories import RfpFactory
from tests.procurement.factories_bundles import PARTIAL_FILES, accepted_bundle
from tests.procurement.factories_evaluation import (
    RequiredArtifactFactory,
    evaluator_in,
    opened_rfp,
    vendor_orgs,
)

pytestmark = pytest.mark.django_db

KINDS = ("workload", "trace", "report")


def _checklist(rfp: Rfp) -> None:
    for kind in KINDS:
        RequiredArtifactFactory.create(rfp=rfp, kind=kind, title=f"The {kind}")
    RequiredArtifactFactory.create(
        rfp=rfp, kind="cost_model", title="Costs", mandatory=False
    )


@pytest.fixture
def rfp(vendor_a_org: Organisation, vendor_b_org: Organisation) -> Rfp:
    rfp = RfpFactory.create(published=True, invited=[vendor_a_org, vendor_b_org])
    _checklist(rfp)
    return rfp


def _bids_page(client: Any, rfp: Rfp) -> str:
    return client.get(f"/rfps/{rfp.public_id}/bids/").content.decode()


def _bid_form(client: Any, rfp: Rfp) -> str:
    response = client.get(f"/rfps/{rfp.public_id}/bid/")
    assert response.status_code == 200
    return response.content.decode()


def _warning(html: str) -> str:
    start = html.index('data-testid="evidence-warning"')
    return html[start : html.index("</div>", start)]


# --- the vendor's pages ---------------------------------------------------------------


@pytest.mark.parametrize("page", [_bids_page, _bid_form])
def test_without_a_bundle_every_mandatory_artifact_is_missing(
    client_for: Any, vendor_a: Any, rfp: Rfp, page: Any
) -> None:
    html = page(client_for(vendor_a), rfp)

    assert 'data-testid="no-accepted-bundle"' in html
    warning = _warning(html)
    assert "3 of 3 mandatory artifacts missing" in warning
    assert all(f"The {kind} (<code>{kind}</code>)" in warning for kind in KINDS)
    assert "Costs" not in warning  # optional


@pytest.mark.parametrize("page", [_bids_page, _bid_form])
def test_a_partial_bundle_is_checked_item_by_item(
    client_for: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
    rfp: Rfp,
    tmp_path: Path,
    page: Any,
) -> None:
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)

    html = page(client_for(vendor_a), rfp)

    assert f'href="/artifacts/bundles/{bundle.public_id}/"' in html
    assert "2 of 3 mandatory artifacts missing." in _warning(html)
    assert 'class="ok" data-testid="evidence-item-workload"' in html
    assert 'class="missing" data-testid="evidence-item-trace"' in html
    assert "Environment: 2 of 6 fields named" in html


def test_the_bid_form_warns_again_beside_the_submit_button(
    client_for: Any, vendor_a: Any, rfp: Rfp
) -> None:
    html = _bid_form(client_for(vendor_a), rfp)

    warning = html.index('data-testid="submit-warning"')
    assert "3 mandatory artifacts missing" in html[warning : warning + 300]
    assert warning < html.index('data-testid="bid-submit"')


@pytest.fixture(scope="module")
def signed_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A report PDF signed with a self-made certificate (a report counts only
    when its PDF's signature validates)."""
    signer = signer_load_or_create(tmp_path_factory.mktemp("keys"), create=True)
    return signed(render_pdf(), signer)


@pytest.mark.parametrize("page", [_bids_page, _bid_form])
def test_a_complete_bundle_gives_no_warning(
    client_for: Any,
    vendor_a: Any,
    vendor_a_org: Organisation,
    rfp: Rfp,
    tmp_path: Path,
    page: Any,
    signed_report: bytes,
) -> None:
    files = good_files() | {"reports/bench.pdf": signed_report}
    accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)
    accepted_bundle(rfp, vendor_a_org, tmp_path, files=files)  # the newest counts

    html = page(client_for(vendor_a), rfp)

    assert 'data-testid="evidence-warning"' not in html
    assert 'data-testid="submit-warning"' not in html
    assert 'data-testid="evidence-complete"' in html


def test_nothing_to_warn_about_when_the_rfp_demands_no_artifact(
    client_for: Any, vendor_a: Any, vendor_a_org: Organisation
) -> None:
    rfp = RfpFactory.create(published=True, invited=[vendor_a_org])

    html = _bid_form(client_for(vendor_a), rfp)

    assert 'data-testid="no-accepted-bundle"' in html
    assert 'data-testid="evidence-warning"' not in html


@pytest.mark.parametrize("page", [_bids_page, _bid_form])
def test_a_vendor_never_sees_another_vendors_bundle(
    client_for: Any,
    vendor_b: Any,
    vendor_a_org: Organisation,
    rfp: Rfp,
    tmp_path: Path,
    page: Any,
) -> None:
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path)

    html = page(client_for(vendor_b), rfp)

    assert 'data-testid="no-accepted-bundle"' in html
    assert str(bundle.public_id) not in html
    assert bundle.sha256[:16] not in html


def test_the_buyer_sees_no_evidence_on_the_sealed_bids_page(
    client_for: Any, buyer: Any, vendor_a_org: Organisation, rfp: Rfp, tmp_path: Path
) -> None:
    bundle = accepted_bundle(rfp, vendor_a_org, tmp_path)

    html = _bids_page(client_for(buyer), rfp)

    assert 'data-testid="evidence-checklist"' not in html
    assert str(bundle.public_id) not in html


# --- the evaluator's score sheet ------------------------------------------------------


def _sheet(client: Any, rfp: Rfp) -> str:
    return client.get(f"/rfps/{rfp.public_id}/evaluation/").content.decode()


def _evidence(client: Any, rfp: Rfp) -> str:
    """What the score sheet loads after it: each bid's evidence."""
    response = client.get(f"/rfps/{rfp.public_id}/evaluation/evidence/")
    assert response.status_code == 200
    return response.content.decode()


def _evidence_of(html: str, slug: str) -> str:
    start = html.index(f'data-testid="evidence-{slug}"')
    return html[start : html.index("</p>", start)]


@pytest.fixture
def opened(
    buyer_org: Organisation,
    vendor_a_org: Organisation,
    vendor_b_org: Organisation,
    tmp_path: Path,
) -> Rfp:
    """Opened with both vendors' bids; Acme Flash's bundle lacks mandatory
    artifacts, Bolt Storage has none."""
    rfp = opened_rfp(buyer_org, [vendor_a_org, vendor_b_org])
    _checklist(rfp)
    accepted_bundle(rfp, vendor_a_org, tmp_path, files=PARTIAL_FILES)
    return rfp


def test_the_score_sheet_shows_each_bids_bundle_completeness(
    client_for: Any, evaluator: Any, opened: Rfp
) -> None:
    html = _evidence(client_for(evaluator), opened)

    acme = _evidence_of(html, "acme-flash")
    assert "1/3 mandatory" in acme
    assert ">trace</code>, <code" in acme
    assert "no accepted bundle" in _evidence_of(html, "bolt-storage")


def _opened_with_bundles(
    buyer_org: Organisation, vendors: list[Organisation], directory: Path
) -> Rfp:
    rfp = opened_rfp(buyer_org, vendors, reference=f"RFP-E-{len(vendors):03d}")
    _checklist(rfp)
    for vendor in vendors:
        accepted_bundle(rfp, vendor, directory, files=PARTIAL_FILES)
    return rfp


def test_the_score_sheet_query_count_does_not_grow_with_bundles(
    client_for: Any,
    buyer_org: Organisation,
    django_assert_num_queries: Any,
    tmp_path: Path,
) -> None:
    eve = evaluator_in(buyer_org, "eve")
    vendors = vendor_orgs(22)
    small = _opened_with_bundles(buyer_org, vendors[:2], tmp_path)
    large = _opened_with_bundles(buyer_org, vendors[2:], tmp_path)
    client = client_for(eve)
    for page in (_sheet, _evidence):
        page(client, small)  # warm the session and content-type caches
        with CaptureQueriesContext(connection) as two_vendors:
            page(client, small)

        with django_assert_num_queries(len(two_vendors)):
            html = page(client, large)
    assert html.count("1/3 mandatory") == 20


def test_the_score_sheet_loads_each_bids_evidence_into_its_place(
    client_for: Any, evaluator: Any, opened: Rfp
) -> None:
    client = client_for(evaluator)
    bids = {bid.vendor_organisation.slug: bid for bid in opened.bids.all()}

    sheet, evidence = _sheet(client, opened), _evidence(client, opened)

    loader = f'hx-get="/rfps/{opened.public_id}/evaluation/evidence/"'
    assert loader in sheet
    assert "1/3 mandatory" not in sheet  # the sheet does not wait for it
    for slug, bid in bids.items():
        place = f'<div id="evidence-{bid.public_id}" class="evidence-slot"'
        assert place + ">" in sheet  # with a link to the comparison until then
        start = evidence.index(place + ' hx-swap-oob="true">')
        panel = evidence[start : evidence.index("</div>", start)]
        assert f'data-testid="evidence-{slug}"' in panel
    assert evidence.count('hx-swap-oob="true"') == len(bids) == 2


@pytest.mark.parametrize("who", ["vendor_a", "anonymous"])
def test_the_score_sheet_evidence_is_the_buyer_side_s_only(
    client_for: Any,
    client: Any,
    opened: Rfp,
    request: pytest.FixtureRequest,
    who: str,
) -> None:
    caller = client if who == "anonymous" else client_for(request.getfixturevalue(who))

    response = caller.get(f"/rfps/{opened.public_id}/evaluation/evidence/")

    if who == "anonymous":
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    else:
        assert response.status_code == 404
    assert b"evidence-slot" not in response.content


def test_no_score_sheet_evidence_before_the_bids_are_opened(
    client_for: Any, evaluator: Any, rfp: Rfp
) -> None:
    response = client_for(evaluator).get(f"/rfps/{rfp.public_id}/evaluation/evidence/")

    assert response.status_code == 404
