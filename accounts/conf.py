"""Absolute links to this site, for what is read outside it (e-mails, CLI hints)."""

from __future__ import annotations

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
