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


@pytest.fixture(scope="module")
def redis_url(own_redis: OwnRedis) -> str:
    """The broker of the module's workers: its own Redis (the runner tests'
    fixtures the fault modules reuse ask for ``redis_url``)."""
    return own_redis.url
