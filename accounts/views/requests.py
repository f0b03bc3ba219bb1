"""Request types for annotations: what a view knows about its request.

Django's ``HttpRequest.user`` and DRF's ``Request.user`` may be anonymous; a view
behind ``login_required`` and an API behind ``IsAuthenticated`` (the default
permission) always has a signed-in ``User``. Views annotate their request with these
so the type checker knows it; nothing here runs differently.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails
from rest_framework.request import Request


class HtmxRequest(HttpRequest):
    """Any page's request: django-htmx's middleware sets ``htmx`` on every one."""

    htmx: HtmxDetails


class SignedInRequest(HtmxRequest):
    """A page's request behind ``login_required``."""

    user: User


class SignedInApiRequest(Request):
    """An API's request behind ``IsAuthenticated``."""

    user: User
