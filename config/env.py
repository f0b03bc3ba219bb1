"""Strict environment parsing: a malformed value stops start-up naming the variable.

Modelled on healthchecks' ``envbool``/``envsecret``: a setting is either absent (the
default applies) or well formed; anything else raises ``ImproperlyConfigured``.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or value == "" else value


def env_str(name: str, default: str) -> str:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, *, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean: use True or False.")


def env_int(name: str, *, default: int, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}.")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_secret(name: str, *, default: str | None) -> str:
    """Read ``NAME`` or the file named by ``NAME_FILE`` (Docker/Kubernetes secrets)."""
    file_name = _raw(f"{name}_FILE")
    if file_name is not None:
        try:
            return Path(file_name).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"{name}_FILE={file_name!r} cannot be read: {exc.strerror}."
            ) from None
    value = _raw(name)
    if value is not None:
        return value
    if default is None:
        raise ImproperlyConfigured(
            f"{name} (or {name}_FILE) must be set when DJANGO_DEBUG is off."
        )
    return default


def env_url(name: str, default: str, *, schemes: frozenset[str]) -> str:
    """A URL whose scheme is one of ``schemes``."""
    value = env_str(name, default)
    scheme, sep, rest = value.partition("://")
    if not sep or scheme not in schemes or (not rest and scheme != "filesystem"):
        allowed = ", ".join(sorted(schemes))
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a URL with one of the schemes: {allowed}."
        )
    return value
