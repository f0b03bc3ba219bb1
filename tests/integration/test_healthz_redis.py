"""/healthz against a real Redis broker (the production set-up)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from config.celery import app as celery_app

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_healthz_reports_a_reachable_redis_broker(
    client: Client,
    redis_url: str,
    settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setattr(celery_app.conf, "broker_url", redis_url)

    response = client.get("/healthz")

    assert response.status_code == 200
    broker = response.json()["checks"]["broker"]
    assert (broker["ok"], broker["backend"]) == (True, "redis")
