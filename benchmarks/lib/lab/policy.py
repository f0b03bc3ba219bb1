"""The pool policy document (``reprogate.lab-policy/v1``): which CDI devices,
endpoints, telemetry settings and operator hooks a pool's runs get.

``policy_problems`` names every problem with its path (``devices[1].access:
…``); ``parse_policy`` returns the typed ``Policy`` or raises ``PolicyError``
with them. An empty or absent policy is ``Policy()``: no devices, no network.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

SCHEMA: Final = "reprogate.lab-policy/v1"
ACCESS: Final = ("r", "rw")
HOOK_ROLES: Final = ("fault", "rollback", "prerun", "postrun")
# vendor.com/class=name (CDI: vendor a domain, class and name restricted)
CDI_NAME: Final = re.compile(
    r"^(?P<vendor>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)/"
    r"(?P<class>[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)="
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?)$"
)
ENDPOINT_NAME: Final = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62})$")
TOP_KEYS: Final = frozenset(
    {"schema", "devices", "endpoints", "telemetry", "hooks", "cdi"}
)
# Top folders the sandbox builds itself: an endpoint socket may not go there.
RESERVED_DIRS: Final = frozenset({"dev", "proc", "sys", "usr", "etc", "sandbox"})
INTERVAL_MS: Final = (100, 60_000)
MAX_ITEMS: Final = 64
MAX_PATH: Final = 4096


class PolicyError(ValueError):
    """The policy is not valid; ``problems`` names each problem with its path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class DeviceRule:
    name: str  # a CDI fully-qualified name
    access: str = "rw"


@dataclass(frozen=True)
class Endpoint:
    name: str
    address: str  # "tcp:HOST:PORT" or "unix:/PATH"

    @property
    def kind(self) -> str:
        return self.address.split(":", 1)[0]

    @property
    def target(self) -> tuple[str, int] | str:
        """(host, port) for tcp, the socket path for unix."""
        kind, rest = self.address.split(":", 1)
        if kind == "unix":
            return rest
        host, _, port = rest.rpartition(":")
        return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Policy:
    devices: tuple[DeviceRule, ...] = ()
    endpoints: tuple[Endpoint, ...] = ()
    interval_ms: int = 1000
    block_latency_histogram: bool = False
    hooks: dict[str, str] = field(default_factory=dict)
    cdi_hooks_allowed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.devices and not self.endpoints


def cdi_name_problem(name: object) -> str | None:
    if not isinstance(name, str) or not CDI_NAME.match(name):
        return (
            f"{name!r} is not a fully-qualified CDI device name (vendor.com/class=name)"
        )
    return None


def address_problem(address: object) -> str | None:
    """None when ``address`` is ``tcp:IP:PORT`` (an IP literal) or ``unix:/path``."""
    if not isinstance(address, str):
        return "must be a string (tcp:HOST:PORT or unix:/PATH)"
    kind, _, rest = address.partition(":")
    if kind == "unix":
        if not rest.startswith("/") or "\x00" in rest or len(rest) > 107:
            return "unix: needs an absolute socket path of at most 107 bytes"
        if ".." in rest.split("/"):
            return "unix: the path may not contain '..'"
        if rest.split("/")[1] in RESERVED_DIRS:
            return f"unix: {rest} would hide the sandbox's own /{rest.split('/')[1]}"
        return None
    if kind != "tcp":
        return f"{address!r}: the address must start with tcp: or unix:"
    host, _, port = rest.rpartition(":")
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"{address!r}: the host must be an IP address (no names)"
    if ip.version != 4:
        return f"{address!r}: only IPv4 endpoints are supported"
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"{address!r}: the port must be 1-65535"
    return None


def _absolute(value: object) -> bool:
    return (
        isinstance(value, str)
        and value.startswith("/")
        and "\x00" not in value
        and len(value) <= MAX_PATH
        and ".." not in value.split("/")
    )


