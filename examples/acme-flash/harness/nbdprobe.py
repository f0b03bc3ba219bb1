"""The harness's failover mode (stdlib only): reads 4 KiB blocks at random
offsets from an NBD export (the endpoint the lab gives the run) for the
scenario's duration, counting the reads that succeed and those that fail (an
error reply, a timeout, a dropped connection: the client reconnects), and
writes per-second series of both to metrics.json (reprogate-metrics):

- ``throughput`` (MiB/s) and ``errors`` (failed reads): one point a second,
  its time the end of its second, counted from the probe's start;
- metrics ``read_iops`` and ``read_bw_mib_s`` (mean over the run),
  ``read_errors`` (total).

The endpoint: REPROGATE_ENDPOINTS (JSON: name -> ``tcp:HOST:PORT`` or
``unix:PATH``); the one a scenario action names (``endpoint``), else the
first by name. The NBD client speaks the fixed-newstyle handshake with
``NBD_OPT_EXPORT_NAME`` (the default export) and simple replies."""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import struct
import time
from typing import Any

BLOCK = 4096
REQUEST_MAGIC = 0x25609513
REPLY_MAGIC = 0x67446698
CMD_READ, CMD_DISC = 0, 2
TIMEOUT_S = 0.5


class NbdError(Exception):
    """The export refused a read (an error reply)."""


def endpoint_address(scenario: dict[str, Any]) -> str:
    text = os.environ.get("REPROGATE_ENDPOINTS", "").strip()
    endpoints = json.loads(text) if text else {}
    if not isinstance(endpoints, dict) or not endpoints:
        raise ValueError("failover mode needs an endpoint in REPROGATE_ENDPOINTS")
    named = [
        a.get("endpoint")
        for a in scenario.get("actions") or []
        if isinstance(a, dict) and a.get("endpoint") in endpoints
    ]
    return str(endpoints[named[0] if named else sorted(endpoints)[0]])


def _exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the export closed the connection")
        data += chunk
    return data


class Client:
    def __init__(self, address: str) -> None:
        kind, _, where = address.partition(":")
        if kind == "unix":
            self.conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.conn.settimeout(TIMEOUT_S * 4)
            self.conn.connect(where)
        elif kind == "tcp":
            host, _, port = where.rpartition(":")
            self.conn = socket.create_connection((host, int(port)), TIMEOUT_S * 4)
        else:
            raise ValueError(f"not an endpoint address: {address!r}")
        self.handle = 0
        self.size = self._handshake()
        self.conn.settimeout(TIMEOUT_S)

    def _handshake(self) -> int:
        greeting = _exactly(self.conn, 18)
        if greeting[:16] != b"NBDMAGICIHAVEOPT":
            raise ConnectionError("not a fixed-newstyle NBD server")
        no_zeroes = struct.unpack(">H", greeting[16:])[0] & 2
        self.conn.sendall(struct.pack(">I", 1 | no_zeroes))
        self.conn.sendall(b"IHAVEOPT" + struct.pack(">II", 1, 0))
        size, _flags = struct.unpack(">QH", _exactly(self.conn, 10))
        if not no_zeroes:
            _exactly(self.conn, 124)
        return int(size)

    def read(self, offset: int) -> None:
        self.handle += 1
        self.conn.sendall(
            struct.pack(
                ">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, self.handle, offset, BLOCK
            )
        )
        magic, error, handle = struct.unpack(">IIQ", _exactly(self.conn, 16))
        if magic != REPLY_MAGIC or handle != self.handle:
            raise ConnectionError("an unexpected reply")
        if error:
            raise NbdError(os.strerror(error) if error < 200 else f"error {error}")
        _exactly(self.conn, BLOCK)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.sendall(
                struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_DISC, 0, 0, 0)
            )
        self.conn.close()


def probe(address: str, duration_s: float, seed: int, progress: Any) -> dict[str, Any]:
    """Reads for ``duration_s``; the reprogate-metrics document of what it saw."""
    rng = random.Random(seed)  # noqa: S311 (where to read, not a secret)
    seconds = max(1, round(duration_s))
    ok, failed = [0] * seconds, [0] * seconds
    started = time.monotonic()
    client: Client | None = None
    reported = -1
    while (elapsed := time.monotonic() - started) < seconds:
        second = int(elapsed)
        if second != reported and progress is not None:
            progress(elapsed / seconds)
            reported = second
        try:
            if client is None:
                client = Client(address)
            client.read(rng.randrange(max(1, client.size // BLOCK)) * BLOCK)
            ok[second] += 1
        except NbdError:
            failed[second] += 1
        except (OSError, ConnectionError):
            failed[second] += 1
            if client is not None:
                client.conn.close()
            client = None
            time.sleep(0.05)
    if client is not None:
        client.close()
    mib = BLOCK / (1 << 20)
    reads = sum(ok)
    return {
        "metrics": [
            {
                "name": "read_iops",
                "stat": "mean",
                "value": reads / seconds,
                "unit": "IO/s",
            },
            {
                "name": "read_bw_mib_s",
                "stat": "mean",
                "value": round(reads * mib / seconds, 6),
                "unit": "MiB/s",
            },
            {
                "name": "read_errors",
                "stat": "total",
                "value": sum(failed),
                "unit": "count",
            },
        ],
        "series": [
            {
                "name": "throughput",
                "unit": "MiB/s",
                "points": [[i + 1, round(n * mib, 6)] for i, n in enumerate(ok)],
            },
            {
                "name": "errors",
                "unit": "count",
                "points": [[i + 1, n] for i, n in enumerate(failed)],
            },
        ],
    }
