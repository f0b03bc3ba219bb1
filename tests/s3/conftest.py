"""The S3 path against a real S3-compatible HTTP server on loopback: moto's server
mode (``python -m moto.server``) in a subprocess, one per test session, its state
reset before every test. Not an in-process mock: boto3 and django-storages talk
HTTP to it exactly as they would to S3.

If moto cannot start, the tests are skipped, except on CI (``CI=true``) where
they fail: the S3 path must be proven there."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HOST = "127.0.0.1"
BUCKET = "artifacts"
LOCKED_BUCKET = "artifacts-locked"
CREDENTIALS = {"access_key": "test", "secret_key": "test", "region_name": "us-east-1"}
START_TIMEOUT_S = 30.0


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the loopback S3 server is required on CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _post(url: str, timeout: float = 5.0) -> None:
    request = urllib.request.Request(url, data=b"", method="POST")  # noqa: S310
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        response.read()


def _wait_until_up(process: subprocess.Popen[bytes], endpoint: str) -> str | None:
    """None once the server answers; else why it did not."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"moto.server exited with status {process.returncode}"
        try:
            _post(f"{endpoint}/moto-api/reset", timeout=1.0)
            return None
        except (OSError, urllib.error.URLError):
            time.sleep(0.1)
    return f"moto.server did not answer within {START_TIMEOUT_S:.0f} s"


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The endpoint URL of a moto server started for this session."""
    try:
        import moto.server  # noqa: F401
    except ImportError as error:
        _unavailable(f"moto[server] is not installed ({error})")
    endpoint = f"http://{HOST}:{(port := _free_port())}"
    log: Path = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        if (failure := _wait_until_up(process, endpoint)) is not None:
            tail = log.read_text("utf-8", "replace")[-2000:]
            _unavailable(f"{failure}\n{tail}")
        yield endpoint
    finally:
        _stop(process)


@pytest.fixture
def s3_endpoint(moto_server: str) -> str:
    """The server's endpoint, with every bucket and object of earlier tests gone."""
    _post(f"{moto_server}/moto-api/reset")
    return moto_server


@dataclass(frozen=True)
class S3Setup:
    endpoint: str
    bucket: str
    locked_bucket: str
    client: Any  # a boto3 S3 client

    def object_keys(self, bucket: str | None = None) -> list[str]:
        """Every object key in ``bucket`` (default: the storage's bucket)."""
        paginator = self.client.get_paginator("list_objects_v2")
        pages = paginator.paginate(Bucket=bucket or self.bucket)
        return sorted(
            item["Key"] for page in pages for item in page.get("Contents", ())
        )

    def read(self, key: str, bucket: str | None = None) -> bytes:
        response = self.client.get_object(Bucket=bucket or self.bucket, Key=key)
        return bytes(response["Body"].read())


def s3_options(endpoint: str, bucket: str) -> dict[str, Any]:
    """django-storages ``S3Storage`` options for the loopback server."""
    return {
        "bucket_name": bucket,
        "endpoint_url": endpoint,
        "access_key": CREDENTIALS["access_key"],
        "secret_key": CREDENTIALS["secret_key"],
        "region_name": CREDENTIALS["region_name"],
        "addressing_style": "path",
        "signature_version": "s3v4",
        "file_overwrite": False,
        "default_acl": None,
    }


def _client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["access_key"],
        aws_secret_access_key=CREDENTIALS["secret_key"],
        region_name=CREDENTIALS["region_name"],
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"),
    )


@pytest.fixture
def s3_storage(settings: Any, s3_endpoint: str) -> S3Setup:
    """Django's default storage is S3 (django-storages) on the loopback server, in
    bucket ``artifacts``; ``artifacts-locked`` has S3 Object Lock enabled."""
    client = _client(s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    client.create_bucket(Bucket=LOCKED_BUCKET, ObjectLockEnabledForBucket=True)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": s3_options(s3_endpoint, BUCKET),
        },
    }
    return S3Setup(s3_endpoint, BUCKET, LOCKED_BUCKET, client)
