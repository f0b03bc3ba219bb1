"""Joining a lab host to a pool: a new host token and the one command the lab
operator pastes on the host to start its agent.

The command names the runner API (``REPROGATE_PUBLIC_URL``, default
``REPROGATE_SITE_URL``), the pool's broker user (``REPROGATE_AGENT_BROKER_URL``,
``{pool}`` replaced by the pool's name) and the token. The server never knows the
broker user's password: the command carries ``BROKER-PASSWORD`` in its place for
the operator to fill in. The command holds the token, so it is shown once."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from accounts.services.actor import Actor
from benchmarks import conf
from benchmarks.models import HostToken, LabPool
from benchmarks.services.host_tokens import host_token_issue

BROKER_PASSWORD_PLACEHOLDER: Final = "BROKER-PASSWORD"  # noqa: S105 - a placeholder
BROKER_HOST_PLACEHOLDER: Final = "BROKER-HOST"
_UNSET_BROKER: Final = f"amqp://pool-{{pool}}@{BROKER_HOST_PLACEHOLDER}:5672/reprogate"


@dataclass(frozen=True)
class HostJoin:
    token: HostToken
    command: str  # holds the token: show it once, never store it
    broker_configured: bool  # False: the command names BROKER-HOST to fill in too


def host_join(*, pool: LabPool, name: str, actor: Actor) -> HostJoin:
    """Issue a token for the host ``name`` on ``pool`` (audited by the token
    service) and the command that starts its agent with it."""
    issued = host_token_issue(pool=pool, name=name, actor=actor)
    return HostJoin(
        token=issued.token,
        command=agent_command(pool, issued.raw),
        broker_configured=bool(_broker_template()),
    )


def agent_command(pool: LabPool, raw_token: str) -> str:
    variables = {
        "REPROGATE_SERVER_URL": server_url(),
        "REPROGATE_BROKER_URL": agent_broker_url(pool),
        "REPROGATE_HOST_TOKEN": raw_token,
    }
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
    return f"{assignments} python -m reprogate_agent"


def server_url() -> str:
    return conf.public_url()


def agent_broker_url(pool: LabPool) -> str:
    """The pool's broker URL with the password replaced by the placeholder
    (a password in the setting is never repeated)."""
    template = _broker_template() or _UNSET_BROKER
    parts = urlsplit(template.replace("{pool}", pool.name))
    user = ""
    if "@" in parts.netloc:
        user = parts.netloc.rpartition("@")[0].partition(":")[0]
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user}:{BROKER_PASSWORD_PLACEHOLDER}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _broker_template() -> str:
    return conf.agent_broker_url_template()
