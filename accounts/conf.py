"""The accounts app's settings, read when used (so tests can change them); this
module is the app's only reader of ``django.conf.settings`` (models name
``AUTH_USER_MODEL`` as Django asks). ``config/settings.py`` declares each one
with its environment variable and default:

- ``REPROGATE_SITE_URL``, ``REPROGATE_SITE_NAME``: the site's absolute links
  (e-mails, CLI hints) and its name in e-mail subjects;
- ``DEFAULT_FROM_EMAIL``: the sender of notification e-mails;
- ``REPROGATE_API_TOKEN_TTL_DAYS``: how long a new API token lives;
- ``REPROGATE_LOGIN_WINDOW_SECONDS`` and the three ``REPROGATE_LOGIN_FAILURES_*``
  limits: password guessing (``accounts.services.throttle``);
- ``REPROGATE_TRUSTED_PROXIES``: the proxies whose ``X-Forwarded-For`` is believed.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


def absolute_url(path: str = "/") -> str:
    """``REPROGATE_SITE_URL`` followed by ``path`` (a path of this site, e.g. from
    ``reverse``); a URL that already has a scheme is returned as it is."""
    if not path.startswith("/"):
        return path
    return settings.REPROGATE_SITE_URL + path


def site_url() -> str:
    """``REPROGATE_SITE_URL``: scheme, host and port, no trailing slash."""
    return settings.REPROGATE_SITE_URL


def site_name() -> str:
    return settings.REPROGATE_SITE_NAME


def default_from_email() -> str:
    return settings.DEFAULT_FROM_EMAIL


def api_token_ttl_days() -> int:
    return settings.REPROGATE_API_TOKEN_TTL_DAYS


@dataclass(frozen=True)
class LoginLimits:
    window_seconds: int
    per_account_address: int
    per_address: int
    per_account: int


def login_limits() -> LoginLimits:
    """The limits as the settings set them now (tests change them)."""
    return LoginLimits(
        window_seconds=settings.REPROGATE_LOGIN_WINDOW_SECONDS,
        per_account_address=settings.REPROGATE_LOGIN_FAILURES_PER_ACCOUNT_ADDRESS,
        per_address=settings.REPROGATE_LOGIN_FAILURES_PER_ADDRESS,
        per_account=settings.REPROGATE_LOGIN_FAILURES_PER_ACCOUNT,
    )


def trusted_proxies() -> tuple[str, ...]:
    return tuple(settings.REPROGATE_TRUSTED_PROXIES)
