"""Page and API list benchmark: prints figures, asserts nothing about timing.

    python -m tests.perf.bench_pages [--vendors 50] [--rfps 22] [--bids 1002]
        [--scores 18000] [--bundles 505] [--bundle-files 2012] [--runs 5010]
        [--metrics-per-run 19] [--audit-events 50000] [--small-vendors 2]
        [--repeat 10] [--only 'benchmarks:*'] [--profile DIR]

Builds a throw-away database (``test_…`` of ``DATABASE_URL``: PostgreSQL, or an
in-memory SQLite database by default) with one of everything a route can name
(``tests/perf/large_install.py``: services, then ``bulk_create``), first at a small
scale (``--small-vendors`` vendors, every family in proportion), then grows it to
the large one (the defaults: the large installation). Every GET route of the URL
configuration (``django.urls.get_resolver()``; the admin and the lab hosts' runner
API excepted) gets its parameters from that world and is requested as the first
role allowed to see it (buyer, evaluator, vendor, lab operator, auditor,
anonymous); a route no role may GET (an action: POST only) is listed as skipped.
For each, at both scales: SQL queries of one request (``CaptureQueriesContext``),
the median server time of ``--repeat`` requests (``django.test.Client``, in this
process: the whole middleware stack, no network), the response's size (a streamed
one consumed to its end), and the longest list it holds (an API's longest JSON
array, a page's table rows).

Flags: ``queries+`` (more queries at the large scale), ``>100ms`` (large median),
``>500kB`` (not a download), ``unpaged`` (a list that grew past the page size, a
bare JSON array, or a ``results`` list without ``next``), ``cap`` (an API list that
answers ``?limit=100000`` with more than the page-size cap), ``not streamed``
(an export or download sent whole). Exit status 0, or 1 on an error (a route that
answers 5xx, or the world not built)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Final

SKIPPED: Final = {
    "admin*": "the admin: staff only, no persona is staff",
    "runner-*": "the runner API: a lab host's token only",
    "healthz": "a probe of the database, broker and storage, not a page",
    "metrics": "Prometheus' scrape, not a page",
}
ROLES: Final = ("buyer", "evaluator", "vendor", "labops", "auditor", "anonymous")
# Routes that also answer for the sealed tender's objects (its documents, receipts).
SEALED: Final = {
    "rfp_id": "sealed_rfp_id",
    "bid_id": "sealed_bid_id",
    "bundle_id": "sealed_bundle_id",
}
SLOW_MS: Final = 100.0
HEADING_ROWS: Final = 5
BIG_BYTES: Final = 500_000
TIME_BUDGET_S: Final = 10.0  # per route and scale: fewer repeats past it (at least 3)
EXPORTS: Final = re.compile(r"csv|export|package|download|evidence|json|pdf|document")


@dataclass(frozen=True)
class Target:
    key: str
    url: str
    role: str
    is_api: bool


@dataclass
class Figure:
    status: int
    queries: int
    median_ms: float
    size: int
    items: int  # the longest list: JSON array length, or table rows
    download: bool
    streamed: bool
    bare_list: bool = False
    no_next: bool = False
    capped_at: int | None = None  # what ``?limit=100000`` returned, for API lists
    repeats: int = 0


@dataclass
class Result:
    targets: list[Target]
    skipped: list[tuple[str, str]]
    errors: list[str] = field(default_factory=list)


# --- the routes ------------------------------------------------------------------


def _skip_reason(key: str) -> str:
    for pattern, why in SKIPPED.items():
        if fnmatchcase(key, pattern):
            return why
    return ""


def _ids(key: str, ids: dict[str, str], overlay: dict[str, str]) -> dict[str, str]:
    from tests.security import policy

    filled = dict(ids)
    for (route_key, param), source in policy.PARAMETERS.items():
        if route_key == key:
            filled[param] = ids[source]
    for param, source in overlay.items():
        filled[param] = ids[source]
    return filled


def _urls(route: Any, ids: dict[str, str]) -> Iterable[str]:
    from tests.security import policy

    query = policy.QUERIES.get(route.key, "")
    yield route.url(_ids(route.key, ids, {}), query)
    if set(SEALED) & set(route.params):
        yield route.url(_ids(route.key, ids, SEALED), query)


def clients_for(users: dict[str, Any]) -> dict[str, Any]:
    from django.test import Client

    clients = {"anonymous": Client(raise_request_exception=False)}
    for role, user in users.items():
        client = Client(raise_request_exception=False)
        client.force_login(user)
        clients[role] = client
    return clients


def select(ids: dict[str, str], clients: dict[str, Any], only: str = "*") -> Result:
    """Each GET route with the first role that gets a 200 for it."""
    from tests.security.walk import routes

    result = Result(targets=[], skipped=[])
    for route in routes():
        if not fnmatchcase(route.key, only):
            continue
        why = _skip_reason(route.key)
        if why:
            result.skipped.append((route.key, why))
            continue
        statuses: list[int] = []
        found = _first_allowed(route, ids, clients, statuses, result.errors)
        if found:
            result.targets.append(found)
        else:
            shown = ", ".join(str(s) for s in sorted(set(statuses)))
            why = "an action (GET: 405)" if 405 in statuses else "no role gets a 200"
            result.skipped.append((route.key, f"{why} ({shown})"))
    return result


def _first_allowed(
    route: Any,
    ids: dict[str, str],
    clients: dict[str, Any],
    statuses: list[int],
    errors: list[str],
) -> Target | None:
    for url in _urls(route, ids):
        for role in ROLES:
            response = clients[role].get(url)
            _consume(response)
            statuses.append(response.status_code)
            if response.status_code >= 500:
                errors.append(f"GET {url} as {role}: {response.status_code}")
            if response.status_code == 200:
                return Target(route.key, url, role, route.is_api)
            if response.status_code == 405:  # an action: POST only, for everyone
                return None
    return None


# --- one measurement ----------------------------------------------------------------


def _consume(response: Any) -> bytes:
    """The body. The test client closes the response itself (a streamed one once
    its content is read): closing it again would send ``request_finished`` with
    Django's ``close_old_connections`` listening, which closes the database
    connection (in a test's transaction on PostgreSQL, for good)."""
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def _longest(value: Any) -> int:
    if isinstance(value, list):
        return max([len(value), *(_longest(v) for v in value[:50])])
    if isinstance(value, dict):
        return max([0, *(_longest(v) for v in value.values())])
    return 0


def _is_download(response: Any) -> bool:
    kind = response.get("Content-Type", "")
    attachment = "attachment" in response.get("Content-Disposition", "")
    return attachment or not kind.startswith(("text/html", "application/json"))


def measure(target: Target, client: Any, repeat: int) -> Figure:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = client.get(target.url)
        data = _consume(response)
    figure = Figure(
        status=response.status_code,
        queries=len(captured.captured_queries),
        median_ms=0.0,
        size=len(data),
        items=0,
        download=_is_download(response),
        streamed=bool(getattr(response, "streaming", False)),
    )
    _shape(figure, target, client, data, cap=repeat > 0)
    times: list[float] = [0.0] if repeat == 0 else []  # 0: query counts only
    while len(times) < repeat:
        started = time.perf_counter()
        _consume(client.get(target.url))
        times.append(time.perf_counter() - started)
        if sum(times) > TIME_BUDGET_S and len(times) >= min(3, repeat):
            break
    figure.median_ms = statistics.median(times) * 1000
    figure.repeats = repeat and len(times)
    return figure


def _shape(
    figure: Figure, target: Target, client: Any, data: bytes, *, cap: bool
) -> None:
    if figure.download:
        return
    if not target.is_api:
        figure.items = data.count(b"<tr")
        return
    try:
        body = json.loads(data)
    except ValueError:
        return
    figure.items = _longest(body)
    figure.bare_list = isinstance(body, list)
    if isinstance(body, dict) and "results" in body:
        figure.no_next = "next" not in body
    if cap and isinstance(body, dict) and "results" in body:
        joiner = "&" if "?" in target.url else "?"
        wide = client.get(f"{target.url}{joiner}limit=100000")
        wide_body = json.loads(_consume(wide)) if wide.status_code == 200 else {}
        figure.capped_at = len(wide_body.get("results", []))


def measure_all(
    targets: list[Target], clients: dict[str, Any], repeat: int
) -> dict[str, Figure]:
    return {t.key: measure(t, clients[t.role], repeat) for t in targets}


# --- the table ----------------------------------------------------------------------


def flags(target: Target, small: Figure, large: Figure) -> list[str]:
    from accounts.lib.paging import MAX_PAGE_SIZE, PAGE_SIZE

    found = []
    if large.queries > small.queries:
        found.append("queries+")
    if large.median_ms > SLOW_MS:
        found.append(">100ms")
    if large.size > BIG_BYTES and not large.download:
        found.append(">500kB")
    # A paged table shows PAGE_SIZE rows and a few more (headings, totals).
    rows = PAGE_SIZE + (0 if target.is_api else HEADING_ROWS)
    grew = large.items > small.items and large.items > rows
    if grew or large.bare_list or large.no_next or large.items > MAX_PAGE_SIZE:
        found.append("unpaged")
    if large.capped_at is not None and large.capped_at > MAX_PAGE_SIZE:
        found.append("cap")
    if large.download and not large.streamed and EXPORTS.search(target.key):
        found.append("not streamed")
    if large.status != 200 or small.status != 200:
        found.append(f"status {small.status}/{large.status}")
    return found


def table(
    targets: list[Target], small: dict[str, Figure], large: dict[str, Figure]
) -> list[str]:
    head = (
        f"{'route':<44} {'role':<9} {'queries':>9} {'median ms':>15} "
        f"{'size kB':>15} {'items':>11}  flags"
    )
    lines = [head, "-" * len(head)]
    for t in targets:
        s, big = small[t.key], large[t.key]
        lines.append(
            f"{t.key:<44} {t.role:<9} {s.queries:>4} {big.queries:>4} "
            f"{s.median_ms:>7.1f} {big.median_ms:>7.1f} "
            f"{s.size / 1000:>7.1f} {big.size / 1000:>7.1f} "
            f"{s.items:>5} {big.items:>5}  {' '.join(flags(t, s, big))}"
        )
    return lines


def growing(
    targets: list[Target], small: dict[str, Figure], large: dict[str, Figure]
) -> list[str]:
    """The routes whose query count grows with the data, with both counts."""
    return [
        f"{t.key} ({small[t.key].queries} -> {large[t.key].queries})"
        for t in targets
        if large[t.key].queries != small[t.key].queries
    ]


# --- the script ---------------------------------------------------------------------

ENV: Final = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DATABASE_URL": "sqlite://:memory:",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "ERROR",
}


