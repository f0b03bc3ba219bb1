"""The log API: the latest published checkpoint and the key to check it (text;
reading never signs one), proofs that verify against it (JSON, base64), all of
it to anyone (no account needed), 400s in the API's error shape for bad
parameters, 503 (not a wrong proof) for a tampered log."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from artifacts.lib.transparency import merkle, note
from artifacts.models import Checkpoint, LogEntry
from artifacts.services.transparency import checkpoint_publish
from tests.artifacts.transparency.conftest import numbered

pytestmark = pytest.mark.django_db
Append = Callable[..., list[LogEntry]]
CHECKPOINT, KEY = "/api/v1/log/checkpoint", "/api/v1/log/key"
INCLUSION, CONSISTENCY = "/api/v1/log/proof/inclusion", "/api/v1/log/proof/consistency"


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _b(values: list[str]) -> list[bytes]:
    return [base64.b64decode(v) for v in values]


def _checkpoint(client: APIClient) -> note.Checkpoint:
    vkey = client.get(KEY).content.decode()
    return note.open_checkpoint(client.get(CHECKPOINT).content.decode(), vkey)


def test_an_outsider_checks_a_checkpoint_without_an_account(append: Append) -> None:
    append(b"x", b"y")
    checkpoint_publish()
    outsider = APIClient()  # no token, no session

    checkpoint = _checkpoint(outsider)  # the note verifies with the public key

    assert checkpoint.size == 2
    proof = outsider.get(f"{INCLUSION}?index=1&size=2")
    assert proof.status_code == 200
    root = base64.b64decode(proof.json()["root_hash"])
    assert root == checkpoint.root_hash
    between = outsider.get(f"{CONSISTENCY}?first=1&second=2")
    assert between.status_code == 200


def test_a_token_is_neither_needed_nor_read(append: Append) -> None:
    append(b"x")
    checkpoint_publish()
    client = APIClient(HTTP_AUTHORIZATION="Token not-a-token")

    response = client.get(CHECKPOINT)

    assert response.status_code == 200  # a bad token is no reason to refuse


def test_checkpoint_is_the_latest_signed_note(append: Append, vendor_b: Any) -> None:
    append(*numbered(5))
    checkpoint_publish()

    response = _api(vendor_b).get(CHECKPOINT)

    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Reprogate-Log-Pending"] == "0"
    checkpoint = _checkpoint(_api(vendor_b))
    assert checkpoint.size == 5


def test_checkpoint_read_does_not_sign_and_counts_pending_entries(
    append: Append, vendor_b: Any
) -> None:
    append(*numbered(5))
    checkpoint_publish()
    append(*numbered(2, start=5))

    response = _api(vendor_b).get(CHECKPOINT)

    assert response.status_code == 200
    assert response["Reprogate-Log-Pending"] == "2"
    assert _checkpoint(_api(vendor_b)).size == 5
    assert Checkpoint.objects.count() == 1


def test_no_checkpoint_yet_answers_503_saying_when(
    append: Append, vendor_b: Any
) -> None:
    append(b"x")

    response = _api(vendor_b).get(CHECKPOINT)

    assert response.status_code == 503
    assert response.json()["code"] == "no_checkpoint"
    assert "within a minute" in response.json()["message"]
    assert not Checkpoint.objects.exists()


def test_inclusion_proof_leads_to_the_checkpoint(append: Append, auditor: Any) -> None:
    leaves = numbered(11)
    append(*leaves)
    checkpoint_publish()
    checkpoint = _checkpoint(_api(auditor))

    body = _api(auditor).get(INCLUSION, {"index": 4, "size": 11}).json()

    assert (body["index"], body["size"]) == (4, 11)
    assert base64.b64decode(body["root_hash"]) == checkpoint.root_hash
    proof = _b(body["proof"])
    leaf_hash = merkle.leaf_hash(leaves[4])
    merkle.verify_inclusion(leaf_hash, 4, 11, proof, checkpoint.root_hash)


def test_consistency_proof_links_two_checkpoints(append: Append, buyer: Any) -> None:
    client = _api(buyer)
    append(*numbered(3))
    checkpoint_publish()
    old = _checkpoint(client)
    append(*numbered(8, start=3))
    checkpoint_publish()
    new = _checkpoint(client)

    body = client.get(CONSISTENCY, {"first": 3, "second": 11}).json()

    assert base64.b64decode(body["first_root_hash"]) == old.root_hash
    merkle.verify_consistency(3, 11, old.root_hash, new.root_hash, _b(body["proof"]))


@pytest.mark.parametrize(
    ("url", "query", "path"),
    [
        (INCLUSION, {"size": 3}, "index"),
        (INCLUSION, {"index": -1, "size": 3}, "index"),
        (INCLUSION, {"index": "one", "size": 3}, "index"),
        (INCLUSION, {"index": 0, "size": 2**63}, "size"),
        (INCLUSION, {"index": 0, "size": 0}, "size"),
        (CONSISTENCY, {"first": 1}, "second"),
        (CONSISTENCY, {"first": 0, "second": 2}, "first"),
    ],
)
def test_bad_parameters_are_400_naming_them(
    append: Append, evaluator: Any, url: str, query: dict[str, Any], path: str
) -> None:
    append(*numbered(3))

    response = _api(evaluator).get(url, query)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert path in [p.get("path") for p in body["problems"]]


@pytest.mark.parametrize(
    ("url", "query"),
    [
        (INCLUSION, {"index": 3, "size": 3}),
        (INCLUSION, {"index": 0, "size": 4}),
        (CONSISTENCY, {"first": 2, "second": 4}),
        (CONSISTENCY, {"first": 3, "second": 2}),
    ],
)
def test_out_of_range_is_400(
    append: Append, labops: Any, url: str, query: dict[str, Any]
) -> None:
    append(*numbered(3))

    response = _api(labops).get(url, query)

    assert response.status_code == 400
    assert response.json()["code"] == "out_of_range"


def test_a_tampered_log_answers_503_without_details(
    append: Append, auditor: Any
) -> None:
    append(*numbered(4))
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM artifacts_lognode WHERE level = 0 AND "index" = 1')

    response = _api(auditor).get(INCLUSION, {"index": 0, "size": 4})

    assert response.status_code == 503
    assert response.json()["code"] == "log_integrity"
    assert "lognode" not in response.content.decode().lower()


def test_a_missing_key_answers_503_without_its_path(
    append: Append, auditor: Any, key_path: Any
) -> None:
    append(b"x")
    checkpoint_publish()
    key_path.unlink()

    response = _api(auditor).get(KEY)

    assert response.status_code == 503
    assert str(key_path) not in response.content.decode()
