"""The run on the agent's side, against a stand-in server: a bundle whose bytes
are not the ones the claim named is refused before anything is extracted, and
the run is failed with ``bundle_corrupt``; a claim refused is skipped. (The
whole run against the real server: ``test_agent_end_to_end``.)"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run
from tests.agent.fake_server import FakeServer, Reply
from tests.django_free import web_modules_loaded_by

HARNESS = b"#!/bin/sh\necho hi\n"


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def claimed(bundle: bytes, **changes: Any) -> dict[str, Any]:
    run = {
        "id": 7, "public_id": "r-7", "attempt": 1, "scenario": {"name": "s"},
        "entrypoint": "harness/run.sh",
        "files": [{"path": "harness/run.sh", "kind": "harness", "size": len(HARNESS),
                   "sha256": hashlib.sha256(HARNESS).hexdigest()}],
        "wall_limit_s": 30, "cpu_seconds": 30, "file_bytes": 1 << 20,
        "cold_cache": False,
        "bundle": {"sha256": hashlib.sha256(bundle).hexdigest(), "size": len(bundle),
                   "url": "/api/v1/runner/runs/7/bundle?attempt=1"},
    }  # fmt: skip
    run.update(changes)
    return {"claimed": True, "run": run}


@pytest.fixture
def client(fake: FakeServer) -> RunnerClient:
    fake.script("runs/7/report", Reply(200, {"continue": True}))
    fake.script("runs/7/fail", Reply(200, {"state": "failed"}))
    fake.script("runs/7/running", Reply(409, {"detail": "stop here"}))
    return RunnerClient(fake.url, "rgh_" + "t" * 43, retries=1, sleep=lambda s: None)


def run_once(client: RunnerClient, tmp_path: Path) -> str:
    return execute_run(client, Terms("lab-07@h"), tmp_path, 7, 1)


@pytest.mark.parametrize(
    ("served", "headers", "says"),
    [
        # Same size, other bytes: a valid archive of another harness.
        (archive({"harness/run.sh": b"#!/bin/sh\nrm -r /\n"}), {}, "does not match"),
        # The server's own header names another digest: refused before reading.
        (None, {"X-Bundle-SHA256": "0" * 64}, "with SHA-256 000"),
        # Longer than the claim said.
        (archive({"harness/run.sh": HARNESS}) + b"\0" * 4096, {}, "bytes"),
    ],
)
def test_a_bundle_not_the_claimed_one_is_refused_before_extraction(
    fake: FakeServer,
    client: RunnerClient,
    tmp_path: Path,
    served: bytes | None,
    headers: dict[str, str],
    says: str,
) -> None:
    good = archive({"harness/run.sh": HARNESS})
    body = good if served is None else served
    if served is not None and len(served) == len(good):
        assert served != good
    fake.script("runs/7/claim", Reply(200, claimed(good)))
    fake.script("runs/7/bundle", Reply(200, body, headers))

    outcome = run_once(client, tmp_path)

    assert outcome == "failed"
    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "bundle_corrupt"
    assert says in failed.json()["message"]
    assert fake.calls("runs/7/running") == []
    assert list(tmp_path.iterdir()) == []  # the working directory is gone


def test_the_claimed_bundle_is_extracted_and_the_run_goes_on(
    fake: FakeServer, client: RunnerClient, tmp_path: Path
) -> None:
    """The same path with the right bytes reaches ``running`` (refused here with
    409: the run moved on, the agent stops without failing it)."""
    good = archive({"harness/run.sh": HARNESS})
    fake.script("runs/7/claim", Reply(200, claimed(good)))
    fake.script("runs/7/bundle", Reply(200, good))

    outcome = run_once(client, tmp_path)

    assert outcome == "stale"
    (running,) = fake.calls("runs/7/running")
    assert running.json()["attempt"] == 1
    assert running.json()["cache_dropped"] is None
    assert isinstance(running.json()["environment"], dict)
    assert fake.calls("runs/7/fail") == []


def test_a_manifest_file_missing_from_the_archive_is_corrupt(
    fake: FakeServer, client: RunnerClient, tmp_path: Path
) -> None:
    other = archive({"harness/other.sh": HARNESS})
    fake.script("runs/7/claim", Reply(200, claimed(other)))
    fake.script("runs/7/bundle", Reply(200, other))

    assert run_once(client, tmp_path) == "failed"
    (failed,) = fake.calls("runs/7/fail")
    assert failed.json()["stop_reason"] == "bundle_corrupt"
    assert "harness/run.sh" in failed.json()["message"]


def test_a_claim_refused_is_skipped(
    fake: FakeServer, client: RunnerClient, tmp_path: Path
) -> None:
    fake.script("runs/7/claim", Reply(409, {"claimed": False, "detail": "no"}))

    assert run_once(client, tmp_path) == "skipped"
    assert fake.calls("runs/7/bundle") == []


def test_the_run_loads_no_django() -> None:
    assert web_modules_loaded_by("import reprogate_agent.execute") == "none"


# kombu's JSON (kombu.utils.json) imports django.utils.functional when Django is
# installed, to encode lazy strings: no settings, no database, nothing else.
KOMBU_JSON = {
    "django",
    "django.utils",
    "django.utils.functional",
    "django.utils.regex_helper",
    "django.utils.version",
}


def test_the_worker_loads_no_more_django_than_kombu_s_json() -> None:
    loaded = web_modules_loaded_by(
        "import os\nos.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "import reprogate_agent.__main__\n"
        "from reprogate_agent.celery_app import create_app\n"
        "from reprogate_agent.options import read_options\n"
        "opts = read_options({'REPROGATE_SERVER_URL': 'https://x.example',"
        " 'REPROGATE_HOST_TOKEN': 'rgh_' + 'a' * 40,"
        " 'REPROGATE_BROKER_URL': 'redis://127.0.0.1:6379/9',"
        " 'REPROGATE_AGENT_WORK_DIR': '/tmp/reprogate-agent-import-test'})\n"
        "app = create_app(opts, 'pool.x')\n"
        "app.loader.import_default_modules()\n"
        "app.finalize()\n"
    )

    assert set(loaded.split(",")) - {"none"} <= KOMBU_JSON, loaded


SLOW = b"""#!/bin/sh
echo kept > "$REPROGATE_OUTPUT_DIR/partial.txt"
echo '::progress:: 0.2'
sleep 30
"""


def test_a_refused_report_kills_the_harness_and_the_run_is_finished_cancelled(
    fake: FakeServer, client: RunnerClient, tmp_path: Path
) -> None:
    bundle = archive({"harness/run.sh": SLOW})
    run = claimed(bundle)
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(SLOW),
         "sha256": hashlib.sha256(SLOW).hexdigest()}
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))

    def report() -> Reply:  # cancelled once the harness runs
        if fake.calls("runs/7/running"):
            return Reply(409, {"continue": False, "detail": "Cancelled."})
        return Reply(200, {"continue": True})

    fake.answer("runs/7/report", report)
    fake.script(
        "runs/7/outputs/partial.txt",
        Reply(201, {"path": "partial.txt", "sha256": "x", "size": 5}),
    )
    fake.script("runs/7/finish", Reply(200, {"state": "cancelled"}))
    terms = Terms("lab-07@h", progress_write_seconds=0.0)

    started = time.monotonic()
    outcome = execute_run(client, terms, tmp_path, 7, 1)

    assert outcome == "cancelled"
    assert time.monotonic() - started < 20  # not the harness's 30 s
    (finished,) = fake.calls("runs/7/finish")
    result = finished.json()["result"]
    assert result["stop_reason"] == "cancelled"
    assert "::progress:: 0.2" in result["log_tail"]
    assert finished.json()["warnings"] == []
    (put,) = fake.calls("runs/7/outputs/partial.txt")
    assert put.body == b"kept\n"
    assert put.path.endswith("?attempt=1")


ENV_HARNESS = b"""#!/bin/sh
env > "$REPROGATE_OUTPUT_DIR/env.txt"
"""


def test_the_harness_sees_none_of_the_agent_s_secrets(
    fake: FakeServer,
    client: RunnerClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token, password = "rgh_" + "s" * 43, "broker-password-5309"
    monkeypatch.setenv("REPROGATE_HOST_TOKEN", token)
    monkeypatch.setenv("REPROGATE_BROKER_URL", f"amqp://pool-x:{password}@h/v")
    bundle = archive({"harness/run.sh": ENV_HARNESS})
    run = claimed(bundle)
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(ENV_HARNESS),
         "sha256": hashlib.sha256(ENV_HARNESS).hexdigest()}
    ]  # fmt: skip
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/running", Reply(200, {"state": "running"}))
    fake.script("runs/7/outputs/env.txt", Reply(201, {"path": "env.txt"}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))

    assert run_once(client, tmp_path) == "succeeded"

    (put,) = fake.calls("runs/7/outputs/env.txt")
    seen = put.body.decode()
    assert "REPROGATE_SCENARIO=" in seen
    assert "REPROGATE_RUN_ID=r-7" in seen
    assert token not in seen
    assert password not in seen
    assert "REPROGATE_HOST_TOKEN" not in seen


TWO_OUTPUTS = b"""#!/bin/sh
echo kept > "$REPROGATE_OUTPUT_DIR/kept.txt"
echo refused > "$REPROGATE_OUTPUT_DIR/refused.txt"
"""


def test_finish_carries_the_run_s_statement_signed_with_the_host_key(
    fake: FakeServer, client: RunnerClient, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from artifacts.lib.signatures.statement import public_key_pem
    from benchmarks.lib.signing import run_statement_open

    key = Ed25519PrivateKey.generate()
    bundle = archive({"harness/run.sh": TWO_OUTPUTS})
    run = claimed(bundle, campaign="c-1", repetition=2, seed=42)
    run["run"]["files"] = [
        {"path": "harness/run.sh", "kind": "harness", "size": len(TWO_OUTPUTS),
         "sha256": hashlib.sha256(TWO_OUTPUTS).hexdigest()}
    ]  # fmt: skip
    drift = [{"field": "kernel", "severity": "minor"}]
    fake.script("runs/7/claim", Reply(200, run))
    fake.script("runs/7/bundle", Reply(200, bundle))
    fake.script("runs/7/running", Reply(200, {"state": "running", "drift": drift}))
    fake.script("runs/7/outputs/kept.txt", Reply(201, {"path": "kept.txt"}))
    fake.script("runs/7/outputs/refused.txt", Reply(400, {"detail": "no"}))
    fake.script("runs/7/finish", Reply(200, {"state": "succeeded"}))

    assert execute_run(client, Terms("lab-07@h", host_key=key), tmp_path, 7, 1) == (
        "succeeded"
    )

    (finished,) = fake.calls("runs/7/finish")
    body = finished.json()
    statement = run_statement_open(body["statement"].encode(), public_key_pem(key))
    (running,) = fake.calls("runs/7/running")
    environment = running.json()["environment"]
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    (telemetry,) = fake.calls("runs/7/artefacts/telemetry.bin")
    assert subjects == {  # the refused output is not signed for
        "outputs/kept.txt": hashlib.sha256(b"kept\n").hexdigest(),
        "runner/telemetry.bin": hashlib.sha256(telemetry.body).hexdigest(),
        "environment.json": hashlib.sha256(
            json.dumps(
                environment, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
        ).hexdigest(),
    }
    predicate = statement["predicate"]
    assert (predicate["run"], predicate["campaign"]) == ("r-7", "c-1")
    assert (predicate["repetition"], predicate["seed"], predicate["drift"]) == (
        2,
        42,
        drift,
    )
    assert predicate["exit"] == {"code": 0, "stop_reason": "exited"}
    assert predicate["started"] <= predicate["ended"]
    assert any("refused.txt" in w for w in body["warnings"])