def _objects(
    value: object, key: str, keys: tuple[str, str], problems: list[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each object of the list at ``key`` with its path, after the checks every
    such list shares (a list, at most ``MAX_ITEMS``, objects, known keys)."""
    if not isinstance(value, list):
        problems.append(f"{key}: must be a list")
        return
    if len(value) > MAX_ITEMS:
        problems.append(f"{key}: at most {MAX_ITEMS} {key}")
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: must be an object with {' and '.join(keys)}")
            continue
        extra = set(item) - set(keys)
        if extra:
            problems.append(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        yield where, item


def _devices(value: object, problems: list[str]) -> None:
    seen: set[str] = set()
    for where, item in _objects(value, "devices", ("name", "access"), problems):
        problem = cdi_name_problem(item.get("name"))
        if problem:
            problems.append(f"{where}.name: {problem}")
        elif item["name"] in seen:
            problems.append(f"{where}.name: {item['name']} is listed twice")
        else:
            seen.add(item["name"])
        if item.get("access", "rw") not in ACCESS:
            problems.append(f'{where}.access: must be "r" or "rw"')


def _endpoints(value: object, problems: list[str]) -> None:
    names: set[str] = set()
    addresses: set[str] = set()
    for where, item in _objects(value, "endpoints", ("name", "address"), problems):
        name = item.get("name")
        if not isinstance(name, str) or not ENDPOINT_NAME.match(name):
            problems.append(
                f"{where}.name: must be lower-case letters, digits, - or _ (at most 63)"
            )
        elif name in names:
            problems.append(f"{where}.name: {name} is listed twice")
        else:
            names.add(name)
        problem = address_problem(item.get("address"))
        if problem:
            problems.append(f"{where}.address: {problem}")
        elif item["address"] in addresses:
            problems.append(f"{where}.address: {item['address']} is listed twice")
        else:
            addresses.add(item["address"])


def _telemetry(value: object, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append("telemetry: must be an object")
        return
    extra = set(value) - {"interval_ms", "block_latency_histogram"}
    if extra:
        problems.append(f"telemetry: unknown key(s) {', '.join(sorted(extra))}")
    interval = value.get("interval_ms", 1000)
    low, high = INTERVAL_MS
    if isinstance(interval, bool) or not isinstance(interval, int):
        problems.append("telemetry.interval_ms: must be an integer")
    elif not low <= interval <= high:
        problems.append(f"telemetry.interval_ms: must be {low}-{high}")
    if not isinstance(value.get("block_latency_histogram", False), bool):
        problems.append("telemetry.block_latency_histogram: must be true or false")


def _hooks(value: object, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append("hooks: must be an object (role -> executable path)")
        return
    for role, path in value.items():
        if role not in HOOK_ROLES:
            problems.append(
                f"hooks.{role}: unknown role (one of {', '.join(HOOK_ROLES)})"
            )
        elif not _absolute(path):
            problems.append(f"hooks.{role}: must be an absolute path on the lab host")


def _cdi(value: object, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append("cdi: must be an object")
        return
    extra = set(value) - {"allow_hooks"}
    if extra:
        problems.append(f"cdi: unknown key(s) {', '.join(sorted(extra))}")
    allowed = value.get("allow_hooks", [])
    if not isinstance(allowed, list):
        problems.append("cdi.allow_hooks: must be a list of executable paths")
        return
    for index, path in enumerate(allowed):
        if not _absolute(path):
            problems.append(f"cdi.allow_hooks[{index}]: must be an absolute path")


def policy_problems(document: object) -> list[str]:
    """Every problem of ``document``, each prefixed with where it is."""
    if document is None or document == {}:
        return []
    if not isinstance(document, dict):
        return ["(policy): must be a JSON object"]
    problems: list[str] = []
    if document.get("schema") != SCHEMA:
        problems.append(f"schema: must be {SCHEMA!r}")
    extra = set(document) - TOP_KEYS
    if extra:
        problems.append(f"(policy): unknown key(s) {', '.join(sorted(extra))}")
    checks = (
        ("devices", _devices),
        ("endpoints", _endpoints),
        ("telemetry", _telemetry),
        ("hooks", _hooks),
        ("cdi", _cdi),
    )
    for key, check in checks:
        if key in document:
            check(document[key], problems)
    return problems


def parse_policy(document: object) -> Policy:
    problems = policy_problems(document)
    if problems:
        raise PolicyError(problems)
    if not document:
        return Policy()
    assert isinstance(document, dict)  # noqa: S101 (policy_problems said so)
    telemetry = document.get("telemetry") or {}
    return Policy(
        devices=tuple(
            DeviceRule(d["name"], d.get("access", "rw"))
            for d in document.get("devices", [])
        ),
        endpoints=tuple(
            Endpoint(e["name"], e["address"]) for e in document.get("endpoints", [])
        ),
        interval_ms=int(telemetry.get("interval_ms", 1000)),
        block_latency_histogram=bool(telemetry.get("block_latency_histogram", False)),
        hooks=dict(document.get("hooks") or {}),
        cdi_hooks_allowed=tuple((document.get("cdi") or {}).get("allow_hooks", [])),
    )
