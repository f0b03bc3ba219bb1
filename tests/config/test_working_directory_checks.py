"""The start-up check of the working directories the settings name: a spool or
runner directory that is missing or read-only would fail every upload or run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config.checks import working_directories_missing


def _ids(found: list[Any]) -> list[str]:
    return sorted(str(message.id) for message in found)


@pytest.fixture
def production(settings: Any) -> Any:
    settings.DEBUG = False
    settings.REPROGATE_EMBEDDED = False
    settings.BUNDLE_SPOOL_DIR = settings.FILE_UPLOAD_TEMP_DIR = ""
    settings.RUNNER_WORK_DIR = ""
    return settings


def test_unset_directories_say_nothing(production: Any) -> None:
    assert working_directories_missing() == []


def test_existing_writable_directories_say_nothing(
    production: Any, tmp_path: Path
) -> None:
    production.BUNDLE_SPOOL_DIR = str(tmp_path)
    production.RUNNER_WORK_DIR = str(tmp_path)

    assert working_directories_missing() == []


@pytest.mark.parametrize(
    "name", ["BUNDLE_SPOOL_DIR", "FILE_UPLOAD_TEMP_DIR", "RUNNER_WORK_DIR"]
)
def test_a_missing_directory_is_an_error_naming_it(
    production: Any, tmp_path: Path, name: str
) -> None:
    missing = tmp_path / "not-made"
    setattr(production, name, str(missing))

    found = working_directories_missing()

    assert _ids(found) == ["reprogate.E004"]
    assert f"{name}={missing} does not exist" in found[0].msg
    assert f"mkdir -p {missing}" in found[0].hint


def test_a_file_where_a_directory_should_be_is_an_error(
    production: Any, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    production.RUNNER_WORK_DIR = str(tmp_path / "a-file")

    assert _ids(working_directories_missing()) == ["reprogate.E004"]


def test_in_the_embedded_default_it_is_a_warning(
    production: Any, tmp_path: Path
) -> None:
    production.REPROGATE_EMBEDDED = True
    production.BUNDLE_SPOOL_DIR = str(tmp_path / "not-made")

    assert _ids(working_directories_missing()) == ["reprogate.W014"]
