"""A signed benchmark bundle of a given size: a few large traces plus many small
files, all random bytes (incompressible, so a tar.gz is as large as its tar).

``make_bundle(out_dir, total_bytes=…)`` writes the source folder, builds the
bundle with the vendor CLI's builder (``artifacts.lib.bundle_build``: sorted
members, pax headers, signed manifest) for ``tgz``, or with ``tarfile`` and
``artifacts.lib.signatures.sshsig`` for a plain ``tar``, removes the sources (unless
asked to keep them) and returns the archive with the public key that verifies it.

    python -m tests.perf.make_bundle --size 1GiB [--format tar] [-o DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives.asymmetric import ed25519

from artifacts.lib.manifest import MANIFEST_NAME, SCHEMA_ID, SIGNATURE_NAME
from artifacts.lib.signatures import sshsig
from artifacts.lib.signatures.sshkeys import SshPrivateKey, SshPublicKey

MiB: Final = 1024 * 1024
CHUNK: Final = 1 * MiB
RFP: Final = "RFP-BENCH-1"
VENDOR: Final = "acme-flash"
SMALL_FILES: Final = 2_000
LARGE_FILES: Final = 4
SMALL_MIN, SMALL_MAX = 1024, 8 * 1024  # bytes of one small file
UNITS: Final = {"": 1, "b": 1, "kib": 1024, "mib": MiB, "gib": 1024 * MiB}
FOLDER_KINDS: Final = {
    "harness": "harness",
    "environment": "environment",
    "workloads": "workload",
    "cost": "cost_model",
    "traces": "trace",
}
HARNESS: Final = {
    "entrypoint": "harness/run.sh",
    "outputs": [{"path": "fio.json", "parser": "fio-json"}],
    "scenarios": [
        {
            "name": "cold-c32",
            "cache": "cold",
            "concurrency": 32,
            "batch_size": 8,
            "duration_s": 60,
        }
    ],
}
CLAIMS: Final = [
    {"metric": "ttft_ms", "stat": "p99", "scenario": "cold-c32", "value": 180.0,
     "unit": "ms"}
]  # fmt: skip
ENVIRONMENT: Final = {
    "os": "Debian 12",
    "kernel": "6.1.0",
    "driver": "nvme 1.0",
    "firmware": "FW1.0",
    "nvmeof": {"transport": "tcp", "topology": "1x1"},
}
FIXED_FILES: Final = {
    "harness/run.sh": b"#!/bin/sh\nexec fio --output-format=json jobs.fio\n",
    "environment/manifest.json": json.dumps(ENVIRONMENT).encode(),
    "workloads/llama70b-chat.json": b'{"model": "llama-70b", "prompts": 1000}\n',
    "cost/model.json": b'{"currency": "EUR", "capex": 100000}\n',
}


@dataclass(frozen=True)
class BenchBundle:
    path: Path
    format: str
    size: int  # bytes of the archive
    payload_bytes: int  # bytes of the listed files
    files: int  # listed files
    public_key_line: str  # "ssh-ed25519 AAAA… comment": register it to verify
    rfp: str = RFP
    vendor: str = VENDOR


def parse_size(text: str) -> int:
    """``1GiB``, ``100MiB``, ``512KiB`` or a byte count."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]iB|B)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GiB, 100MiB)")
    return int(match[1]) * UNITS[(match[2] or "").lower()]


def new_key(comment: str = "bench@reprogate") -> SshPrivateKey:
    private = ed25519.Ed25519PrivateKey.generate()
    return SshPrivateKey(
        private, SshPublicKey.from_cryptography(private.public_key(), comment)
    )


