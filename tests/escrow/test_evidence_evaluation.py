"""The evidence package of a gate evaluation (``GET /api/v1/evaluations/<id>/
evidence/``): the evaluation's deposit, the judged bundle's, its reports'
deposits, ``keys/reports.pub``; ``reprogate evidence verify`` (run as a fresh
interpreter that cannot import Django) re-evaluates the gate and checks the
reports, and names what was tampered with: a results.json byte, a results blob
rebuilt consistently, the PDF, a statement signed by another key, the key."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from accounts.models import AuditEvent
from accounts.selectors import clock
from artifacts.lib.canonical import canonical_json
from artifacts.lib.signatures.statement import public_key_pem
from artifacts.lib.transparency.keyfile import load_private_key
from artifacts.models import Deposit, DepositBlob, EscrowEvent
from artifacts.services.escrow import deposit_create
from artifacts.services.escrow_records import DepositItem
from artifacts.storage.blobs import blob_put
from gates.lib.engine.documents import load_json
from gates.lib.engine.evidence import first_difference
from gates.lib.signing.statement import (
    statement_result,
    statement_sign,
    test_result_statement,
)
from gates.models import Evaluation, GatePlan, Report
from procurement.models import Rfp
from tests.architecture.test_cli_without_django import reprogate
from tests.escrow.package_support import flip, members, replaced, rewrite
from tests.gates.support import (  # noqa: F401 (fixtures)
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def statement_key(settings: Any, tmp_path: Path) -> Ed25519PrivateKey:
    path = tmp_path / "report-keys" / "statement.pem"
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(path)
    return load_private_key(path, create=True)


@pytest.fixture
def evaluation(evaluate: Any, frozen_plan: GatePlan) -> Evaluation:  # noqa: F811
    return evaluate(frozen_plan, PASS)


def url(evaluation: Evaluation) -> str:
    return f"/api/v1/evaluations/{evaluation.public_id}/evidence/"


def download_to(client: Any, evaluation: Evaluation, path: Path) -> Path:
    response = client.get(url(evaluation))
    assert response.status_code == 200, response.content
    path.write_bytes(b"".join(response.streaming_content))
    return path


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ready_report(
    evaluation: Evaluation,
    key: Ed25519PrivateKey,
    *,
    pdf: bytes = b"%PDF-1.7\n% a benchmark report\n%%EOF\n",
    result: str = "",
) -> Report:
    """The evaluation's benchmark report, ready: its PDF and a statement signed
    with ``key``, deposited as the report service deposits them."""
    bundle = evaluation.campaign.bundle
    archive = bundle.deposits.get(kind="bundle").items.get(role="archive").blob
    criteria = load_json(evaluation.evaluation_document)["criteria"]

    def ids(*verdicts: str) -> list[str]:
        return [c["id"] for c in criteria if c["verdict"] in verdicts]

    statement = test_result_statement(
        subjects=[
            ("report.pdf", _sha(pdf)),
            ("evaluation.json", evaluation.evaluation_sha256),
        ],
        result=result or statement_result(evaluation.verdict),
        configuration=[
            ("plan.json", evaluation.plan_sha256),
            ("bundle", archive.sha256),
        ],
        passed=ids("PASS"),
        warned=ids("WARN"),
        failed=ids("FAIL", "INCONCLUSIVE"),
    )
    envelope = statement_sign(statement, key)
    pdf_blob = blob_put(pdf, _sha(pdf), len(pdf))
    statement_blob = blob_put(envelope, _sha(envelope), len(envelope))
    report = Report.objects.filter(
        evaluation=evaluation, kind=Report.Kind.EVALUATION
    ).exclude(status=Report.Status.FAILED).first() or Report.objects.create(
        kind=Report.Kind.EVALUATION,
        evaluation=evaluation,
        rfp=evaluation.rfp,
        vendor_organisation=evaluation.vendor_organisation,
        requested_at=clock.now(),
    )
    role = DepositBlob.Role.DOCUMENT
    deposit = deposit_create(
        kind=Deposit.Kind.REPORT,
        organisation=evaluation.rfp.buyer_organisation,
        rfp=evaluation.rfp,
        bundle=bundle,
        items=[
            DepositItem(pdf_blob, role, "report.pdf"),
            DepositItem(statement_blob, role, "statement.json"),
        ],
        actor=None,
        extra={
            "bundle": str(bundle.public_id),
            "report": str(report.public_id),
            "report_kind": "evaluation",
            "evaluation": str(evaluation.public_id),
            "pdf_sha256": pdf_blob.sha256,
            "statement_sha256": statement_blob.sha256,
            "evaluation_sha256": evaluation.evaluation_sha256,
        },
    )
    Report.objects.filter(pk=report.pk).update(
        status=Report.Status.READY,
        pdf_blob=pdf_blob,
        statement_blob=statement_blob,
        pdf_sha256=pdf_blob.sha256,
        statement_sha256=statement_blob.sha256,
        deposit=deposit,
        finished_at=clock.now(),
    )
    report.refresh_from_db()
    return report


@pytest.fixture
def reported(evaluation: Evaluation, statement_key: Ed25519PrivateKey) -> Report:
    return ready_report(evaluation, statement_key)


@pytest.fixture
def package(reported: Report, buyer: Any, client_for: Any, tmp_path: Path) -> Path:
    return download_to(client_for(buyer), reported.evaluation, tmp_path / "e.zip")


def verify(path: Path) -> tuple[int, str]:
    done = reprogate("evidence", "verify", str(path))
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, done.stdout


def _leaf(entry: dict[str, Any]) -> dict[str, Any]:
    return json.loads(base64.b64decode(entry["leaf"]))


def _blob_of(files: dict[str, bytes], kind: str, path: str) -> str:
    """The zip member of the blob ``path`` of the package's ``kind`` deposit."""
    evidence = json.loads(files["evidence.json"])
    record = next(_leaf(d) for d in evidence["deposits"] if _leaf(d)["kind"] == kind)
    return (
        "blobs/" + next(b for b in record["blobs"] if b.get("path") == path)["sha256"]
    )


