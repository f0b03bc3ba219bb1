"""The log's key in the test's temporary folder, a fixed origin, and ``append``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from artifacts.models import LogEntry
from artifacts.services.transparency import log_append

ORIGIN = "reprogate.test/log"


@pytest.fixture(autouse=True)
def _log_settings(settings: Any, tmp_path: Path) -> None:
    settings.REPROGATE_LOG_KEY_PATH = str(tmp_path / "keys" / "log.pem")
    settings.REPROGATE_LOG_ORIGIN = ORIGIN


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    return tmp_path / "keys" / "log.pem"


def append_leaves(*leaves: bytes) -> list[LogEntry]:
    """Append each leaf in a transaction of its own (as deposits do)."""
    entries = []
    for leaf in leaves:
        with transaction.atomic():
            entries.append(log_append(leaf))
    return entries


@pytest.fixture
def append() -> Callable[..., list[LogEntry]]:
    return append_leaves


def numbered(count: int, start: int = 0) -> list[bytes]:
    return [f'{{"n":{n}}}'.encode() for n in range(start, start + count)]
