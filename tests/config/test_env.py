"""The strict environment helpers: absent means default, malformed stops start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_secret, env_str, env_url

_BROKERS = frozenset({"filesystem", "redis"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("True", True), ("yes", True), ("1", True), ("off", False), ("FALSE", False)],
)
def test_env_bool_accepts_the_usual_spellings(
    monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool
) -> None:
    monkeypatch.setenv("RG_TEST_FLAG", raw)

    assert env_bool("RG_TEST_FLAG", default=not expected) is expected


@pytest.mark.parametrize("raw", ["maybe", "tru", "2", " true"])
def test_env_bool_rejects_other_values_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("RG_TEST_FLAG", raw)

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_FLAG=.*not a boolean"):
        env_bool("RG_TEST_FLAG", default=False)


@pytest.mark.parametrize("raw", [None, ""])
def test_env_bool_falls_back_to_the_default_when_unset_or_empty(
    monkeypatch: pytest.MonkeyPatch, raw: str | None
) -> None:
    monkeypatch.delenv("RG_TEST_FLAG", raising=False)
    if raw is not None:
        monkeypatch.setenv("RG_TEST_FLAG", raw)

    assert env_bool("RG_TEST_FLAG", default=True) is True


def test_env_int_parses_an_integer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RG_TEST_COUNT", "42")

    assert env_int("RG_TEST_COUNT", default=1) == 42


def test_env_int_uses_the_default_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_COUNT", raising=False)

    assert env_int("RG_TEST_COUNT", default=7) == 7


def test_env_int_rejects_a_non_integer_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_COUNT", "1.5")

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_COUNT='1.5' is not an"):
        env_int("RG_TEST_COUNT", default=1)


def test_env_int_rejects_a_value_below_the_minimum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_COUNT", "0")

    with pytest.raises(
        ImproperlyConfigured, match=r"^RG_TEST_COUNT=0 must be at least"
    ):
        env_int("RG_TEST_COUNT", default=5, minimum=1)


def test_env_list_splits_on_commas_and_drops_blanks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_HOSTS", " a.example.com, ,b.example.com,")

    assert env_list("RG_TEST_HOSTS", []) == ["a.example.com", "b.example.com"]


def test_env_str_treats_an_empty_value_as_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RG_TEST_NAME", "")

    assert env_str("RG_TEST_NAME", "fallback") == "fallback"


def test_env_secret_reads_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_SECRET_FILE", raising=False)
    monkeypatch.setenv("RG_TEST_SECRET", "s3cret")

    assert env_secret("RG_TEST_SECRET", default=None) == "s3cret"


def test_env_secret_reads_the_file_named_by_name_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret_file = tmp_path / "secret"
    secret_file.write_text("from-the-file\n", encoding="utf-8")
    monkeypatch.delenv("RG_TEST_SECRET", raising=False)
    monkeypatch.setenv("RG_TEST_SECRET_FILE", str(secret_file))

    assert env_secret("RG_TEST_SECRET", default=None) == "from-the-file"


def test_env_secret_rejects_a_missing_file_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "absent"
    monkeypatch.setenv("RG_TEST_SECRET_FILE", str(missing))

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_SECRET_FILE=.*absent"):
        env_secret("RG_TEST_SECRET", default="unused")


def test_env_secret_without_a_default_requires_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RG_TEST_SECRET", raising=False)
    monkeypatch.delenv("RG_TEST_SECRET_FILE", raising=False)

    with pytest.raises(
        ImproperlyConfigured, match=r"^RG_TEST_SECRET is required .*RG_TEST_SECRET_FILE"
    ):
        env_secret("RG_TEST_SECRET", default=None)


def test_env_secret_falls_back_to_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_SECRET", raising=False)
    monkeypatch.delenv("RG_TEST_SECRET_FILE", raising=False)

    assert env_secret("RG_TEST_SECRET", default="dev") == "dev"


@pytest.mark.parametrize(
    "raw", ["redis://127.0.0.1:6379/0", "filesystem://", "redis://h/1?x=y"]
)
def test_env_url_accepts_an_allowed_scheme(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("RG_TEST_URL", raw)

    assert env_url("RG_TEST_URL", "filesystem://", schemes=_BROKERS) == raw


@pytest.mark.parametrize("raw", ["ftp://x", "nonsense", "redis:/127.0.0.1", "redis://"])
def test_env_url_rejects_other_values_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("RG_TEST_URL", raw)

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_URL=.*filesystem, redis"):
        env_url("RG_TEST_URL", "filesystem://", schemes=_BROKERS)


def test_env_url_checks_the_default_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RG_TEST_URL", raising=False)

    with pytest.raises(ImproperlyConfigured, match=r"^RG_TEST_URL='ftp://x'"):
        env_url("RG_TEST_URL", "ftp://x", schemes=_BROKERS)