# --- the package ----------------------------------------------------------------------


def test_the_package_holds_the_evaluation_its_bundle_and_its_report(
    package: Path, reported: Report, statement_key: Ed25519PrivateKey
) -> None:
    files = members(package)
    evidence = json.loads(files["evidence.json"])
    evaluation = reported.evaluation
    bundle = evaluation.campaign.bundle

    kinds = {_leaf(d)["kind"]: d["leaf_index"] for d in evidence["deposits"]}
    assert kinds == {
        "bundle": bundle.deposits.get(kind="bundle").log_index,
        "evaluation": evaluation.deposit.log_index,
        "report": reported.deposit.log_index,
    }
    assert files["keys/reports.pub"] == public_key_pem(statement_key)
    for name, sha in (
        ("plan.json", evaluation.plan_sha256),
        ("results.json", evaluation.results_sha256),
        ("evaluation.json", evaluation.evaluation_sha256),
    ):
        assert _sha(files[_blob_of(files, "evaluation", name)]) == sha
    assert files[_blob_of(files, "report", "report.pdf")].startswith(b"%PDF")
    readme = files["README.txt"].decode()
    assert f"Gate evaluation {evaluation.public_id}" in readme
    assert "keys/reports.pub" in readme
    assert "reprogate gate evaluate" in readme
    assert "still being\nrendered" in readme or "still being rendered" in readme


def test_the_download_receipt_binds_the_statement_key(
    package: Path, reported: Report, buyer: Any
) -> None:
    files = members(package)
    receipt = EscrowEvent.objects.get(action="evidence.downloaded")
    record = json.loads(bytes(receipt.leaf))
    audit = AuditEvent.objects.get(action="evidence.downloaded")

    assert record["files"]["keys/reports.pub"] == _sha(files["keys/reports.pub"])
    assert record["files"]["README.txt"] == _sha(files["README.txt"])
    assert record["evaluation"] == str(reported.evaluation.public_id)
    assert {d["leaf_index"] for d in record["deposits"]} == {
        d["leaf_index"] for d in json.loads(files["evidence.json"])["deposits"]
    }
    assert audit.actor == buyer
    assert audit.organisation == reported.rfp.buyer_organisation
    assert audit.data["evaluation"] == str(reported.evaluation.public_id)
    assert audit.data["event_index"] == receipt.log_index


