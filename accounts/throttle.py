"""A small fixed-window limit on password attempts per client address and username."""

from __future__ import annotations

import hashlib

from django.core.cache import cache

WINDOW_SECONDS = 300
MAX_FAILURES = 10


def _key(address: str, username: str) -> str:
    digest = hashlib.sha256(f"{address}|{username.lower()}".encode()).hexdigest()
    return f"login-failures:{digest}"


def login_blocked(address: str, username: str) -> bool:
    return cache.get(_key(address, username), 0) >= MAX_FAILURES


def login_failed(address: str, username: str) -> None:
    key = _key(address, username)
    if cache.add(key, 1, WINDOW_SECONDS):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add() and incr()
        cache.add(key, 1, WINDOW_SECONDS)
