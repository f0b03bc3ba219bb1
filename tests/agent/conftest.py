from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.fake_server import FakeServer, serve


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    yield from serve()