def test_the_package_verifies_with_the_cli_without_django(package: Path) -> None:
    status, out = verify(package)

    assert status == 0, out
    assert out.startswith(f"VALID {package}")
    assert "re-evaluated gate lab-validation" in out
    assert "byte for byte (PASS)" in out
    assert "statement.json is signed by keys/reports.pub" in out
    assert "keys/reports.pub: is the file the server logged" in out


def test_a_report_still_rendering_is_not_in_the_package_which_verifies(
    evaluation: Evaluation,
    statement_key: Ed25519PrivateKey,
    auditor: Any,
    client_for: Any,
    tmp_path: Path,
) -> None:
    Report.objects.filter(evaluation=evaluation).delete()
    Report.objects.create(
        kind=Report.Kind.EVALUATION,
        evaluation=evaluation,
        rfp=evaluation.rfp,
        vendor_organisation=evaluation.vendor_organisation,
        status=Report.Status.RENDERING,
        requested_at=clock.now(),
    )
    package = download_to(client_for(auditor), evaluation, tmp_path / "e.zip")

    evidence = json.loads(members(package)["evidence.json"])
    assert [_leaf(d)["kind"] for d in evidence["deposits"]] == ["bundle", "evaluation"]
    assert verify(package)[0] == 0


def test_without_a_statement_key_the_package_has_none_and_verifies(
    evaluation: Evaluation, settings: Any, buyer: Any, client_for: Any, tmp_path: Path
) -> None:
    Report.objects.filter(evaluation=evaluation).delete()
    missing = tmp_path / "no-such-keys" / "statement.pem"
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(missing)

    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")

    assert "keys/reports.pub" not in members(package)
    assert not missing.exists()  # loaded, never created
    assert verify(package)[0] == 0


# --- tampering ------------------------------------------------------------------------


def test_one_byte_of_results_json_in_the_zip_is_named(
    package: Path, tmp_path: Path
) -> None:
    """A flipped byte in the zip itself: the CRC and the digest are wrong."""
    import zipfile

    name = _blob_of(members(package), "evaluation", "results.json")
    with zipfile.ZipFile(package) as archive:
        info = archive.getinfo(name)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data = package.read_bytes()
    tampered = tmp_path / "t.zip"
    tampered.write_bytes(flip(data, start + 10))

    status, out = verify(tampered)

    assert status == 1
    assert f"FAIL  {name}: cannot be read: Bad CRC-32" in out
    assert f"cannot check results.json: {name} cannot be read" in out
    assert "is not in the package" not in out  # the report's evaluation is


def test_a_changed_results_json_is_named(package: Path, tmp_path: Path) -> None:
    """The same byte changed with the zip rewritten: the CRC holds, the digest
    does not, and re-evaluating gives another document."""
    files = members(package)
    name = _blob_of(files, "evaluation", "results.json")
    text = files[name]
    position = text.index(b'"value":') + len(b'"value":')
    tampered = replaced(package, tmp_path / "t.zip", name, flip(text, position))

    status, out = verify(tampered)

    assert status == 1
    assert f"FAIL  {name}: has SHA-256" in out
    assert f"results.json ({name}) has SHA-256" in out
    assert "not the leaf's results_sha256" in out


