"""Host-signed results: the agent's key pinned at hello, each run's statement
verified before the run is accepted, the statement and the host key in the API,
another key refused until the lab operator accepts it, and the campaign's
evidence package checked offline by ``reprogate evidence verify``, which names
any altered output or statement.

The statements are checked here by a DSSE verifier written in this file from
the specification (secure-systems-lab/dsse protocol.md: PAE, base64, Ed25519
over PAE), not by the project's own code."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from rest_framework.test import APIClient

from accounts.models import AuditEvent
from artifacts.models import DepositBlob
from benchmarks.models import Campaign, LabHost, Run
from tests.architecture.test_cli_without_django import reprogate
from tests.benchmarks.runner.support import runs_of
from tests.benchmarks.runner_api.support import (
    HOST_KEY,
    claim,
    finish,
    hello,
    put_output,
    running,
    signed_statement,
    started,
)
from tests.escrow.package_support import flip, members, replaced

pytestmark = pytest.mark.django_db

METRICS = (
    b'{"metrics": [{"name": "read_iops", "stat": "mean", "value": 1000, '
    b'"unit": "IOPS"}]}'
)


# --- DSSE from the specification ------------------------------------------------------


def spec_pae(payload_type: bytes, payload: bytes) -> bytes:
    """PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, the
    lengths as ASCII decimal byte counts."""
    return b" ".join(
        [
            b"DSSEv1",
            str(len(payload_type)).encode(),
            payload_type,
            str(len(payload)).encode(),
            payload,
        ]
    )


def spec_verify(envelope: bytes, public_pem: bytes) -> dict[str, Any]:
    """The statement if one signature verifies over PAE with the PEM key (and
    only then is the payload parsed); AssertionError otherwise."""
    document = json.loads(envelope)
    payload = base64.b64decode(document["payload"])
    payload_type = document["payloadType"].encode("utf-8")
    key = serialization.load_pem_public_key(public_pem)
    assert isinstance(key, Ed25519PublicKey)
    message = spec_pae(payload_type, payload)
    ok = 0
    for signature in document["signatures"]:
        try:
            key.verify(base64.b64decode(signature["sig"]), message)
            ok += 1
        except Exception:  # noqa: S112 - an unverified signature is skipped
            continue
    assert ok, "no signature verifies with the host key"
    assert document["payloadType"] == "application/vnd.in-toto+json"
    statement: dict[str, Any] = json.loads(payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://reprogate.dev/lab-run/v1"
    return statement


def _pem(key: Ed25519PrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        .decode("ascii")
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- fixtures -------------------------------------------------------------------------


@pytest.fixture
def run(campaign: Campaign) -> Run:
    return runs_of(campaign)[0]


@pytest.fixture
def live(agent: APIClient, run: Run) -> Run:
    started(agent, run)
    return Run.objects.get(pk=run.pk)


def _finished(agent: APIClient, run: Run) -> Run:
    started(agent, run)
    assert put_output(agent, run, "metrics.json", METRICS).status_code == 201
    response = finish(agent, run, outputs={"metrics.json": METRICS})
    assert response.status_code == 200, response.json()
    return Run.objects.get(pk=run.pk)


# --- the key at hello -----------------------------------------------------------------


def test_the_first_key_is_pinned_at_hello_with_one_audit_row(
    agent: APIClient, run: Run
) -> None:
    answer = hello(agent).json()

    host = LabHost.objects.get()
    assert answer["signing_key"] == "pinned"
    assert host.signing_key == _pem(HOST_KEY)
    assert answer["signing_key_fingerprint"] == host.signing_key_fingerprint
    assert host.signing_key_fingerprint.startswith("SHA256:")
    assert AuditEvent.objects.filter(action="lab_host.key_pinned").count() == 1
    assert hello(agent).json()["signing_key"] == "pinned"  # the same key: no change
    assert AuditEvent.objects.filter(action="lab_host.key_pinned").count() == 1


@pytest.mark.parametrize(
    "key",
    [
        "not a key",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        # an EC key is not the Ed25519 key statements are signed with
        "-----BEGIN PUBLIC KEY-----\n"
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEcTi6Bj7Ai6H3V6yG"
        "qg6O6vRfnmMNvSOXQfmS7RBlwAyOBf3ahK1Q1LqCIiqDztXlyDXgoMGyGxZx5c8J\nwgOb0g==\n"
        "-----END PUBLIC KEY-----\n",
    ],
)
def test_a_malformed_key_is_refused_at_hello(agent: APIClient, key: str) -> None:
    response = hello(agent, signing_key=key)

    assert response.status_code == 400
    assert response.json()["code"] == "signing_key_invalid"
    assert not LabHost.objects.filter(signing_key__gt="").exists()


# --- the statement at finish ----------------------------------------------------------


def test_every_run_s_statement_verifies_with_the_pinned_host_key(
    agent: APIClient, campaign: Campaign, labops: Any, client_for: Any
) -> None:
    first, second = runs_of(campaign)
    done = [_finished(agent, first)]
    assert claim(agent, second).status_code == 200
    assert running(agent, second).status_code == 200
    assert put_output(agent, second, "metrics.json", b"{}").status_code == 201
    answer = finish(agent, second, outputs={"metrics.json": b"{}"}, exit_code=2)
    assert answer.json() == {"state": "failed"}  # a failed run is signed too
    done.append(Run.objects.get(pk=second.pk))
    web = client_for(labops)

    for run in done:
        assert run.host is not None
        key = web.get(f"/api/v1/lab/hosts/{run.host.public_id}/key")
        assert key.status_code == 200
        assert key["Content-Type"] == "application/x-pem-file"
        assert key["X-Key-Fingerprint"] == run.signing_key_fingerprint
        envelope = web.get(f"/api/v1/runs/{run.public_id}/statement.json")
        assert envelope.status_code == 200

        statement = spec_verify(envelope.content, key.content)

        outputs = {d["name"]: d["digest"]["sha256"] for d in statement["subject"]}
        data = METRICS if run == done[0] else b"{}"
        assert outputs["outputs/metrics.json"] == _sha(data)
        assert outputs["environment.json"] == _sha(run.environment_canonical.encode())
        assert json.loads(run.environment_canonical) == run.environment
        predicate = statement["predicate"]
        assert predicate["run"] == str(run.public_id)
        assert predicate["campaign"] == str(campaign.public_id)
        assert predicate["repetition"] == run.repetition
        assert predicate["exit"]["code"] == run.exit_code
        assert {
            "policy",
            "isolation",
            "drift",
            "actions",
            "seed",
            "started",
            "ended",
        } <= set(predicate)
        # deposited in escrow with the outputs, with the key it verified with
        items = {
            (i.role, i.path): i.blob.sha256
            for i in DepositBlob.objects.filter(deposit=run.output_deposit)
        }
        assert items[("document", "statement.json")] == _sha(envelope.content)
        assert items[("document", "host_key.pem")] == _sha(key.content)
        assert items[("output", "metrics.json")] == _sha(data)


def test_a_statement_signed_by_another_key_is_refused_and_the_run_not_accepted(
    live: Run, agent: APIClient
) -> None:
    assert put_output(agent, live, "metrics.json", METRICS).status_code == 201
    forged = signed_statement(
        live, outputs={"metrics.json": METRICS}, key=Ed25519PrivateKey.generate()
    )

    response = finish(agent, live, statement=forged)

    assert response.status_code == 400
    assert response.json()["code"] == "statement_invalid"
    assert "another key signed it" in response.json()["detail"]
    live.refresh_from_db()
    assert live.state == Run.State.RUNNING
    assert live.output_deposit is None
    assert live.statement_blob is None
    assert not live.metrics.exists()
    assert not live.outputs.exists()
    # the host's own signature is still accepted afterwards
    assert finish(agent, live, outputs={"metrics.json": METRICS}).status_code == 200


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"outputs": {}}, "does not name output 'metrics.json'"),
        (
            {"outputs": {"metrics.json": METRICS, "extra.json": b"1"}},
            "names output 'extra.json', which the server does not hold",
        ),
        ({"outputs": {"metrics.json": b"other"}}, "its digest of output"),
        ({"environment": {"os": {"name": "Other"}}}, "its digest of the environment"),
        (
            {"run_public_id": "00000000-0000-0000-0000-000000000000"},
            "it is the statement of run",
        ),
        ({"exit_code": 3}, "it says the harness ended"),
    ],
)
def test_a_statement_that_is_not_this_run_s_is_refused(
    live: Run, agent: APIClient, change: dict[str, Any], said: str
) -> None:
    assert put_output(agent, live, "metrics.json", METRICS).status_code == 201
    kwargs: dict[str, Any] = {"outputs": {"metrics.json": METRICS}, **change}

    response = finish(agent, live, statement=signed_statement(live, **kwargs))

    assert response.status_code == 400
    assert response.json()["code"] == "statement_mismatch"
    assert said in response.json()["detail"]
    live.refresh_from_db()
    assert live.state == Run.State.RUNNING


@pytest.mark.parametrize(
    ("statement", "code"),
    [("", "statement_missing"), ("{not json", "statement_invalid")],
)
def test_a_missing_or_malformed_statement_is_refused(
    live: Run, agent: APIClient, statement: str, code: str
) -> None:
    response = finish(agent, live, statement=statement)

    assert (response.status_code, response.json()["code"]) == (400, code)
    assert Run.objects.get(pk=live.pk).state == Run.State.RUNNING


def test_another_key_waits_for_the_lab_operator(
    agent: APIClient, campaign: Campaign, labops: Any, client_for: Any
) -> None:
    first, second = runs_of(campaign)
    _finished(agent, first)
    host = LabHost.objects.get()
    pinned = host.signing_key_fingerprint
    new_key = Ed25519PrivateKey.generate()

    answer = hello(agent, signing_key=_pem(new_key)).json()

    host.refresh_from_db()
    assert answer["signing_key"] == "pending"
    assert (host.signing_key_fingerprint, host.signing_key) == (pinned, _pem(HOST_KEY))
    assert host.pending_signing_key == _pem(new_key)
    assert claim(agent, second).status_code == 200
    assert running(agent, second).status_code == 200
    refused = finish(agent, second, statement=signed_statement(second, key=new_key))
    assert refused.status_code == 400
    assert "has not accepted" in refused.json()["detail"]

    web = client_for(labops)
    page = web.get("/lab/pools/")
    assert host.pending_signing_key_fingerprint in page.content.decode()
    assert pinned in page.content.decode()
    url = f"/lab/pools/{host.pool.public_id}/hosts/{host.public_id}/key/accept/"
    stale = web.post(url, {"fingerprint": pinned})  # not the key offered
    assert stale.status_code == 302
    assert LabHost.objects.get().signing_key_fingerprint == pinned
    before = AuditEvent.objects.count()
    assert (
        web.post(url, {"fingerprint": host.pending_signing_key_fingerprint}).status_code
        == 302
    )

    host.refresh_from_db()
    assert host.signing_key == _pem(new_key)
    assert not host.pending_signing_key
    assert AuditEvent.objects.count() == before + 1
    event = AuditEvent.objects.latest("id")
    assert (event.action, event.data["replaced"]) == ("lab_host.key_accepted", pinned)
    accepted = finish(agent, second, statement=signed_statement(second, key=new_key))
    assert accepted.status_code == 200, accepted.json()


def test_only_the_pool_s_operators_accept_a_key(
    agent: APIClient, run: Run, outsider: Any, buyer: Any, client_for: Any
) -> None:
    hello(agent)
    hello(agent, signing_key=_pem(Ed25519PrivateKey.generate()))
    host = LabHost.objects.get()
    url = f"/lab/pools/{host.pool.public_id}/hosts/{host.public_id}/key/accept/"

    for user in (outsider, buyer):
        answer = client_for(user).post(
            url, {"fingerprint": host.pending_signing_key_fingerprint}
        )
        assert answer.status_code in (403, 404)
    assert LabHost.objects.get().pending_signing_key


def test_the_statement_and_the_key_are_hidden_from_outsiders(
    agent: APIClient,
    run: Run,
    outsider: Any,
    buyer: Any,
    vendor_a: Any,
    client_for: Any,
) -> None:
    finished = _finished(agent, run)
    assert finished.host is not None
    statement = f"/api/v1/runs/{finished.public_id}/statement.json"
    key = f"/api/v1/lab/hosts/{finished.host.public_id}/key"

    page = client_for(buyer).get(f"/lab/runs/{finished.public_id}/")
    assert page.status_code == 200
    assert finished.signing_key_fingerprint in page.content.decode()
    assert statement in page.content.decode()
    assert client_for(outsider).get(statement).status_code == 404
    assert client_for(outsider).get(key).status_code == 404
    for reader in (buyer, vendor_a):  # they see the run: they may check it
        assert client_for(reader).get(statement).status_code == 200
        assert client_for(reader).get(key).status_code == 200


# --- the campaign's evidence package --------------------------------------------------


def verify(path: Path) -> tuple[int, str]:
    done = reprogate("evidence", "verify", str(path))
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, done.stdout


@pytest.fixture
def package(
    agent: APIClient, campaign: Campaign, labops: Any, client_for: Any, tmp_path: Path
) -> Path:
    for run in runs_of(campaign):
        _finished(agent, run)
    page = client_for(labops).get(f"/lab/campaigns/{campaign.public_id}/")
    url = f"/api/v1/campaigns/{campaign.public_id}/evidence/"
    assert url in page.content.decode()  # the campaign page links it
    response = client_for(labops).get(url)
    assert response.status_code == 200, response.content
    path = tmp_path / "campaign.zip"
    path.write_bytes(b"".join(response.streaming_content))
    return path


def _run_blob(files: dict[str, bytes], role: str, path: str) -> tuple[str, str]:
    """(run public id, zip member) of the first run deposit's blob ``path``."""
    evidence = json.loads(files["evidence.json"])
    for entry in evidence["deposits"]:
        leaf = json.loads(base64.b64decode(entry["leaf"]))
        if leaf["kind"] != "run_output":
            continue
        for blob in leaf["blobs"]:
            if (blob["role"], blob.get("path")) == (role, path):
                return leaf["run"], f"blobs/{blob['sha256']}"
    raise AssertionError(f"no {role} {path} in the package")