def _django(directory: Path) -> None:
    import warnings

    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic
    for key, value in ENV.items():
        os.environ.setdefault(key, value)
    # Tasks the services enqueue go to a broker nobody reads, deleted at the end.
    os.environ["CELERY_BROKER_URL"] = f"sqla+sqlite:///{directory / 'broker.sqlite3'}"
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)  # each refused request logs a warning


def _setup(directory: Path) -> Any:
    """A fresh test database, storage and keys in ``directory``; returns what
    ``teardown_databases`` needs."""
    from django.db import connection
    from django.test.utils import (
        override_settings,
        setup_databases,
        setup_test_environment,
    )

    setup_test_environment()
    override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
            "staticfiles": {
                "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
            },
        },
        REPROGATE_LOG_KEY_PATH=str(directory / "log-key" / "log.pem"),
        REPROGATE_REPORT_KEYS_DIR=str(directory / "report-keys"),
        REPROGATE_REPORT_STATEMENT_KEY_PATH=str(
            directory / "report-keys" / "statement.pem"
        ),
        REPROGATE_REPORT_SIGNER="",
        REPROGATE_REPORT_TSA_URL="",
    ).enable()
    test = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor != "sqlite":  # never pytest-django's test_<name>
        test["NAME"] = f"{connection.settings_dict['NAME']}_bench_pages"
    return setup_databases(verbosity=0, interactive=False)