def _rebuilt_with_results(package: Path, target: Path, factor: float) -> Path:
    """The package with another results.json: its blob named by its own digest,
    the evaluation's leaf naming that blob and digest (so every file is
    consistent with the leaf, which the log no longer holds)."""

    def change(files: dict[str, bytes]) -> dict[str, bytes]:
        evidence = json.loads(files["evidence.json"])
        entry = next(
            d for d in evidence["deposits"] if _leaf(d)["kind"] == "evaluation"
        )
        record = _leaf(entry)
        blob = next(b for b in record["blobs"] if b.get("path") == "results.json")
        results = json.loads(files.pop("blobs/" + blob["sha256"]))
        run = next(r for r in results["runs"] if r["metrics"])
        run["metrics"][0]["value"] *= factor
        data = canonical_json(results)
        blob.update(sha256=_sha(data), size=len(data))
        record["results_sha256"] = _sha(data)
        entry["leaf"] = base64.b64encode(canonical_json(record)).decode()
        return {
            **files,
            "evidence.json": canonical_json(evidence),
            "blobs/" + _sha(data): data,
        }

    return rewrite(package, target, change)


def test_a_consistently_rebuilt_results_json_is_named(
    package: Path, tmp_path: Path
) -> None:
    tampered = _rebuilt_with_results(package, tmp_path / "t.zip", 1.5)

    status, out = verify(tampered)

    assert status == 1
    assert "is not included in the checkpoint" in out
    line = next(
        line for line in out.splitlines() if "do not give this evaluation" in line
    )
    assert line.startswith("  FAIL  evaluation ")
    assert "results.json / evaluation.json do not give this evaluation: " in line
    assert "re-evaluated" in line  # the first difference, both values shown
    assert "has SHA-256" not in out  # every blob is the one its name says


def test_a_tampered_pdf_is_named(package: Path, tmp_path: Path) -> None:
    files = members(package)
    name = _blob_of(files, "report", "report.pdf")
    tampered = replaced(package, tmp_path / "t.zip", name, flip(files[name], 3))

    status, out = verify(tampered)

    assert status == 1
    assert f"report.pdf ({name}) has SHA-256" in out
    assert "not the leaf's pdf_sha256" in out
    assert "the statement's subject report.pdf is" in out


def test_a_statement_signed_by_another_key_is_named(
    evaluation: Evaluation,
    statement_key: Ed25519PrivateKey,
    buyer: Any,
    client_for: Any,
    tmp_path: Path,
) -> None:
    ready_report(evaluation, Ed25519PrivateKey.generate())
    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")

    status, out = verify(package)

    assert status == 1
    assert "statement.json does not verify with keys/reports.pub" in out
    assert "another key signed it" in out


def test_another_statement_key_in_the_package_is_named(
    package: Path, tmp_path: Path
) -> None:
    other = public_key_pem(Ed25519PrivateKey.generate())
    tampered = replaced(package, tmp_path / "t.zip", "keys/reports.pub", other)

    status, out = verify(tampered)

    assert status == 1
    assert "FAIL  keys/reports.pub: is not the file the server logged" in out
    assert "statement.json does not verify with keys/reports.pub" in out


def test_a_statement_with_another_result_is_named(
    evaluation: Evaluation,
    statement_key: Ed25519PrivateKey,
    buyer: Any,
    client_for: Any,
    tmp_path: Path,
) -> None:
    assert evaluation.verdict == "PASS"
    ready_report(evaluation, statement_key, result="FAILED")
    package = download_to(client_for(buyer), evaluation, tmp_path / "e.zip")

    status, out = verify(package)

    assert status == 1
    assert "the statement's result 'FAILED' is not 'PASSED' (the verdict PASS)" in out


def test_a_removed_statement_key_is_named(package: Path, tmp_path: Path) -> None:
    tampered = rewrite(
        package,
        tmp_path / "t.zip",
        lambda f: {k: v for k, v in f.items() if k != "keys/reports.pub"},
    )

    status, out = verify(tampered)

    assert status == 1
    assert "FAIL  keys/reports.pub: is missing: the download receipt names it" in out
    assert "cannot check statement.json: keys/reports.pub is missing" in out


