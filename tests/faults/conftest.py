"""Fixtures of the fault tests: a Redis server of each module's own, which a test
may kill and start again (never the shared one on 6379)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.cluster import OwnRedis


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    if server.server is not None:
        server.server.kill()
