"""The authorization matrix, from the URL configuration.

Every route (pages, the API, the admin) is requested as every persona of
``tests/conftest.py`` and anonymously, its parameters filled with the objects of
an organisation none of them belongs to (``world.foreign_world``): a route the
policy (``policy.py``) says denies must refuse, and no response may show the
other organisation's distinctive strings. Unsafe requests (empty bodies) must
change nothing. Before opening, no route shows a sealed tender's bid contents to
anyone of the buyer's side (nor to anybody else). A route without a policy entry
fails by its name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from accounts.models import AuditEvent, Organisation, Role
from tests.accounts.factories import MembershipFactory, UserFactory
from tests.security import policy
from tests.security.walk import (
    Route,
    body,
    changed,
    fingerprint,
    routes,
    target_rows,
)
from tests.security.world import World, foreign_world, sealed_world

PERSONAS = (
    "buyer",
    "evaluator",
    "vendor_a",
    "vendor_b",
    "labops",
    "auditor",
    "outsider",
)
REFUSED = frozenset({401, 403, 404, 405})
LOGIN_PAGES = ("/accounts/login/", "/admin/login/")
# The foreign world's sealed tender, for routes that name an RFP, bid or bundle.
VARIANTS = (
    {
        "rfp_id": "sealed_rfp_id",
        "bid_id": "sealed_bid_id",
        "bundle_id": "sealed_bundle_id",
    },
)


# Personas reach the site from their own machines, never from the server's loopback
# (which /metrics trusts, as a scraper on the same host).
BROWSER = "203.0.113.7"


def _clients(request: pytest.FixtureRequest) -> dict[str, Client]:
    clients = {"anonymous": Client(raise_request_exception=False, REMOTE_ADDR=BROWSER)}
    for persona in PERSONAS:
        client = Client(raise_request_exception=False, REMOTE_ADDR=BROWSER)
        client.force_login(request.getfixturevalue(persona))
        clients[persona] = client
    return clients


def _ids(
    route: Route, world: World, overlay: dict[str, str] | None = None
) -> dict[str, str]:
    ids = dict(world.ids)
    for (key, param), source in policy.PARAMETERS.items():
        if key == route.key:
            ids[param] = world.ids[source]
    for param, source in (overlay or {}).items():
        ids[param] = world.ids[source]
    return ids


def _url(route: Route, ids: dict[str, str]) -> str:
    return route.url(ids, policy.QUERIES.get(route.key, ""))


def _urls(route: Route, world: World) -> Iterator[str]:
    yield _url(route, _ids(route, world))
    for overlay in VARIANTS:
        if set(overlay) & set(route.params):
            yield _url(route, _ids(route, world, overlay))


def _refused(response: Any) -> bool:
    if response.status_code in REFUSED:
        return True
    return response.status_code == 302 and response["Location"].startswith(LOGIN_PAGES)


def _rule(route: Route) -> policy.Rule:
    rule = policy.rule_for(route.key)
    assert rule is not None, route.key
    return rule


def _who(route: Route, clients: dict[str, Client]) -> dict[str, Client]:
    if route.key.startswith("admin"):
        return {who: clients[who] for who in policy.ADMIN_PERSONAS}
    return clients


def _problems(
    route: Route, who: str, method: str, response: Any, world: World
) -> list[str]:
    rule = _rule(route)
    where = f"{method.upper()} {route.key} as {who}: {response.status_code}"
    if response.status_code >= 500:
        return [where]
    found = [s for s in world.secrets if s in body(response)]
    problems = [f"{where} shows {found}"] if found else []
    if rule.kind == "deny" and not _refused(response):
        problems.append(f"{where} (not refused)")
    return problems


def test_every_route_has_a_policy_entry() -> None:
    every = routes()
    missing = [r.key for r in every if policy.rule_for(r.key) is None]
    assert not missing, (
        f"routes without a policy entry in tests/security/policy.py: {missing}"
    )
    keys = {r.key for r in every}
    stale = sorted(set(policy.ROUTES) - keys)
    assert not stale, f"policy entries naming no route: {stale}"
    naming = [r for r in every if r.params and not r.key.startswith("admin")]
    loose = [r.key for r in naming if _rule(r).kind not in {"deny", "shared"}]
    assert not loose, (
        f"routes naming an object the policy neither denies nor shares: {loose}"
    )
    reasons = [
        k
        for k, rule in policy.ROUTES.items()
        if rule.kind != "deny" and (rule.kind in {"public", "shared"} and not rule.why)
    ]
    assert not reasons, f"public or shared routes without their reason: {reasons}"


@pytest.mark.django_db
def test_no_route_shows_another_organisations_objects(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    clients = _clients(request)
    world = foreign_world(tmp_path)
    problems = []
    for route in routes():
        for url in _urls(route, world):
            for who, client in _who(route, clients).items():
                problems += _problems(route, who, "get", client.get(url), world)
    assert not problems, "\n".join(problems)


def _relogin(clients: dict[str, Client], request: pytest.FixtureRequest) -> None:
    for persona in PERSONAS:
        if "_auth_user_id" not in clients[persona].session:
            clients[persona].force_login(request.getfixturevalue(persona))


def _audit_rows(seen: int) -> list[tuple[str, str, str]]:
    rows = AuditEvent.objects.order_by("pk")[seen:]
    return [(e.action, e.actor_repr, e.target_repr) for e in rows]


def _group(route: Route) -> str:
    return "admin" if route.key.startswith("admin") else route.module


def _segments(every: list[Route]) -> Iterator[list[Route]]:
    """The routes in runs of one view module (the admin's all one run); a route
    that writes its requester's own rows (a logout) is a run of its own."""
    run: list[Route] = []
    for route in every:
        alone = bool(_rule(route).writes_own)
        if run and (alone or _group(route) != _group(run[-1])):
            yield run
            run = []
        run.append(route)
        if alone:
            yield run
            run = []
    if run:
        yield run


@pytest.mark.django_db
def test_unsafe_requests_change_nothing_of_another_organisation(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """POST (and the API's PUT, PATCH, DELETE) with an empty body, as everybody,
    to every route: the other organisation's rows stay as they were, and nothing
    changes, not even the audit trail, but what a route writes of the requester's
    own (``writes_own``: a logout, a failed login). The database is compared
    after each run of routes of one view module (route by route takes longer)."""
    clients = _clients(request)
    world = foreign_world(tmp_path)
    targets = target_rows(world.targets)
    problems: list[str] = []
    before, seen = fingerprint(), AuditEvent.objects.count()
    for segment in _segments(routes()):
        for route in segment:
            url = _url(route, _ids(route, world))
            for who, client in _who(route, clients).items():
                for method in route.unsafe:
                    response = getattr(client, method)(
                        url, {}, content_type="application/json"
                    )
                    problems += _problems(route, who, method, response, world)
        keys, after = [route.key for route in segment], fingerprint()
        if not _rule(segment[0]).writes_own:
            if written := _audit_rows(seen):
                problems.append(f"unsafe requests to {keys} were audited: {written}")
            if tables := changed(before, after):
                problems.append(f"unsafe requests to {keys} changed {tables}")
        else:
            _relogin(clients, request)  # after a logout (its audit row is the login's)
            after = fingerprint()
        before, seen = after, AuditEvent.objects.count()
    assert target_rows(world.targets) == targets


BUYER_SIDE = ("buyer", "evaluator", "labops", "auditor")


@pytest.mark.django_db
def test_no_route_shows_a_sealed_bid_before_opening(
    request: pytest.FixtureRequest, buyer_org: Organisation, tmp_path: Path
) -> None:
    """The personas' own buyer's tender, bid on and still sealed: nobody of the
    buyer's side (its buyer, evaluator and admin, the lab and the auditor it
    engaged) reads what the bids say on any route that names the tender, its bids,
    receipts, documents or bundle, or on any list."""
    clients = {who: c for who, c in _clients(request).items() if who in BUYER_SIDE}
    admin = UserFactory.create(username="buyer-admin")
    MembershipFactory.create(user=admin, organisation=buyer_org, role=Role.ADMIN)
    clients["buyer_admin"] = Client(raise_request_exception=False, REMOTE_ADDR=BROWSER)
    clients["buyer_admin"].force_login(admin)
    world = sealed_world(buyer_org, tmp_path)
    problems = []
    for route in routes():
        if route.key.startswith("admin") or not set(route.params) <= set(world.ids):
            continue  # the admin: tests/procurement/test_sealing.py
        url = _url(route, world.ids)
        for who, client in clients.items():
            response = client.get(url)
            if response.status_code >= 500:
                problems.append(f"GET {route.key} as {who}: {response.status_code}")
            elif found := [s for s in world.secrets if s in body(response)]:
                problems.append(f"GET {route.key} as {who} shows {found}")
    assert not problems, "\n".join(problems)
