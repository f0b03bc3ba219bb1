"""A worker that renders reports warms the renderers up as each of its processes
starts (Chromium for the charts, WeasyPrint's fonts) in a background thread; a
worker without Chromium still starts, its warm-up says why, and a chart fails at
once instead of waiting for a Chromium that never comes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from celery import current_app

from gates import tasks
from gates.lib import report_charts
from gates.lib.report_charts import ChartError, figures_svg
from gates.services import report_pdf
from gates.services.report_pdf import renderers_warm_up


def test_the_warm_up_starts_chromium_and_lays_out_a_page(chromium: None) -> None:
    report_charts.charts_stop()

    outcome = renderers_warm_up()

    assert isinstance(outcome["charts"], float), outcome
    assert isinstance(outcome["pdf"], float), outcome
    assert report_charts._running  # kept for the first report's charts


def test_without_chromium_the_warm_up_says_why_and_a_chart_fails_at_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    report_charts.charts_stop()
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    monkeypatch.setenv("PATH", "/nonexistent")

    outcome = renderers_warm_up()

    assert "no Chromium found" in str(outcome["charts"])
    assert isinstance(outcome["pdf"], float)  # WeasyPrint warmed up all the same
    assert "report charts warm-up failed" in caplog.text
    with pytest.raises(ChartError, match="no Chromium found"):
        figures_svg([{"data": [{"type": "bar", "y": [1]}]}])  # was: waited for ever
    assert not report_charts._running


def _started(monkeypatch: pytest.MonkeyPatch, queues: dict[str, Any]) -> list[str]:
    started: list[str] = []
    monkeypatch.setattr(report_pdf, "renderers_warm_up", lambda: started.append("x"))
    monkeypatch.setattr(
        type(current_app.amqp.queues), "consume_from", property(lambda self: queues)
    )
    before = set(threading.enumerate())
    tasks.report_renderers_warm_up_received()
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=10)
    return started


def test_a_default_queue_worker_process_warms_up_in_the_background(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _started(monkeypatch, {"celery": object()}) == ["x"]


def test_a_lab_pool_worker_or_the_setting_off_does_not(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    assert _started(monkeypatch, {"pool.gpu-a": object()}) == []

    settings.REPROGATE_REPORT_WARM_UP = False
    assert _started(monkeypatch, {"celery": object()}) == []
