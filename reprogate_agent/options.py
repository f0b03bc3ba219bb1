"""The agent's environment, read once at start: every problem is one line naming
the variable, and the agent exits before it talks to anyone.

- ``REPROGATE_SERVER_URL``: the server (https://…; http:// on loopback only);
- ``REPROGATE_HOST_TOKEN`` or ``REPROGATE_HOST_TOKEN_FILE``: the host token ``rgh_…``;
- ``REPROGATE_BROKER_URL`` or ``REPROGATE_BROKER_URL_FILE``: the pool's broker user
  (or, for the embedded default's agent on the server's own machine, its SQLite
  broker ``sqla+sqlite:///…``);
- optional ``REPROGATE_CA_FILE``, ``REPROGATE_AGENT_WORK_DIR`` (default ``./work``),
  ``REPROGATE_AGENT_NAME`` (default the hostname), ``REPROGATE_AGENT_STATE_DIR``
  (default ``$XDG_STATE_HOME/reprogate-agent``, else
  ``~/.local/state/reprogate-agent``: the host's signing key, ``host_key.pem``,
  made there with mode 0600 at the first start and kept across restarts).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from reprogate_agent.client import server_base

TOKEN_PATTERN: Final = re.compile(r"rgh_[A-Za-z0-9_-]{16,200}")
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
BROKER_SCHEMES: Final = frozenset({"amqp", "amqps", "pyamqp", "redis", "rediss"})
# The embedded broker (benchmarks.lib.broker): a SQLite file on this machine.
EMBEDDED_BROKER_SCHEME: Final = "sqla+sqlite"
MAX_SECRET_FILE: Final = 64 * 1024
DEFAULT_STATE: Final = ".local/state/reprogate-agent"


class OptionsError(Exception):
    """A variable missing or malformed (the message names it)."""


@dataclass(frozen=True)
class AgentOptions:
    server_url: str
    token: str
    broker_url: str
    ca_file: str | None
    work_dir: Path
    name: str
    hostname: str
    state_dir: Path = field(default_factory=lambda: Path.home() / DEFAULT_STATE)

    @property
    def node_name(self) -> str:
        """The Celery node: ``<name>@<hostname>``."""
        return f"{self.name}@{self.hostname}"

    def __repr__(self) -> str:  # never the token or the broker's password
        return f"AgentOptions(server_url={self.server_url!r}, node={self.node_name!r})"


def _secret(env: Mapping[str, str], name: str) -> str:
    """``name`` or the contents of the file ``name_FILE`` (one of them)."""
    value, file = env.get(name, "").strip(), env.get(f"{name}_FILE", "").strip()
    if value and file:
        raise OptionsError(f"Set {name} or {name}_FILE, not both.")
    if file:
        path = Path(file)
        try:
            if path.stat().st_size > MAX_SECRET_FILE:
                raise OptionsError(f"{name}_FILE: {file} is too large.")
            value = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise OptionsError(f"{name}_FILE: cannot read {file}: {error}") from error
        if not value:
            raise OptionsError(f"{name}_FILE: {file} is empty.")
    if not value:
        raise OptionsError(f"{name} (or {name}_FILE) is not set.")
    return value


def _state_dir(env: Mapping[str, str]) -> Path:
    """Where the host key lives (made by the agent at its first start)."""
    state = env.get("REPROGATE_AGENT_STATE_DIR", "").strip()
    if state:
        where = Path(state)
    elif env.get("XDG_STATE_HOME", "").strip():
        where = Path(env["XDG_STATE_HOME"].strip()) / "reprogate-agent"
    else:
        home = env.get("HOME", "").strip()
        where = (Path(home) if home else Path.home()) / DEFAULT_STATE
    if where.exists() and not where.is_dir():
        raise OptionsError(f"REPROGATE_AGENT_STATE_DIR: {where} is not a folder.")
    return where.resolve()


def read_options(env: Mapping[str, str]) -> AgentOptions:
    server = env.get("REPROGATE_SERVER_URL", "").strip()
    if not server:
        raise OptionsError("REPROGATE_SERVER_URL is not set (https://your-server).")
    try:
        server = server_base(server)
    except ValueError as error:
        raise OptionsError(f"REPROGATE_SERVER_URL: {error}") from error

    token = _secret(env, "REPROGATE_HOST_TOKEN")
    if not TOKEN_PATTERN.fullmatch(token):
        raise OptionsError(
            "REPROGATE_HOST_TOKEN: not a host token (rgh_ followed by the secret)."
        )

    broker = _secret(env, "REPROGATE_BROKER_URL")
    parts = urlsplit(broker)
    if parts.scheme == EMBEDDED_BROKER_SCHEME:
        if parts.netloc or not parts.path.startswith("/") or len(parts.path) < 2:
            raise OptionsError(
                "REPROGATE_BROKER_URL: the embedded broker is sqla+sqlite:/// "
                "followed by the SQLite file's path."
            )
    elif parts.scheme not in BROKER_SCHEMES or not parts.hostname:
        raise OptionsError(
            "REPROGATE_BROKER_URL: not an amqp:// or redis:// URL with a host."
        )

    ca_file = env.get("REPROGATE_CA_FILE", "").strip() or None
    if ca_file is not None and not Path(ca_file).is_file():
        raise OptionsError(f"REPROGATE_CA_FILE: {ca_file} is not a file.")

    work_dir = Path(env.get("REPROGATE_AGENT_WORK_DIR", "").strip() or "work")
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OptionsError(
            f"REPROGATE_AGENT_WORK_DIR: cannot create {work_dir}: {error}"
        ) from error
    if not work_dir.is_dir():
        raise OptionsError(f"REPROGATE_AGENT_WORK_DIR: {work_dir} is not a folder.")

    state_dir = _state_dir(env)

    hostname = socket.gethostname()
    name = env.get("REPROGATE_AGENT_NAME", "").strip() or hostname.split(".")[0]
    if not NAME_PATTERN.fullmatch(name):
        raise OptionsError(
            f"REPROGATE_AGENT_NAME: {name!r} must be letters, digits, '.', '_' "
            "and '-' (at most 100)."
        )
    return AgentOptions(
        server_url=server,
        token=token,
        broker_url=broker,
        ca_file=ca_file,
        work_dir=work_dir.resolve(),
        name=name,
        hostname=hostname,
        state_dir=state_dir,
    )
