"""Integration tests need Redis on 127.0.0.1:6379; database 15 is theirs, 13 on
PostgreSQL (CI runs the SQLite and PostgreSQL passes side by side).

Without Redis they skip, except on CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import os

import pytest
import redis

ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
REDIS_URL = f"redis://127.0.0.1:6379/{13 if ON_POSTGRES else 15}"


@pytest.fixture(scope="session")
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        reason = f"Redis is not reachable at {REDIS_URL}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return REDIS_URL
