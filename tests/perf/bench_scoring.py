"""Scoring page benchmark: prints figures, asserts nothing about timing.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rg_bench \\
        python -m tests.perf.bench_scoring [--bids 50] [--criteria 6] [--repeat 10]

Builds, in a throw-away test database (``test_<name>`` of ``DATABASE_URL``, or an
in-memory SQLite database when it is not set), an opened RFP with ``--bids``
vendors' bids, ``--criteria`` criteria, each bid's cost inputs, and
``--evaluators`` evaluators who submitted every score, plus one evaluator whose
draft scores every cell (the score sheet form, filled in). Then, with Django's
test client, it times the RFP's buyer-side pages: the evaluator's score sheet and
the bids' evidence it loads after it, the buyer's evaluation page (progress and
consensus), the comparison matrix, the TCO page, the bids list and the RFP's
audit trail, and prints per page the SQL queries, the median server time of
``--repeat`` requests and the response size.
Exit status 0, or non-zero only on an error (a page that does not answer 200).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

BENCH_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "DJANGO_SECRET_KEY": "insecure-key-for-the-benchmark-only",
    "DJANGO_DEBUG": "False",
    "DJANGO_SECURE_SSL_REDIRECT": "False",
    "DJANGO_LOG_LEVEL": "WARNING",
}


def _setup_django() -> Any:
    """Django set up on a fresh, migrated test database; returns its creation."""
    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic
    os.environ.setdefault("DATABASE_URL", "sqlite://:memory:")
    for key, value in BENCH_ENV.items():
        os.environ.setdefault(key, value)
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import override_settings

    # no setup_test_environment(): it instruments every template render (a signal
    # and a copy of the context each), which would be timed with the pages
    override_settings(
        ALLOWED_HOSTS=["testserver"],
        STORAGES={
            "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
            "staticfiles": {
                "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
            },
        },
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    ).enable()
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    return connection


def build(bids: int, criteria: int, evaluators: int) -> dict[str, Any]:
    """The tender (factories: state set directly, no services)."""
    from accounts.models import Organisation, Role
    from procurement.models import Rfp
    from tests.accounts.factories import (
        MembershipFactory,
        OrganisationFactory,
        UserFactory,
    )
    from tests.procurement.factories_evaluation import (
        CostModelInputFactory,
        evaluator_in,
        opened_rfp,
        score_all,
        vendor_orgs,
    )

    buyer_org = OrganisationFactory.create(
        slug="bench-buyer", kind=Organisation.Kind.BUYER
    )
    buyer = UserFactory.create(username="bench-buyer")
    MembershipFactory.create(user=buyer, organisation=buyer_org, role=Role.BUYER)
    names = [(f"Criterion {i + 1} of the tender", 1) for i in range(criteria)]
    names[0] = (names[0][0], 100 - (criteria - 1))
    rfp: Rfp = opened_rfp(buyer_org, vendor_orgs(bids), criteria=names)
    for bid in rfp.bids.all():
        CostModelInputFactory.create(bid=bid)
    for i in range(evaluators):
        score_all(rfp, evaluator_in(buyer_org, f"bench-eval-{i}"), 3 + i % 5)
    drafting = evaluator_in(buyer_org, "bench-drafting")
    score_all(rfp, drafting, 7, submitted=False)
    return {"rfp": rfp, "buyer": buyer, "drafting": drafting}


def measure(client: Any, url: str, repeat: int) -> tuple[int, float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)  # warm the caches
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}")
    times, cpu = [], []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.get(url)
            cpu.append(time.process_time() - c0)
            times.append(time.perf_counter() - t0)
    ms, cpu_ms = statistics.median(times) * 1000, statistics.median(cpu) * 1000
    return len(queries), ms, cpu_ms, len(response.content)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bids", type=int, default=50)
    parser.add_argument("--criteria", type=int, default=6)
    parser.add_argument("--evaluators", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--profile", metavar="FILE", help="a cProfile of one score sheet request"
    )
    args = parser.parse_args(argv)
    if min(args.bids, args.criteria, args.evaluators, args.repeat) < 1:
        parser.error("every count must be at least 1")
    connection = _setup_django()
    try:
        return _run(args, connection)
    finally:
        connection.creation.destroy_test_db(
            connection.settings_dict["NAME"], verbosity=0
        )


def _run(args: argparse.Namespace, connection: Any) -> int:
    import django
    from django.test import Client

    world = build(args.bids, args.criteria, args.evaluators)
    rfp = world["rfp"]
    pages = [
        ("score sheet (drafting evaluator)", "drafting", "evaluation/"),
        ("its evidence, loaded after it", "drafting", "evaluation/evidence/"),
        ("evaluation (buyer: consensus)", "buyer", "evaluation/"),
        ("comparison (buyer)", "buyer", "comparison/"),
        ("TCO (buyer)", "buyer", "tco/"),
        ("bids (buyer)", "buyer", "bids/"),
        ("RFP audit trail (buyer)", "buyer", "audit/"),
    ]
    database = connection.vendor
    if database == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            database += " " + cursor.fetchone()[0].split()[0]
    print(
        f"python {platform.python_version()}, django {django.get_version()}, "
        f"{database}, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{args.bids} bids x {args.criteria} criteria, {args.evaluators} evaluators "
        f"submitted + 1 drafting, median of {args.repeat}"
    )
    print(f"{'page':36} {'queries':>7} {'median ms':>10} {'CPU ms':>7} {'size kB':>8}")
    for label, who, suffix in pages:
        client = Client()
        client.force_login(world[who])
        url = f"/rfps/{rfp.public_id}/{suffix}"
        queries, ms, cpu_ms, size = measure(client, url, args.repeat)
        print(f"{label:36} {queries:7d} {ms:10.1f} {cpu_ms:7.1f} {size / 1000:8.1f}")
    if args.profile:
        import cProfile

        client = Client()
        client.force_login(world["drafting"])
        url = f"/rfps/{rfp.public_id}/evaluation/"
        cProfile.runctx("client.get(url)", globals(), locals(), args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
