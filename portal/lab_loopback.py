"""The lab agent's run path in process: the agent's own ``execute_run``
(``reprogate_agent.execute``) talking to the runner API through Django's test
client instead of HTTP. The same views, host token, claims, uploads and ends as
any lab host; no server, no broker, no second implementation of a run.

The demo seed's synchronous lab validation (``seed_demo --lab-validation``)
executes its runs so, and the tests that need a run executed in process reuse it.
``loopback_agent`` issues a host token on the pool for the duration (revoking one
left over by an interrupted earlier use), says hello with this machine's
environment and its host key (``VAR_DIR/lab-loopback/<name>/host_key.pem``,
made at its first use and kept: the server pins it, so the runs' statements
verify as any lab host's), and revokes the token at the end."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

import urllib3
from django.conf import settings
from django.test import Client

from artifacts.lib.signatures.statement import public_key_pem
from benchmarks import conf
from benchmarks.lib.environment import capture_environment
from benchmarks.lib.sandbox import sandbox_capabilities
from benchmarks.lib.sandbox.reporting import json_safe
from benchmarks.lib.signing import host_key_load_or_create
from benchmarks.models import HostToken, LabPool, Run
from benchmarks.services.host_tokens import host_token_issue, host_token_revoke
from reprogate_agent.client import RunnerClient
from reprogate_agent.execute import Terms, execute_run

# The agent's base URL: never dialled, the test client answers every request.
LOOPBACK_URL: Final = "http://127.0.0.1"


def _host() -> str:
    """A name the installation accepts in ``Host`` (its ALLOWED_HOSTS)."""
    for host in settings.ALLOWED_HOSTS:
        if host and "*" not in host and not host.startswith("."):
            return str(host)
    return "testserver"


class LoopbackRunnerClient(RunnerClient):
    """A ``RunnerClient`` whose transport is Django's test client: each call is
    handled by the runner API's views in this process (and this thread: inside
    the caller's transaction, if it holds one)."""

    def __init__(self, token: str) -> None:
        super().__init__(LOOPBACK_URL, token, retries=0)
        self._django = Client(raise_request_exception=True)
        self._host = _host()

    def _send(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None,
        headers: dict[str, str],
        *,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        data = b"" if body is None else body if isinstance(body, bytes) else body.read()
        sent = {
            k: v
            for k, v in {**self._headers, **headers}.items()
            if k.lower() not in ("content-type", "content-length")
        }
        response = self._django.generic(
            method,
            path,
            data=data,
            content_type=headers.get("Content-Type", "application/octet-stream"),
            secure=True,
            headers={**sent, "Host": self._host},
        )
        if response.streaming:
            # Read whole, the test client's wrapper closes the response (without
            # closing the database connection, as a second close() here would).
            content = b"".join(response.streaming_content)  # type: ignore[attr-defined]
        else:
            content = response.content
        # The body is whole here: no Content-Length for urllib3 to hold it to (a
        # body shorter than its stated length reads as a broken connection).
        answer_headers = {
            k: v for k, v in response.items() if k.lower() != "content-length"
        }
        return urllib3.HTTPResponse(
            body=io.BytesIO(content),
            headers=answer_headers,
            status=response.status_code,
            preload_content=not stream,
            decode_content=False,
        )


@dataclass(frozen=True)
class LoopbackAgent:
    client: LoopbackRunnerClient
    terms: Terms
    work_dir: Path

    def execute(self, run: Run) -> str:
        """Execute ``run``'s current attempt as a lab host would; what happened."""
        return execute_run(self.client, self.terms, self.work_dir, run.pk, run.attempt)


@contextlib.contextmanager
def loopback_agent(pool: LabPool, name: str) -> Iterator[LoopbackAgent]:
    """An agent of ``pool`` named ``name`` (its token's name; its worker is
    ``<name>@<hostname>``), registered for the block; its token is revoked
    after it."""
    for old in HostToken.objects.filter(pool=pool, name=name, revoked_at=None):
        host_token_revoke(token=old, actor=None)
    issued = host_token_issue(pool=pool, name=name, actor=None)
    hostname = socket.gethostname()
    worker = f"{name}@{hostname}"[:255]
    client = LoopbackRunnerClient(issued.raw)
    key = host_key_load_or_create(Path(settings.VAR_DIR) / "lab-loopback" / name)
    try:
        answer = client.hello(
            {
                "worker_name": worker,
                "hostname": hostname,
                "pid": os.getpid(),
                "environment": json_safe(capture_environment()),
                "sandbox": json_safe(sandbox_capabilities()),
                "signing_key": public_key_pem(key).decode("ascii"),
            }
        )
        work_dir = Path(conf.work_dir() or tempfile.gettempdir())
        yield LoopbackAgent(
            client, Terms.from_hello(worker, answer, host_key=key), work_dir
        )
    finally:
        client.close()
        token = HostToken.objects.get(pk=issued.token.pk)
        if token.revoked_at is None:
            host_token_revoke(token=token, actor=None)
