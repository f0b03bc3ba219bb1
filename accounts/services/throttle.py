"""The limits on password guessing, shared by the web login and the API token
endpoint (``POST /api/v1/auth/token/``), as django-axes' ``[["username",
"ip_address"]]`` lockout and OWASP's authentication guidance advise: a lock
falls on the guesser, never on the account's owner elsewhere.

Failed attempts are counted in a window (``REPROGATE_LOGIN_WINDOW_SECONDS``,
5 minutes):

* per account and client address: the ``REPROGATE_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS``
  th failure (10) locks that account from that address only. The owner
  elsewhere, and every other account at that address, still log in;
* per client address, whatever the account: ``REPROGATE_LOGIN_FAILURES_PER_ADDRESS``
  (100) lock the address. Colleagues behind one NAT each mistyping a few times
  stay far below it; a password sprayer trying a few guesses on many accounts
  reaches it. IPv6 addresses count by their /64 (one host holds a whole /64);
* per account, across addresses: beyond ``REPROGATE_LOGIN_FAILURES_PER_ACCOUNT``
  (100) the account is under attack from many addresses (credential stuffing),
  and each address then gets ``FAILURES_UNDER_ATTACK`` (3) failures on it instead
  of 10. This slows the attack; it locks no one out: the owner's correct
  password still opens it at the first try, from any address.

A locked attempt is refused without checking the password (web: the login
page's message, status 429; API: 429 ``{"code": "login_locked", …}`` with
``Retry-After``) until the oldest counted failure leaves the window. Refused
attempts are not counted, so a lock ends. A form without a username or a
password is no attempt and is not counted.

* Failures are rows of ``LoginFailure`` in the database: every web process and
  host counts the same ones. Each failure prunes the rows that left the window,
  so the table holds at most the failures of the last window.
* A successful login forgets the failures of that username from that address
  only: a login elsewhere does not reset an attacker's count.
* The client address is ``REMOTE_ADDR``; ``X-Forwarded-For`` is read only when
  ``REMOTE_ADDR`` is one of ``REPROGATE_TRUSTED_PROXIES`` (addresses or networks),
  and then the right-most address in it that is not a trusted proxy counts.
  Behind a reverse proxy, set it, or every client counts as the proxy's address.
* The token endpoint also has a per-minute rate (``REPROGATE_LOGIN_THROTTLE``,
  DRF's throttle in the process cache) per account and client address, so that
  one account's guesser never slows another account's login.

Concurrent guesses may overshoot a limit by the number of requests in flight.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.throttling import ScopedRateThrottle

from accounts import conf
from accounts.models import LoginFailure
from accounts.selectors import clock

# Failures per (account, address) while the account is under attack from many
# addresses (more than ``per_account`` failures in the window).
FAILURES_UNDER_ATTACK = 3
LOCKED_MESSAGE = "Too many failed attempts. Wait a few minutes and try again."

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[IpNetwork, ...]:
    return tuple(ipaddress.ip_network(p, strict=False) for p in proxies)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: str, networks: tuple[IpNetwork, ...]) -> bool:
    ip = _address(address)
    return ip is not None and any(ip in network for network in networks)


def address_within(address: str, networks: list[str] | tuple[str, ...]) -> bool:
    """``address`` lies in one of ``networks`` (addresses or CIDR networks, as
    the settings list them); False for what is not an address."""
    return _trusted(address, _networks(tuple(networks)))


def client_address(request: HttpRequest) -> str:
    """The address of the client, as far as trusted proxies vouch for it: the
    ``X-Forwarded-For`` entries are read from the right, past trusted proxies;
    what lies left of the first other address was written by the client."""
    remote = request.META.get("REMOTE_ADDR", "")
    networks = _networks(conf.trusted_proxies())
    if not _trusted(remote, networks):
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    nearest = remote
    for hop in reversed([a.strip() for a in forwarded if a.strip()]):
        if _address(hop) is None:
            break  # not an address: stop at the last proxy that vouched
        if not _trusted(hop, networks):
            return hop
        nearest = hop
    return nearest


def counted_address(address: str) -> str:
    """What the limits count for a client address: an IPv4 address as it is, an
    IPv6 address as its /64 (a host or a home gets a whole /64 to pick from)."""
    ip = _address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return address[:45]


def _username(username: str) -> str:
    return username.strip().lower()[:150]


def _free_in(
    failures: QuerySet[LoginFailure], limit: int, now: datetime, window: int
) -> float:
    """Seconds until fewer than ``limit`` of these failures lie in the window."""
    latest = list(
        failures.order_by("-occurred_at").values_list("occurred_at", flat=True)[:limit]
    )
    if len(latest) < limit:
        return 0.0
    return (latest[-1] + timedelta(seconds=window) - now).total_seconds()


def login_locked_for(*, address: str, username: str) -> int:
    """Seconds until this username may try from this address again (0: now)."""
    limits, now = conf.login_limits(), clock.now()
    window = limits.window_seconds
    recent = LoginFailure.objects.filter(
        occurred_at__gt=now - timedelta(seconds=window)
    )
    account = recent.filter(username=_username(username))
    where = counted_address(address)
    per_pair = limits.per_account_address
    if account.count() >= limits.per_account:  # stuffing: slow every address
        per_pair = min(per_pair, FAILURES_UNDER_ATTACK)
    wait = max(
        _free_in(account.filter(address=where), per_pair, now, window),
        _free_in(recent.filter(address=where), limits.per_address, now, window),
    )
    return math.ceil(wait) if wait > 0 else 0


def login_failed(*, address: str, username: str) -> None:
    """Count one failed attempt, and forget those that left the window."""
    now = clock.now()
    LoginFailure.objects.filter(
        occurred_at__lte=now - timedelta(seconds=conf.login_limits().window_seconds)
    ).delete()
    LoginFailure.objects.create(
        occurred_at=now, username=_username(username), address=counted_address(address)
    )


def login_succeeded(*, address: str, username: str) -> None:
    """Forget this username's failures from this address (typos), no others."""
    LoginFailure.objects.filter(
        username=_username(username), address=counted_address(address)
    ).delete()


class LoginRateThrottle(ScopedRateThrottle):
    """DRF's scoped rate, keyed on ``client_address`` (never a client's header)
    and the username asked for: one account's guesser never slows another's."""

    def get_ident(self, request: Any) -> str:
        data = getattr(request, "data", None)
        username = data.get("username", "") if isinstance(data, Mapping) else ""
        name = _username(username if isinstance(username, str) else "")
        digest = hashlib.sha256(name.encode()).hexdigest()[:32]
        return f"{counted_address(client_address(request))}/{digest}"
