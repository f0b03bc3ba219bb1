"""``reprogate submit`` against the real API in a live server: the bundle is
ingested and accepted, a broken one comes back with every problem, and a bad
token is refused, exactly as a vendor's pipeline would see it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from accounts.services.users import api_token_issue
from artifacts.models import Bundle
from reprogate_cli.main import main
from tests.artifacts.corpus.build import good_files
from tests.artifacts.ingest_support import (
    build_bundle,
    open_rfp,
    register_corpus_keys,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(vendor_a: Any, vendor_a_org: Organisation, vendor_b_org: Organisation) -> str:
    register_corpus_keys([vendor_a_org, vendor_b_org], vendor_a)
    open_rfp(vendor_a_org, vendor_b_org)
    return api_token_issue(user=vendor_a, name="pipeline")[1]


def _submit(live_server: Any, path: Path, token: str) -> int:
    return main(
        [
            "submit",
            str(path),
            "--url",
            live_server.url,
            "--token",
            token,
            "--rfp",
            "RFP-DEMO-1",
        ]
    )


def test_submit_to_the_live_api_is_accepted_with_the_receipt(
    live_server: Any, token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build_bundle(tmp_path)

    status = _submit(live_server, path, token)

    out = capsys.readouterr().out
    bundle = Bundle.objects.get()
    assert status == 0, out
    assert bundle.status == Bundle.Status.ACCEPTED
    assert bundle.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert f"id: {bundle.public_id}" in out
    assert "status: accepted" in out


def test_submit_of_a_tampered_bundle_prints_every_problem_and_exits_1(
    live_server: Any, token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = good_files()
    path = build_bundle(tmp_path, files, key="stranger")

    status = _submit(live_server, path, token)

    captured = capsys.readouterr()
    assert status == 1
    assert "signature_key_not_allowed" in captured.out + captured.err
    assert Bundle.objects.get().status == Bundle.Status.REJECTED


def test_submit_with_a_wrong_token_exits_2_and_uploads_nothing(
    live_server: Any, token: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = _submit(live_server, build_bundle(tmp_path), "rgt_not-a-real-token")

    assert status == 2
    assert Bundle.objects.count() == 0
