"""The lockout on password guessing, shared by the web login and the API token
endpoint (``POST /api/v1/auth/token/``).

* At most ``MAX_FAILURES_PER_ACCOUNT`` (10) failed attempts per username and
  ``MAX_FAILURES_PER_ADDRESS`` (30) per client address in any ``WINDOW_SECONDS``
  (5 minutes). Beyond either, every attempt is refused without checking the
  password (web: the login page's message, status 429; API: 429
  ``{"code": "login_locked", …}`` with ``Retry-After``) until the oldest counted
  failure leaves the window. Refused attempts are not counted, so a lock ends.
* Failures are rows of ``LoginFailure`` in the database: every web process and
  host counts the same ones. Each failure prunes the rows that left the window,
  so the table holds at most the failures of the last five minutes.
* A successful login forgets the failures of that username from that address
  only: a login elsewhere does not reset an attacker's count.
* The client address is ``REMOTE_ADDR``; ``X-Forwarded-For`` is read only when
  ``REMOTE_ADDR`` is one of ``REPROGATE_TRUSTED_PROXIES`` (addresses or networks),
  and then the right-most address in it that is not a trusted proxy counts.
  Behind a reverse proxy, set it, or every client counts as the proxy's address.
* The token endpoint also has a per-minute rate (``REPROGATE_LOGIN_THROTTLE``,
  DRF's throttle in the process cache) keyed on the same client address.

Concurrent guesses may overshoot a limit by the number of requests in flight.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime, timedelta
from functools import lru_cache

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework.throttling import ScopedRateThrottle

from accounts import clock
from accounts.models import LoginFailure

WINDOW_SECONDS = 300
MAX_FAILURES_PER_ACCOUNT = 10
MAX_FAILURES_PER_ADDRESS = 30
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
    networks = _networks(tuple(settings.REPROGATE_TRUSTED_PROXIES))
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


def _username(username: str) -> str:
    return username.strip().lower()[:150]


def _free_in(failures: QuerySet[LoginFailure], limit: int, now: datetime) -> float:
    """Seconds until fewer than ``limit`` of these failures lie in the window."""
    latest = list(
        failures.order_by("-occurred_at").values_list("occurred_at", flat=True)[:limit]
    )
    if len(latest) < limit:
        return 0.0
    return (latest[-1] + timedelta(seconds=WINDOW_SECONDS) - now).total_seconds()


def login_locked_for(*, address: str, username: str) -> int:
    """Seconds until this username may try from this address again (0: now)."""
    now = clock.now()
    recent = LoginFailure.objects.filter(
        occurred_at__gt=now - timedelta(seconds=WINDOW_SECONDS)
    )
    wait = max(
        _free_in(
            recent.filter(username=_username(username)), MAX_FAILURES_PER_ACCOUNT, now
        ),
        _free_in(recent.filter(address=address), MAX_FAILURES_PER_ADDRESS, now),
    )
    return math.ceil(wait) if wait > 0 else 0


def login_failed(*, address: str, username: str) -> None:
    """Count one failed attempt, and forget those that left the window."""
    now = clock.now()
    LoginFailure.objects.filter(
        occurred_at__lte=now - timedelta(seconds=WINDOW_SECONDS)
    ).delete()
    LoginFailure.objects.create(
        occurred_at=now, username=_username(username), address=address[:45]
    )


def login_succeeded(*, address: str, username: str) -> None:
    """Forget this username's failures from this address (typos), no others."""
    LoginFailure.objects.filter(username=_username(username), address=address).delete()


class LoginRateThrottle(ScopedRateThrottle):
    """DRF's scoped rate, keyed on ``client_address`` (never a client's header)."""

    def get_ident(self, request: HttpRequest) -> str:
        return client_address(request)
