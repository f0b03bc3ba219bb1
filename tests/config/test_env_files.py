"""Secrets from files (``NAME_FILE``): the file's content less one trailing newline
is the value; both ``NAME`` and ``NAME_FILE`` set, an unreadable, binary or huge
file are errors naming the variable and never showing the value; a URL's password
is never shown. The database and broker URLs reach the settings from their files."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import EXIT_MISCONFIGURED, env_secret, env_url
from tests.config.test_settings_declared import base_env as base_env
from tests.config.test_settings_declared import printed, run

NAME = "RG_TEST_FILE_SECRET"


@pytest.fixture
def secret_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A file NAME_FILE names; NAME itself unset."""
    path = tmp_path / "secret"
    monkeypatch.delenv(NAME, raising=False)
    monkeypatch.setenv(f"{NAME}_FILE", str(path))
    return path


@pytest.mark.parametrize(
    ("content", "value"),
    [
        ("s3cret\n", "s3cret"),
        ("s3cret\r\n", "s3cret"),
        ("s3cret", "s3cret"),
        ("s3cret\n\n", "s3cret\n"),  # only one newline is the file's
        ("  spaced out \n", "  spaced out "),  # other whitespace is the secret's
    ],
)
def test_one_trailing_newline_is_stripped(
    secret_file: Path, content: str, value: str
) -> None:
    secret_file.write_bytes(content.encode())

    assert env_secret(NAME, default=None) == value


def test_both_set_is_an_error_that_shows_neither_value(
    secret_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_file.write_text("from-the-file\n", encoding="utf-8")
    monkeypatch.setenv(NAME, "from-the-variable")

    with pytest.raises(ImproperlyConfigured) as raised:
        env_secret(NAME, default="unused")

    message = str(raised.value)
    assert message.startswith(f"{NAME} and {NAME}_FILE are both set")
    assert "from-the" not in message


def test_an_unreadable_file_names_the_variable(secret_file: Path) -> None:
    secret_file.mkdir()  # a directory cannot be read as a file, even by root

    with pytest.raises(ImproperlyConfigured, match=rf"^{NAME}_FILE=.*cannot be read"):
        env_secret(NAME, default=None)


def test_a_binary_file_is_refused_without_its_bytes(secret_file: Path) -> None:
    secret_file.write_bytes(b"\xff\xfe-hunter2")

    with pytest.raises(ImproperlyConfigured, match="not UTF-8") as raised:
        env_secret(NAME, default=None)

    assert "hunter2" not in str(raised.value)


def test_a_huge_file_is_not_a_secret(secret_file: Path) -> None:
    secret_file.write_text("x" * 100_000, encoding="utf-8")

    with pytest.raises(ImproperlyConfigured, match="is not a secret file"):
        env_secret(NAME, default=None)


def test_an_empty_file_counts_as_unset(secret_file: Path) -> None:
    secret_file.write_text("\n", encoding="utf-8")

    assert env_secret(NAME, default="the default") == "the default"
    with pytest.raises(ImproperlyConfigured, match=f"^{NAME} is required"):
        env_secret(NAME, default=None)


def test_a_malformed_url_never_shows_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_URL", "mysql://app:hunter2@db:3306/app")

    with pytest.raises(ImproperlyConfigured) as raised:
        env_url("RG_TEST_URL", "", schemes=frozenset({"postgres"}))

    assert "'mysql://app:***@db:3306/app'" in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_the_database_and_broker_urls_are_read_from_their_files(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    database, broker = tmp_path / "database_url", tmp_path / "broker_url"
    database.write_text(f"sqlite:///{tmp_path / 'from-file.sqlite3'}\n")
    broker.write_text("redis://:hunter2@127.0.0.1:6379/15\n")
    base_env.update(DATABASE_URL_FILE=str(database), CELERY_BROKER_URL_FILE=str(broker))

    got = printed(
        base_env,
        "(lambda s: (str(s.DATABASES['default']['NAME']), s.CELERY_BROKER_URL))"
        "(__import__('django.conf').conf.settings)",
    )

    assert got == repr((str(tmp_path / "from-file.sqlite3"), broker.read_text()[:-1]))


def test_a_broker_url_file_with_a_bad_url_stops_start_up_unshown(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    broker = tmp_path / "broker_url"
    broker.write_text("ftp://user:hunter2@example.com/\n")
    base_env["CELERY_BROKER_URL_FILE"] = str(broker)

    result = run(base_env, "manage.py", "check")

    assert result.returncode == EXIT_MISCONFIGURED
    assert "ReproGate: CELERY_BROKER_URL='ftp://user:***@example.com/'" in (
        result.stderr
    )
    assert "hunter2" not in result.stderr + result.stdout


def test_the_secret_key_and_its_file_both_set_stop_start_up(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    key = tmp_path / "secret-key"
    key.write_text("another-insecure-key-for-the-test-suite-only\n")
    base_env["DJANGO_SECRET_KEY_FILE"] = str(key)  # DJANGO_SECRET_KEY is set too

    result = run(base_env, "manage.py", "check")

    assert result.returncode == EXIT_MISCONFIGURED
    assert "DJANGO_SECRET_KEY and DJANGO_SECRET_KEY_FILE are both set" in result.stderr
    assert "insecure-key" not in result.stderr
