"""Downloading evidence packages through the API and tampering with them."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.test import Client

from artifacts.models import Bundle


def download(client: Client, bundle: Bundle) -> Any:
    return client.get(f"/api/v1/bundles/{bundle.public_id}/evidence/")


def download_to(client: Client, bundle: Bundle, path: Path) -> Path:
    response = download(client, bundle)
    assert response.status_code == 200, response.content
    path.write_bytes(b"".join(response.streaming_content))
    return path


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rewrite(
    source: Path,
    target: Path,
    change: Callable[[dict[str, bytes]], dict[str, bytes]],
) -> Path:
    """A copy of the package with its members changed by ``change``."""
    files = change(members(source))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return target


def replaced(source: Path, target: Path, name: str, data: bytes) -> Path:
    """A copy of the package with member ``name`` holding ``data``."""
    return rewrite(source, target, lambda files: {**files, name: data})


def without(source: Path, target: Path, name: str) -> Path:
    """A copy of the package without member ``name``."""
    return rewrite(
        source, target, lambda files: {k: v for k, v in files.items() if k != name}
    )


def flip(data: bytes, position: int) -> bytes:
    """``data`` with the bits of one byte inverted (never a no-op)."""
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1 :]


def flip_bit(data: bytes, position: int) -> bytes:
    """``data`` with the lowest bit of one byte flipped (stays ASCII)."""
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1 :]