def _analyze() -> None:
    """On PostgreSQL, ``VACUUM ANALYZE`` once the data is in: the planner's
    statistics as autovacuum would leave them, and no autovacuum of the bulk
    inserts running beside the first routes measured."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def _versions() -> str:
    import django
    from django.db import connection

    server = ""
    if connection.vendor == "postgresql":
        version = int(getattr(connection, "pg_version", 0))
        server = f" {version // 10000}.{version % 10000}"
    else:
        import sqlite3

        server = f" {sqlite3.sqlite_version}"
    return (
        f"python {platform.python_version()}, django {django.get_version()}, "
        f"{connection.vendor}{server}, {os.cpu_count()} CPUs, "
        f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )


def _parser() -> argparse.ArgumentParser:
    from tests.perf.large_install import Scale

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    large = Scale()
    for name, value in vars(large).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=value)
    parser.add_argument("--small-vendors", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", default="*", help="fnmatch on the route names")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="write a cProfile (pstats) of one request of each route at the large "
        "scale into this folder, one file a route",
    )
    return parser


def profile_all(targets: list[Target], clients: dict[str, Any], folder: Path) -> None:
    """One profiled request of each target, ``folder/<route>.prof``."""
    import cProfile

    folder.mkdir(parents=True, exist_ok=True)
    for target in targets:
        profiler = cProfile.Profile()
        profiler.runcall(_get, clients[target.role], target.url)
        profiler.dump_stats(folder / f"{target.key.replace(':', '-')}.prof")


def _get(client: Any, url: str) -> bytes:
    return _consume(client.get(url))


def run(args: argparse.Namespace, directory: Path) -> int:
    from tests.perf.large_install import Scale, build_base, counts, grow

    names = vars(Scale()).keys()
    large_scale = Scale(**{n: getattr(args, n) for n in names})
    started = time.perf_counter()
    base = build_base(directory / "world")
    grow(base, Scale.small(args.small_vendors))
    _analyze()
    print(_versions())
    print(f"small scale: {counts()} (built in {time.perf_counter() - started:.0f} s)")
    clients = clients_for(base.users)
    selected = select(base.world.ids, clients, args.only)
    small = measure_all(selected.targets, clients, args.repeat)
    started = time.perf_counter()
    grow(base, large_scale)
    _analyze()
    print(f"large scale: {counts()} (grown in {time.perf_counter() - started:.0f} s)")
    large = measure_all(selected.targets, clients, args.repeat)
    print(f"repeat {args.repeat} (fewer past {TIME_BUDGET_S:.0f} s a route); "
          f"queries, median ms, size kB, items: small then large")  # fmt: skip
    print("\n".join(table(selected.targets, small, large)))
    if args.profile is not None:
        profile_all(selected.targets, clients, args.profile)
        print(f"profiles of one request a route: {args.profile}/")
    families = dict.fromkeys(SKIPPED.values(), 0)
    for key, why in selected.skipped:
        if why in families:
            families[why] += 1
        else:
            print(f"skipped {key}: {why}")
    for why, count in families.items():
        print(f"skipped {count} routes: {why}")
    grew = growing(selected.targets, small, large)
    print(f"query counts equal at both scales: {'yes' if not grew else 'NO'}")
    for line in grew:
        print(f"  grows: {line}")
    errors = selected.errors + [
        f"{t.key}: {large[t.key].status}"
        for t in selected.targets
        if large[t.key].status >= 500 or small[t.key].status >= 500
    ]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as name:
        directory = Path(name)
        _django(directory)
        args = _parser().parse_args(argv)
        old = _setup(directory)
        from django.test.utils import teardown_databases

        try:
            return run(args, directory)
        finally:
            teardown_databases(old, verbosity=0)


if __name__ == "__main__":
    sys.exit(main())
