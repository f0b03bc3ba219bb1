"""The start-up checks of the keys (config/checks.py): a production instance whose
database holds checkpoints or signed reports without the keys that signed them is
an error naming the file and the restore procedure (a warning with DEBUG on);
an unwritable keys directory or an open key file a warning; an empty, absent or
unmigrated database says nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core import checks

from artifacts.lib.transparency.keyfile import load_private_key
from artifacts.services.transparency import checkpoint_publish
from config.backup import backup_check
from config.checks import TAG, key_files_exposed, keys_missing
from gates.models import Report
from gates.services.reports import report_generate
from tests.artifacts.ingest_support import upload_rfp  # noqa: F401
from tests.config.test_settings_declared import base_env as base_env
from tests.config.test_settings_declared import run
from tests.gates.support import (  # noqa: F401
    evaluate_fixture,
    frozen_plan,
    gate_bundle,
    gate_campaign,
)
from tests.reports.support import passed, promoted  # noqa: F401

ABSENT = "reprogate_c_never_created"


@pytest.fixture
def production(settings: Any) -> Any:
    settings.DEBUG = False
    settings.REPROGATE_EMBEDDED = False
    return settings


def _ids(found: list[checks.CheckMessage]) -> list[str]:
    return sorted(str(message.id) for message in found)


@pytest.mark.django_db
def test_an_installation_that_signed_nothing_needs_no_key(production: Any) -> None:
    assert not Path(production.REPROGATE_LOG_KEY_PATH).exists()

    assert keys_missing() == []


@pytest.mark.django_db
def test_checkpoints_without_the_log_key_are_an_error(production: Any) -> None:
    checkpoint_publish()
    key = Path(production.REPROGATE_LOG_KEY_PATH)
    key.unlink()  # the container was recreated without its keys volume

    found = keys_missing()

    assert _ids(found) == ["reprogate.E001"]
    assert isinstance(found[0], checks.Error)
    assert str(key) in found[0].msg
    assert "1 checkpoint(s)" in found[0].msg
    assert 'docs/operations.md, "Backup and restore"' in str(found[0].hint)


@pytest.mark.django_db
def test_the_deploy_check_is_registered_and_reads_the_database(
    production: Any,
) -> None:
    checkpoint_publish()
    Path(production.REPROGATE_LOG_KEY_PATH).unlink()

    deploy = checks.run_checks(tags=[TAG], include_deployment_checks=True)
    ordinary = checks.run_checks(tags=[TAG])  # no database named: not read
    migrate = checks.run_checks(tags=[TAG], databases=["default"])

    assert "reprogate.E001" in _ids(deploy)
    assert "reprogate.E001" not in _ids(ordinary)
    assert "reprogate.E001" in _ids(migrate)


@pytest.mark.django_db
def test_with_debug_on_a_missing_key_is_a_warning(production: Any) -> None:
    checkpoint_publish()
    Path(production.REPROGATE_LOG_KEY_PATH).unlink()
    production.DEBUG = True

    found = keys_missing()

    assert _ids(found) == ["reprogate.W011"]
    assert found[0].level == checks.WARNING


@pytest.mark.django_db
@pytest.mark.usefixtures("promoted")  # its certificate requested
def test_signed_reports_without_the_report_keys_are_errors(production: Any) -> None:
    certificate = Report.objects.get(kind=Report.Kind.CERTIFICATE)
    done = report_generate(report_id=certificate.pk)
    assert done is not None
    assert done.status == Report.Status.READY, done.error
    shutil.rmtree(production.REPROGATE_REPORT_KEYS_DIR)  # signer and statement key

    found = {str(message.id): message.msg for message in keys_missing()}

    assert sorted(found) == ["reprogate.E002", "reprogate.E003"]
    assert "signer.key.pem" in found["reprogate.E002"]
    assert "1 signed report(s)" in found["reprogate.E002"]
    assert production.REPROGATE_REPORT_STATEMENT_KEY_PATH in found["reprogate.E003"]


def test_an_open_key_file_is_a_warning(settings: Any) -> None:
    key = Path(settings.REPROGATE_LOG_KEY_PATH)
    key.parent.mkdir(parents=True)
    key.write_text("not even a key")
    key.chmod(0o644)

    found = key_files_exposed()

    assert _ids(found) == ["reprogate.W002"]
    assert f"chmod 600 {key}" == found[0].hint
    key.chmod(0o600)
    assert key_files_exposed() == []


def test_a_keys_directory_that_cannot_be_made_is_a_warning(
    settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    settings.REPROGATE_KEYS_DIR = tmp_path / "a-file" / "keys"

    found = key_files_exposed()

    assert _ids(found) == ["reprogate.W001"]
    assert "REPROGATE_KEYS_DIR" in found[0].msg


def test_a_keys_directory_still_to_be_made_is_fine(
    settings: Any, tmp_path: Path
) -> None:
    settings.REPROGATE_KEYS_DIR = tmp_path / "not" / "yet" / "keys"

    assert key_files_exposed() == []


@pytest.mark.parametrize("database", ["unmigrated", "absent", "absent-postgresql"])
def test_an_unmigrated_or_absent_database_says_nothing(
    base_env: dict[str, str], tmp_path: Path, database: str
) -> None:
    if database == "absent":
        base_env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'no' / 'such' / 'db'}"
    if database == "absent-postgresql":  # no such database on the server
        base_env["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{ABSENT}"
    # "unmigrated": the embedded default's SQLite file, made empty on connecting

    result = run(base_env, "manage.py", "check", "--deploy", f"--tag={TAG}")

    assert result.returncode == 0, result.stderr
    assert "reprogate." not in result.stdout + result.stderr


# --- manage.py backup_check (config.backup) ---------------------------------------


def _replace_key(path: Path) -> None:
    """Another installation's key in its place (a backup of the wrong machine)."""
    path.unlink()
    load_private_key(path, create=True)


