"""docs/operations.md "Backup and restore", performed: an installation with
checkpoints and a signed certificate is backed up as the document says (keys with
tar, the database with SQLite's online backup or ``pg_dump``, the stored objects
with rsync, in that order), restored into a fresh var directory and database
(``pg_restore`` into a new database on PostgreSQL), and then ``migrate``,
``backup_check`` and ``escrow_verify`` are clean, a new checkpoint is signed by the
same key and proved consistent with the old one, and a new certificate verifies
with the public key and certificate the old installation handed out. And
``check --deploy`` fails, naming the file, on an installation whose checkpoints
outlived its log key."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from artifacts.lib.transparency import merkle, note
from artifacts.models import Checkpoint
from artifacts.services.transparency import checkpoint_publish
from gates.lib.signing.statement import statement_open
from gates.models import GatePlan, Report
from gates.selectors.reports import report_statement_public_key_pem
from gates.services.decisions import decision_record, decision_second
from gates.services.reports import report_generate
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.gates.support import (  # noqa: F401
    PASS,
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
)
from tests.reports.support import passed, promoted  # noqa: F401

PROJECT_DIR = Path(__file__).resolve().parents[2]
PREFIXES = ("DJANGO_", "REPROGATE_", "CELERY_", "DATABASE_URL", "AWS_", "BUNDLE_")
PILOT = "pilot"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _installation_on_disk(settings: Any, tmp_path: Path) -> Path:
    """The old installation's var directory: objects and keys in files, as in
    production (the suite's default is in-memory storage)."""
    var = tmp_path / "old-var"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "artifacts.storage.local.BlobFileSystemStorage",
            "OPTIONS": {"location": var / "media"},
        },
    }
    settings.REPROGATE_KEYS_DIR = var / "keys"
    settings.REPROGATE_LOG_KEY_PATH = str(var / "keys" / "transparency-log.pem")
    settings.REPROGATE_REPORT_KEYS_DIR = str(var / "keys" / "reports")
    settings.REPROGATE_REPORT_STATEMENT_KEY_PATH = str(
        var / "keys" / "reports" / "statement.pem"
    )
    return var


def _sh(*argv: str | Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(arg) for arg in argv],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _postgres() -> dict[str, Any] | None:
    return connection.settings_dict if connection.vendor == "postgresql" else None


def _pg_url(name: str) -> str:
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgresql://{db['USER']}{password}@{host}:{port}/{name}"


