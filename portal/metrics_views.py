"""``GET /metrics``: ``portal.metrics``' figures in Prometheus' text format.

Open without logging in to the addresses and networks in
``REPROGATE_METRICS_ALLOWED`` (default: this machine), or to whoever sends
``Authorization: Bearer <REPROGATE_METRICS_TOKEN>`` when a token is set. A wrong
or unusable credential is 403; anyone else gets 404, as if there were no page.

A request that came through a proxy (``X-Forwarded-For``, ``Forwarded`` or
``X-Real-IP``) is judged by the client address the trusted proxies vouch for
(``REPROGATE_TRUSTED_PROXIES``, ``accounts.services.throttle.client_address``); through
a
proxy that is not trusted, the client is unknown and only the token opens: an
nginx on this machine must not turn every visitor into a loopback address.

The text is written by ``prometheus_client`` from a registry made for each
request: the figures come from the database, not from the process, so no
process-wide state (and no multiprocess mode under gunicorn) is involved, and
its parser reads back what the tests assert.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from accounts.services.throttle import address_within, client_address
from portal.metrics import Figures, metrics_figures

PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def _scraper_address(request: HttpRequest) -> str | None:
    """The client's address, None when an untrusted proxy hides it."""
    remote = request.META.get("REMOTE_ADDR", "")
    proxied = any(request.META.get(header) for header in PROXY_HEADERS)
    if proxied and not address_within(remote, settings.REPROGATE_TRUSTED_PROXIES):
        return None
    return client_address(request)


def metrics_refusal(request: HttpRequest) -> int | None:
    """None if ``request`` may read the metrics, else the status to refuse it."""
    authorization = request.headers.get("Authorization")
    if authorization is not None:
        scheme, _, presented = authorization.partition(" ")
        expected = settings.REPROGATE_METRICS_TOKEN
        ok = bool(expected) and scheme.lower() == "bearer"
        matches = hmac.compare_digest(
            presented.strip().encode("utf-8", "surrogateescape"),
            expected.encode("utf-8"),
        )
        return None if ok and matches else 403
    address = _scraper_address(request)
    if address is not None and address_within(
        address, settings.REPROGATE_METRICS_ALLOWED
    ):
        return None
    return 404


class FiguresCollector(Collector):
    def __init__(self, figures: Figures) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        f = self.figures
        yield GaugeMetricFamily("reprogate_up", "The app answers.", value=1)
        runs = GaugeMetricFamily(
            "reprogate_runs",
            "Benchmark runs by pool and state.",
            labels=["pool", "state"],
        )
        for (pool, state), n in f.runs.items():
            runs.add_metric([pool, state], n)
        yield runs
        queue = GaugeMetricFamily(
            "reprogate_queue_depth", "Runs queued on each pool.", labels=["pool"]
        )
        for pool, n in f.queue_depth.items():
            queue.add_metric([pool], n)
        yield queue
        hosts = GaugeMetricFamily(
            "reprogate_hosts",
            "Lab hosts by pool and status (online, lost, offline).",
            labels=["pool", "status"],
        )
        for (pool, status), n in f.hosts.items():
            hosts.add_metric([pool, status], n)
        yield hosts
        yield CounterMetricFamily(
            "reprogate_ingest_bytes", "Bytes of accepted bundles.", value=f.ingest_bytes
        )
        bundles = GaugeMetricFamily(
            "reprogate_bundles", "Uploaded bundles by status.", labels=["status"]
        )
        for status, n in f.ingest_bundles.items():
            bundles.add_metric([status], n)
        yield bundles
        yield from self._fixity()

    def _fixity(self) -> Iterator[Metric]:
        fixity = self.figures.fixity
        if fixity is None:  # never checked: no sample, so "absent()" alerts
            return
        findings = GaugeMetricFamily(
            "reprogate_fixity_findings",
            "Findings of the latest escrow fixity run, by source (blob, row, log).",
            labels=["source"],
        )
        for source, n in fixity.findings.items():
            findings.add_metric([source], n)
        yield findings
        yield GaugeMetricFamily(
            "reprogate_fixity_last_run_timestamp_seconds",
            "When the latest escrow fixity run finished (Unix time).",
            value=fixity.finished_at.timestamp(),
        )


def metrics_text(figures: Figures) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FiguresCollector(figures))
    return generate_latest(registry)


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = metrics_refusal(request)
    if refusal is not None:
        return HttpResponse(
            "Not found.\n" if refusal == 404 else "Forbidden.\n",
            status=refusal,
            content_type="text/plain; charset=utf-8",
        )
    body = metrics_text(metrics_figures())
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
