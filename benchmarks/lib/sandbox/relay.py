"""Endpoints a sandboxed harness may reach, and nothing else.

Each endpoint gets a relay in the runner (root, outside the sandbox's pid
namespace) that accepts the harness's connections and opens one to the real
target per connection, counting the bytes each way:

- ``unix:/PATH``: the relay listens on a socket of the run's own (mode 0600,
  owned by the run's uid) that is bound into the sandbox at ``/PATH``; the
  sandbox keeps no network at all;
- ``tcp:IP:PORT``: the sandbox runs in a network namespace of the run's
  (``ip netns add``) with only ``lo`` up (and IP on it when it is not a
  loopback address); the relay's listener is created inside that namespace on
  IP:PORT, so that address is the only one that answers: another port is
  refused, another address unreachable.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from benchmarks.lib.sandbox.extras import EndpointTarget

CLONE_NEWNET: Final = 0x40000000
CHUNK: Final = 64 * 1024
CONNECT_TIMEOUT: Final = 10.0
IP_TIMEOUT: Final = 10.0
NETNS_PREFIX: Final = "reprogate-"


class EndpointError(Exception):
    """An endpoint cannot be set up for the run."""


def _setns_function() -> Callable[[int, int], int]:
    libc = ctypes.CDLL(None, use_errno=True)
    function = libc.setns
    function.argtypes = [ctypes.c_int, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


@dataclass
class Relay:
    target: EndpointTarget
    listener: socket.socket
    connect: Callable[[], socket.socket]
    bytes_in: int = 0  # harness -> target
    bytes_out: int = 0  # target -> harness
    connections: int = 0
    refused: int = 0  # connections the target did not take
    _open: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)
    _closed: bool = False

    def start(self) -> None:
        thread = threading.Thread(target=self._accept, daemon=True, name="relay")
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = self.connect()
            except OSError:
                self.refused += 1
                client.close()
                continue
            with self._lock:
                self.connections += 1
                self._open += [client, upstream]
            for source, sink, inbound in (
                (client, upstream, True),
                (upstream, client, False),
            ):
                thread = threading.Thread(
                    target=self._pump, args=(source, sink, inbound), daemon=True
                )
                with self._lock:  # joined at close: its last count is kept
                    self._threads.append(thread)
                thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket, inbound: bool) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
                with self._lock:
                    if inbound:
                        self.bytes_in += len(data)
                    else:
                        self.bytes_out += len(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self._lock:
            for sock in self._open:  # shutdown wakes a pump blocked in recv
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=2)

    def record(self, via: str) -> dict[str, Any]:
        return {
            "name": self.target.name,
            "address": self.target.address,
            "via": via,
            "connections": self.connections,
            "refused_by_target": self.refused,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
        }


def _parents(inside: str) -> list[str]:
    """bwrap arguments that make the socket's folders in the sandbox, top
    down, traversable by the run's uid (an existing folder is left as it is)."""
    args: list[str] = []
    for parent in reversed(Path(inside).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _unix_connect(path: str) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        sock.settimeout(None)
        return sock

    return connect


def _tcp_connect(host: str, port: int) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        sock.settimeout(None)
        return sock

    return connect


@dataclass
class EndpointNet:
    """The run's relays and, for tcp endpoints, its network namespace."""

    run_dir: Path
    relays: list[tuple[Relay, str]] = field(default_factory=list)
    binds: list[str] = field(default_factory=list)  # bwrap arguments
    netns: str | None = None
    netns_fd: int | None = None
    setns: Callable[[int, int], int] | None = None

    @property
    def joins_netns(self) -> bool:
        return self.netns_fd is not None

    def enter(self) -> None:
        """In the child before exec: join the run's network namespace."""
        if (
            self.netns_fd is not None
            and self.setns is not None
            and self.setns(self.netns_fd, CLONE_NEWNET) != 0
        ):
            raise OSError(ctypes.get_errno(), "setns to the run's network failed")

    def records(self) -> list[dict[str, Any]]:
        return [relay.record(via) for relay, via in self.relays]

    def close(self) -> None:
        for relay, _ in self.relays:
            relay.close()
        if self.netns_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.netns_fd)
            self.netns_fd = None
        if self.netns is not None:
            _ip(["netns", "delete", self.netns], check=False)
            self.netns = None


def _ip(args: list[str], *, check: bool = True) -> None:
    ip = shutil.which("ip") or "/usr/sbin/ip"
    try:
        done = subprocess.run(  # noqa: S603
            [ip, *args], capture_output=True, text=True, timeout=IP_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        if check:
            raise EndpointError(f"ip {' '.join(args)}: {exc}") from exc
        return
    if check and done.returncode != 0:
        raise EndpointError(f"ip {' '.join(args)}: {done.stderr.strip()[:300]}")


def _listen_in(
    netns_fd: int, setns: Callable[[int, int], int], host: str, port: int
) -> socket.socket:
    """A listening socket made inside the namespace (by a thread that joins it)."""
    result: dict[str, Any] = {}

    def make() -> None:
        try:
            if setns(netns_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns failed")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(64)
            result["socket"] = sock
        except OSError as exc:
            result["error"] = exc

    thread = threading.Thread(target=make, name="netns-listener")
    thread.start()
    thread.join()
    if "error" in result:
        raise EndpointError(
            f"tcp:{host}:{port}: cannot listen in the run's network: {result['error']}"
        )
    return result["socket"]


def _open_netns(net: EndpointNet, hosts: set[str]) -> None:
    name = f"{NETNS_PREFIX}{uuid.uuid4().hex[:12]}"
    _ip(["netns", "add", name])
    net.netns = name
    _ip(["-n", name, "link", "set", "lo", "up"])
    for host in sorted(hosts):
        if not ipaddress.ip_address(host).is_loopback:
            _ip(["-n", name, "addr", "add", f"{host}/32", "dev", "lo"])
    net.netns_fd = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    net.setns = _setns_function()


def open_endpoints(
    targets: tuple[EndpointTarget, ...], run_dir: Path, uid: int, gid: int
) -> EndpointNet:
    """Relays for ``targets``; on failure everything made so far is undone."""
    net = EndpointNet(run_dir)
    try:
        tcp = [t for t in targets if t.kind == "tcp"]
        if tcp:
            _open_netns(net, {t.tcp()[0] for t in tcp})
        for index, target in enumerate(targets):
            if target.kind == "unix":
                path = run_dir / f"endpoint{index}.sock"
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(str(path))
                os.chown(path, uid, gid)
                os.chmod(path, 0o600)
                listener.listen(64)
                relay = Relay(target, listener, _unix_connect(target.unix_path()))
                net.binds += _parents(target.unix_path())
                net.binds += ["--bind", str(path), target.unix_path()]
                via = "unix-relay"
            else:
                host, port = target.tcp()
                if net.netns_fd is None or net.setns is None:
                    raise EndpointError("the run's network namespace is missing")
                listener = _listen_in(net.netns_fd, net.setns, host, port)
                relay = Relay(target, listener, _tcp_connect(host, port))
                via = "netns-relay"
            relay.start()
            net.relays.append((relay, via))
    except BaseException:
        net.close()
        raise
    return net