@pytest.mark.django_db
def test_backup_check_finds_a_log_key_that_did_not_sign_the_checkpoint(
    settings: Any,
) -> None:
    checkpoint_publish()
    assert backup_check().problems == []

    _replace_key(Path(settings.REPROGATE_LOG_KEY_PATH))
    problems = backup_check().problems

    assert len(problems) == 1
    assert problems[0].startswith(
        f"the log key {settings.REPROGATE_LOG_KEY_PATH} did not sign checkpoint 0"
    )


@pytest.mark.django_db
@pytest.mark.usefixtures("promoted")
def test_backup_check_finds_report_keys_that_did_not_sign_the_report(
    settings: Any,
) -> None:
    certificate = Report.objects.get(kind=Report.Kind.CERTIFICATE)
    report_generate(report_id=certificate.pk)
    result = backup_check()
    assert result.problems == []
    assert any("signer signed report" in line for line in result.checked)

    _replace_key(Path(settings.REPROGATE_REPORT_STATEMENT_KEY_PATH))
    problems = backup_check().problems

    assert len(problems) == 1
    assert "does not verify report" in problems[0]
    assert str(certificate.public_id) in problems[0]


def test_backup_check_the_command_exits_1_on_a_mismatch(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    key = tmp_path / "var" / "keys" / "transparency-log.pem"
    base_env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    code = (
        "import django; django.setup()\n"
        "from artifacts.services.transparency import checkpoint_publish as p\n"
        "p()\n"
    )
    assert run(base_env, "manage.py", "migrate", "--no-input").returncode == 0
    assert run(base_env, "-c", code).returncode == 0
    assert run(base_env, "manage.py", "backup_check").returncode == 0
    _replace_key(key)

    result = run(base_env, "manage.py", "backup_check")

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"MISMATCH  the log key {key} did not sign checkpoint 0" in result.stdout