# --- who may download it --------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "status"),
    [
        ("buyer", 200),
        ("evaluator", 200),
        ("auditor", 200),
        ("vendor_a", 200),  # the vendor the evaluation is about
        ("vendor_b", 404),
        ("outsider", 404),
    ],
)
def test_who_may_download_the_package(
    evaluation: Evaluation,
    client_for: Any,
    request: pytest.FixtureRequest,
    persona: str,
    status: int,
) -> None:
    response = client_for(request.getfixturevalue(persona)).get(url(evaluation))

    assert response.status_code == status
    if status == 200:
        assert response["Content-Type"] == "application/zip"
        assert "attachment" in response["Content-Disposition"]
        b"".join(response.streaming_content)
    else:
        assert not EscrowEvent.objects.filter(action="evidence.downloaded").exists()


@pytest.mark.parametrize("persona", ["buyer", "auditor", "vendor_a", "labops"])
def test_the_evaluation_page_offers_the_package_to_who_may_download_it(
    evaluation: Evaluation, client: Any, request: pytest.FixtureRequest, persona: str
) -> None:
    client.force_login(request.getfixturevalue(persona))
    page = client.get(f"/gates/evaluations/{evaluation.public_id}/")
    assert page.status_code == 200

    html = page.content.decode()
    assert 'data-testid="evaluation-evidence"' in html
    assert f'href="{url(evaluation)}"' in html
    assert client.get(url(evaluation)).status_code == 200


def test_the_page_offers_no_package_while_the_bundle_is_sealed(
    evaluation: Evaluation, buyer: Any, client: Any
) -> None:
    Rfp.objects.filter(pk=evaluation.rfp_id).update(status=Rfp.Status.PUBLISHED)
    client.force_login(buyer)

    page = client.get(f"/gates/evaluations/{evaluation.public_id}/")

    assert page.status_code == 200
    assert 'data-testid="evaluation-evidence"' not in page.content.decode()


def test_the_bundle_stays_sealed_until_the_rfp_is_opened(
    evaluation: Evaluation, buyer: Any, vendor_a: Any, client_for: Any
) -> None:
    """The package holds the judged bundle's archive: only those who may have
    that bundle's own package get it (the vendor always, the buyer once the
    bids are opened)."""
    Rfp.objects.filter(pk=evaluation.rfp_id).update(status=Rfp.Status.PUBLISHED)

    assert client_for(buyer).get(url(evaluation)).status_code == 404
    assert client_for(vendor_a).get(url(evaluation)).status_code == 200


def test_anonymous_is_asked_to_sign_in(evaluation: Evaluation, client: Any) -> None:
    assert client.get(url(evaluation)).status_code == 401


def test_an_unknown_evaluation_is_404(
    evaluation: Evaluation, buyer: Any, client_for: Any
) -> None:
    response = client_for(buyer).get(
        "/api/v1/evaluations/00000000-0000-0000-0000-000000000000/evidence/"
    )

    assert response.status_code == 404


def test_the_vendors_own_download_is_in_its_trail(
    evaluation: Evaluation, vendor_a: Any, client_for: Any, tmp_path: Path
) -> None:
    download_to(client_for(vendor_a), evaluation, tmp_path / "e.zip")

    audit = AuditEvent.objects.get(action="evidence.downloaded")
    assert audit.organisation == evaluation.vendor_organisation


# --- the first difference -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "found", "difference"),
    [
        ({"a": [1, 2]}, {"a": [1, 2]}, None),
        ({"a": [1, 2]}, {"a": [1, 3]}, "a[1]: 3 in the file, 2 re-evaluated"),
        ({"a": 1}, {"a": 1.0}, "a: 1.0 in the file, 1 re-evaluated"),
        ({"a": 1}, {"a": True}, "a: true in the file, 1 re-evaluated"),
        ({"a": 1, "b": 2}, {"a": 1}, "b: missing in the file, 2 re-evaluated"),
        ({"a": 1}, {"a": 1, "z": 0}, "z: 0 in the file, absent re-evaluated"),
        ([1, 2], [1], "the document: 1 items in the file, 2 re-evaluated"),
    ],
)
def test_first_difference_names_the_path(
    expected: Any, found: Any, difference: str | None
) -> None:
    assert first_difference(expected, found) == difference