@pytest.fixture
def restored_database(tmp_path: Path) -> Iterator[str]:
    """The new installation's DATABASE_URL (an empty PostgreSQL database, dropped
    afterwards, or a SQLite file in the new var directory)."""
    if _postgres() is None:
        yield f"sqlite:///{tmp_path / 'new-var' / 'db.sqlite3'}"
        return
    name = f"{connection.settings_dict['NAME']}_restored"
    admin = _pg_url("postgres")
    _sh("psql", admin, "-qc", f'DROP DATABASE IF EXISTS "{name}"')
    _sh("psql", admin, "-qc", f'CREATE DATABASE "{name}"')
    yield _pg_url(name)
    _sh("psql", admin, "-qc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _build(evaluate: Any, plan: GatePlan, buyer: Any, evaluator: Any) -> Report:
    """The lab gate's certificate signed; the pilot gate's promoted, its
    certificate queued (signed after the restore); a checkpoint over it all."""
    certificate = Report.objects.get(kind=Report.Kind.CERTIFICATE)
    done = report_generate(report_id=certificate.pk)
    assert done is not None
    assert done.status == Report.Status.READY, done.error
    evaluate(plan, PASS, gate=PILOT)
    pilot = decision_record(
        plan=plan, gate=PILOT, kind="promote", rationale="Pilot.", actor=buyer
    )
    pilot = decision_second(decision=pilot, actor=evaluator)
    checkpoint_publish()
    return Report.objects.get(decision=pilot)


def _back_up(var: Path, backup: Path) -> None:
    """docs/operations.md, "In which order": keys, database, stored objects."""
    backup.mkdir()
    _sh("tar", "--preserve-permissions", "-cf", backup / "keys.tar", "-C",
        var / "keys", ".")  # fmt: skip
    if _postgres() is None:  # what sqlite3's .backup does, on the suite's database
        connection.ensure_connection()
        with sqlite3.connect(backup / "db.sqlite3") as target:
            connection.connection.backup(target)
        target.close()
    else:
        _sh("pg_dump", "--format=custom", f"--file={backup / 'reprogate.dump'}",
            _pg_url(connection.settings_dict["NAME"]))  # fmt: skip
    _sh("rsync", "-a", f"{var / 'media'}/", f"{backup / 'media'}/")


def _restore(backup: Path, var: Path, database_url: str) -> None:
    """docs/operations.md, "How to restore", steps 2-4."""
    (var / "keys").mkdir(mode=0o700, parents=True)
    _sh("tar", "--preserve-permissions", "-xf", backup / "keys.tar", "-C",
        var / "keys")  # fmt: skip
    if _postgres() is None:
        (var / "db.sqlite3").write_bytes((backup / "db.sqlite3").read_bytes())
    else:
        _sh("pg_restore", "--no-owner", "--exit-on-error",
            f"--dbname={database_url}", backup / "reprogate.dump")  # fmt: skip
    _sh("rsync", "-a", f"{backup / 'media'}/", f"{var / 'media'}/")


def _env(var: Path, database_url: str, origin: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    return {
        **env,
        "REPROGATE_VAR_DIR": str(var),
        "DATABASE_URL": database_url,
        "DJANGO_SECRET_KEY": "insecure-key-for-the-test-suite-only",
        "DJANGO_DEBUG": "False",
        "REPROGATE_LOG_ORIGIN": origin,
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


# Run in the restored installation: sign the queued certificate and a checkpoint
# over it; print what the old installation's keys must verify.
AFTER_RESTORE = """
import base64, json, sys
import django
django.setup()
from artifacts.models import Checkpoint
from artifacts.selectors.log import log_consistency_proof
from artifacts.services.transparency import checkpoint_publish
from artifacts.storage.blobs import blob_open
from gates.models import Report
from gates.services.reports import report_generate
old_size, public_id = int(sys.argv[1]), sys.argv[2]
done = report_generate(report_id=Report.objects.get(public_id=public_id).pk)
new = checkpoint_publish()
with blob_open(done.statement_blob) as handle:
    statement = handle.read()
print(json.dumps({
    "status": done.status, "error": done.error,
    "signer": done.signer_fingerprint, "size": new.size, "note": new.note,
    "statement": base64.b64encode(statement).decode(),
    "proof": [base64.b64encode(h).decode()
              for h in log_consistency_proof(old_size, new.size)],
}))
"""


@pytest.mark.usefixtures("promoted")  # the lab gate's certificate queued
def test_a_backup_restores_into_a_fresh_installation(
    evaluate: Any,
    buyer: Any,
    evaluator: Any,
    tmp_path: Path,
    restored_database: str,
    settings: Any,
) -> None:
    queued = _build(evaluate, GatePlan.objects.get(), buyer, evaluator)
    old = Checkpoint.objects.order_by("-size").first()
    assert old is not None
    public_pem = report_statement_public_key_pem()
    assert public_pem is not None
    signer = Report.objects.get(status=Report.Status.READY).signer_fingerprint
    _back_up(tmp_path / "old-var", tmp_path / "backup")
    new_var = tmp_path / "new-var"
    _restore(tmp_path / "backup", new_var, restored_database)
    env = _env(new_var, restored_database, settings.REPROGATE_LOG_ORIGIN)

    _sh(sys.executable, "manage.py", "migrate", "--no-input", env=env)
    assert "The keys match the database." in _sh(
        sys.executable, "manage.py", "backup_check", env=env
    )
    assert "Escrow is intact" in _sh(
        sys.executable, "manage.py", "escrow_verify", env=env
    )
    after = json.loads(_sh(sys.executable, "-c", AFTER_RESTORE, str(old.size),
                           str(queued.public_id), env=env))  # fmt: skip

    assert (after["status"], after["error"]) == (Report.Status.READY, "")
    new = note.open_checkpoint(after["note"], old.verifier_key)  # the same key
    assert new.size > old.size
    proof = [base64.b64decode(h) for h in after["proof"]]
    merkle.verify_consistency(old.size, new.size, bytes(old.root_hash),
                              new.root_hash, proof)  # fmt: skip
    assert after["signer"] == signer
    statement_open(base64.b64decode(after["statement"]), public_pem)


def test_check_deploy_fails_when_checkpoints_outlive_the_log_key(
    tmp_path: Path,
) -> None:
    var = tmp_path / "var"
    env = _env(var, f"sqlite:///{var / 'db.sqlite3'}", "reprogate.test/log")
    _sh(sys.executable, "manage.py", "migrate", "--no-input", env=env)
    sign = "import django; django.setup(); from artifacts.services.transparency "
    _sh(sys.executable, "-c", sign + "import checkpoint_publish as p; p()", env=env)
    (var / "keys" / "transparency-log.pem").unlink()  # the keys volume was lost

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip

    assert result.returncode == 1, result.stdout + result.stderr
    assert "reprogate.E001" in result.stderr
    assert f"{var / 'keys' / 'transparency-log.pem'} is missing" in result.stderr
    assert 'docs/operations.md, "Backup and restore"' in result.stderr
