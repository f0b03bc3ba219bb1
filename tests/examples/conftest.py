"""The example bundles, built and verified once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples.support import build_and_unpack


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """vendor -> the unpacked, verified bundle."""
    return build_and_unpack(tmp_path_factory.mktemp("bundles"))