def _write_random(path: Path, size: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    hasher = hashlib.sha256()
    with path.open("wb") as handle:
        left = size
        while left:
            chunk = os.urandom(min(CHUNK, left))
            hasher.update(chunk)
            handle.write(chunk)
            left -= len(chunk)
    return hasher.hexdigest()


def _plan(total_bytes: int, small_files: int, large_files: int) -> dict[str, int]:
    """Bundle path -> size of the random files, summing to what is left of
    ``total_bytes`` after the fixed files."""
    rng = random.Random(total_bytes)  # noqa: S311 - sizes, not secrets
    small = {
        f"traces/runs/run-{i // 100:03d}/sample-{i:05d}.json": rng.randint(
            SMALL_MIN, SMALL_MAX
        )
        for i in range(small_files)
    }
    left = total_bytes - sum(map(len, FIXED_FILES.values())) - sum(small.values())
    if left < large_files:
        raise ValueError(
            f"{total_bytes} bytes cannot hold {small_files} small files "
            f"and {large_files} large traces"
        )
    each, extra = divmod(left, large_files)
    large = {
        f"traces/fio-job{i}.bin": each + (extra if i == 0 else 0)
        for i in range(large_files)
    }
    return {**large, **small}


def write_sources(
    root: Path, total_bytes: int, small_files: int, large_files: int
) -> dict[str, tuple[int, str]]:
    """The bundle's files under ``root``: path -> (size, sha256)."""
    files: dict[str, tuple[int, str]] = {}
    for name, data in FIXED_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        files[name] = (len(data), hashlib.sha256(data).hexdigest())
    for name, size in _plan(total_bytes, small_files, large_files).items():
        files[name] = (size, _write_random(root / name, size))
    return files


def _kind(path: str) -> str:
    return FOLDER_KINDS.get(path.split("/", 1)[0], "other")


def _manifest(files: dict[str, tuple[int, str]]) -> bytes:
    document = {
        "schema": SCHEMA_ID,
        "rfp": RFP,
        "vendor": VENDOR,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": [
            {"path": p, "sha256": files[p][1], "size": files[p][0], "kind": _kind(p)}
            for p in sorted(files)
        ],
        "harness": HARNESS,
        "claims": CLAIMS,
    }
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def _tar_member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, 1_700_000_000, 0o644
    return info


def write_tar(
    output: Path, root: Path, files: dict[str, tuple[int, str]], key: SshPrivateKey
) -> None:
    """A plain tar: manifest, signature, then the files sorted by path."""
    manifest = _manifest(files)
    signature = sshsig.sign(manifest, key).encode("ascii")
    with tarfile.open(output, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in ((MANIFEST_NAME, manifest), (SIGNATURE_NAME, signature)):
            tar.addfile(_tar_member(name, len(data)), io.BytesIO(data))
        for name in sorted(files):
            with (root / name).open("rb") as handle:
                tar.addfile(_tar_member(name, files[name][0]), handle)


def _build_tgz(output: Path, root: Path, key: SshPrivateKey) -> bool:
    """Build with the vendor CLI's builder; False if it is not there."""
    try:
        from artifacts.lib.bundle_build import build_bundle
    except ImportError:
        return False
    template = {"rfp": RFP, "vendor": VENDOR, "harness": HARNESS, "claims": CLAIMS}
    (root / "bundle.json").write_text(json.dumps(template), "utf-8")
    build_bundle(root, key=key, output=output, environ={})
    return True


def make_bundle(
    out_dir: Path,
    *,
    total_bytes: int,
    fmt: str = "tgz",
    small_files: int = SMALL_FILES,
    large_files: int = LARGE_FILES,
    key: SshPrivateKey | None = None,
    keep_sources: bool = False,
) -> BenchBundle:
    """Write ``bundle.tar.gz`` (or ``bundle.tar``) of about ``total_bytes`` of
    files into ``out_dir``. ``keep_sources``: leave the source folder in
    ``out_dir`` (the benchmark deletes it after measuring: see
    tests/perf/README.md on deleting many files just before an ingest)."""
    key = key or new_key()
    output = out_dir / ("bundle.tar" if fmt == "tar" else "bundle.tar.gz")
    root = Path(tempfile.mkdtemp(prefix="sources-", dir=out_dir))
    try:
        files = write_sources(root, total_bytes, small_files, large_files)
        if fmt == "tar" or not _build_tgz(output, root, key):
            fmt = "tar"
            output = output.with_name("bundle.tar")
            write_tar(output, root, files, key)
    finally:
        if not keep_sources:
            shutil.rmtree(root)
    return BenchBundle(
        path=output,
        format=fmt,
        size=output.stat().st_size,
        payload_bytes=sum(size for size, _ in files.values()),
        files=len(files),
        public_key_line=f"{key.public.openssh} {key.public.comment}".strip(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=parse_size, default=parse_size("100MiB"))
    parser.add_argument("--format", choices=("tgz", "tar"), default="tgz")
    parser.add_argument("--small-files", type=int, default=SMALL_FILES)
    parser.add_argument("-o", "--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    out_dir = args.out_dir or Path(tempfile.mkdtemp(prefix="reprogate-bench-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    bundle = make_bundle(
        out_dir, total_bytes=args.size, fmt=args.format, small_files=args.small_files
    )
    print(f"{bundle.path}  {bundle.size} bytes, {bundle.files} files")
    print(f"public key: {bundle.public_key_line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