def test_the_campaign_package_verifies_offline(package: Path) -> None:
    code, out = verify(package)

    assert code == 0, out
    assert out.count("signed by host") == 2  # both runs


@pytest.mark.parametrize(
    ("role", "path", "named"),
    [
        ("output", "metrics.json", "output metrics.json"),
        ("document", "statement.json", "the statement"),
        ("document", "environment.json", "environment.json"),
    ],
)
def test_one_flipped_byte_is_named(
    package: Path, tmp_path: Path, role: str, path: str, named: str
) -> None:
    files = members(package)
    run, member = _run_blob(files, role, path)
    altered = replaced(
        package, tmp_path / "altered.zip", member, flip(files[member], 5)
    )

    code, out = verify(altered)

    assert code == 1
    assert f"run {run}" in out
    assert f"{named} ({member}) is altered" in out


def test_a_run_signed_by_a_key_the_package_does_not_hold_is_named(
    package: Path, tmp_path: Path
) -> None:
    files = members(package)
    run, _statement = _run_blob(files, "document", "statement.json")
    leaf_key = _run_blob(files, "document", "host_key.pem")[1]
    other = Ed25519PrivateKey.generate()
    # the key blob swapped for another key under the same name: the bytes no
    # longer match the name and the statement no longer verifies
    altered = replaced(package, tmp_path / "k.zip", leaf_key, _pem(other).encode())

    code, out = verify(altered)

    assert code == 1
    assert "host_key.pem" in out
    assert f"run {run}" in out


def test_fixity_finds_nothing_wrong_with_a_signed_run_s_deposit(
    agent: APIClient, run: Run
) -> None:
    from artifacts.services.fixity.run import fixity_check

    finished = _finished(agent, run)
    assert finished.output_deposit is not None

    report = fixity_check()

    assert [(f.subject, f.detail) for f in report.findings.items] == []
