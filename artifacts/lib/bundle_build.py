"""``reprogate bundle build DIR --key KEY -o OUT.tar.gz``: a signed bundle
(docs/bundle-format.md) from a folder of readable sources.

The folder holds the bundle's files and, optionally, ``bundle.json``: the manifest
template (``rfp``, ``vendor``, ``harness``, ``claims``, ``supersedes``,
``changes``, ``kinds``, ``approach``, ``workloads`` and ``x-…`` extensions). The
build lists every file with its size, SHA-256 and kind, writes ``manifest.json``,
signs it as ``ssh-keygen -Y sign -n reprogate-bundle`` would
(``manifest.json.sig``) and writes a deterministic tar.gz.

Decisions:
- Nothing is skipped except ``bundle.json`` at the root: hidden files are
  bundled; links, devices, FIFOs and sockets are refused, never followed.
- Kinds come from ``bundle.json``'s ``kinds`` (a file path, or a folder ending in
  ``/``, mapped to a kind; the longest match wins), else from the top-level folder.
- Reproducible bytes: members in a fixed order (``manifest.json``,
  ``manifest.json.sig``, then the files sorted by path, so a streaming reader
  meets the listing first), mtime ``SOURCE_DATE_EPOCH`` or the manifest's
  ``created``, owner 0/0 with empty names, mode 0644 (0755 for the entrypoint),
  pax format, gzip header without name and with mtime 0. Ed25519 and RSA
  signatures are deterministic, so the whole archive is; ECDSA signatures are
  randomised, so only the archive members other than the signature repeat.
- Each file is hashed once to write the manifest and again while it is archived;
  a file that changed in between fails the build instead of giving a bundle
  that the server would reject.

Reading the source folder (files, kinds, ``bundle.json``, limits) lives in
``artifacts.lib.bundle_sources``; its names are re-exported here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, cast

from artifacts.lib.bundle_sources import (
    CHUNK_SIZE,
    FOLDER_KINDS,
    MAX_STORED_PATH,
    MAX_TEMPLATE_BYTES,
    TEMPLATE_KEYS,
    TEMPLATE_NAME,
    BuildError,
    SourceFile,
    collect_files,
    hash_file,
    kind_for,
    kind_rules,
    load_template,
    source_files,
)
from artifacts.lib.manifest import (
    MANIFEST_NAME,
    SCHEMA_ID,
    SIGNATURE_NAME,
    parse_manifest,
)
from artifacts.lib.signatures import SignatureError, sshsig
from artifacts.lib.signatures.sshkeys import SshPrivateKey, load_private_key

__all__ = [  # the source folder's names stay importable from here
    "CHUNK_SIZE",
    "FOLDER_KINDS",
    "MAX_STORED_PATH",
    "MAX_TEMPLATE_BYTES",
    "TEMPLATE_KEYS",
    "TEMPLATE_NAME",
    "BuildError",
    "BuildResult",
    "SourceFile",
    "build_bundle",
    "collect_files",
    "created_and_mtime",
    "kind_for",
    "load_key",
    "load_template",
    "manifest_bytes",
    "parse_created",
    "source_date_epoch",
    "write_archive",
]

MAX_KEY_BYTES: Final = 64 * 1024


@dataclass(frozen=True)
class BuildResult:
    output: Path
    manifest: bytes
    signature: str
    files: tuple[SourceFile, ...]
    size: int
    sha256: str  # of the archive
    fingerprint: str


# --- time -------------------------------------------------------------------------


def parse_created(text: str) -> datetime:
    """``--created``: an RFC 3339 time with a zone (``Z`` or an offset)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BuildError(
            f"--created {text!r} is not an RFC 3339 time like 2026-11-29T12:00:00Z."
        ) from None
    if moment.tzinfo is None:
        raise BuildError(f"--created {text!r} needs a zone: end it with Z.")
    return moment.astimezone(UTC).replace(microsecond=0)


def source_date_epoch(environ: Mapping[str, str]) -> int | None:
    value = environ.get("SOURCE_DATE_EPOCH")
    if value is None or value == "":
        return None
    if not value.isdigit():
        raise BuildError(f"SOURCE_DATE_EPOCH={value!r} is not a number of seconds.")
    return int(value)


def created_and_mtime(
    created: datetime | None, environ: Mapping[str, str]
) -> tuple[datetime, int]:
    """``created`` from ``--created``, else SOURCE_DATE_EPOCH, else now (UTC);
    member mtimes from SOURCE_DATE_EPOCH, else ``created``."""
    epoch = source_date_epoch(environ)
    if created is None:
        created = (
            datetime.fromtimestamp(epoch, UTC)
            if epoch is not None
            else datetime.now(UTC)
        )
    created = created.astimezone(UTC).replace(microsecond=0)
    return created, epoch if epoch is not None else int(created.timestamp())


# --- manifest ---------------------------------------------------------------------


def manifest_bytes(
    template: Mapping[str, Any],
    files: list[SourceFile],
    *,
    rfp: str | None,
    vendor: str | None,
    created: datetime,
) -> bytes:
    """The manifest, pretty-printed UTF-8 with a final newline."""
    document: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "rfp": rfp if rfp is not None else template.get("rfp"),
        "vendor": vendor if vendor is not None else template.get("vendor"),
        "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": [
            {"path": f.path, "sha256": f.sha256, "size": f.size, "kind": f.kind}
            for f in files
        ],
        "harness": template.get("harness"),
        "claims": template.get("claims", []),
    }
    for key in ("approach", "workloads"):  # the requirements' vocabulary, optional
        if key in template:
            document[key] = template[key]
    for key in ("rfp", "vendor", "harness"):
        if document[key] is None:
            del document[key]  # reported by the schema check as required
    for key in ("supersedes", "changes"):  # an update bundle's (after the award)
        if key in template:
            document[key] = template[key]
    document.update({k: v for k, v in template.items() if k.startswith("x-")})
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _check_manifest(data: bytes) -> None:
    result = parse_manifest(data)
    if not result.ok:
        raise BuildError(
            "The manifest made from bundle.json and the folder is not valid "
            "(fix bundle.json, or give --rfp/--vendor):",
            list(result.problems),
        )


# --- archive ----------------------------------------------------------------------


class _CheckedReader:
    """Reads a file for the archive, hashing what goes in."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.hasher = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.hasher.update(data)
        return data


def _member(name: str, size: int, mtime: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, mtime, mode
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def _add_file(tar: tarfile.TarFile, item: SourceFile, mtime: int, mode: int) -> None:
    with item.source.open("rb") as handle:
        reader = _CheckedReader(handle)
        try:
            tar.addfile(
                _member(item.path, item.size, mtime, mode), cast(IO[bytes], reader)
            )
        except OSError:
            raise BuildError(
                f"{item.path} shrank while the bundle was written."
            ) from None
    if reader.hasher.hexdigest() != item.sha256:
        raise BuildError(f"{item.path} changed while the bundle was written.")


def write_archive(
    output: Path,
    *,
    manifest: bytes,
    signature: bytes,
    files: list[SourceFile],
    mtime: int,
    entrypoint: str | None,
) -> None:
    """Write the tar.gz to a temporary file beside ``output``, then rename it."""
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed or removed below
        dir=output.parent, prefix=f".{output.name}.", suffix=".tmp", delete=False
    )
    try:
        with (
            handle,
            gzip.GzipFile(
                filename="", mode="wb", fileobj=handle, compresslevel=9, mtime=0
            ) as packed,
            tarfile.open(
                fileobj=packed, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8"
            ) as tar,
        ):
            for name, data in ((MANIFEST_NAME, manifest), (SIGNATURE_NAME, signature)):
                tar.addfile(_member(name, len(data), mtime, 0o644), io.BytesIO(data))
            for item in files:
                _add_file(tar, item, mtime, 0o755 if item.path == entrypoint else 0o644)
        os.chmod(handle.name, 0o644)  # a bundle is meant to be shared
        os.replace(handle.name, output)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


# --- the command ------------------------------------------------------------------


def _comment_beside(path: Path) -> str:
    """The comment of ``KEY.pub`` (what ``ssh-keygen`` wrote), if it is there."""
    public = path.with_name(path.name + ".pub")
    try:
        fields = public.read_text("utf-8").split(None, 2)
    except (OSError, UnicodeDecodeError):
        return ""
    return fields[2].strip() if len(fields) == 3 else ""


def load_key(path: Path) -> SshPrivateKey:
    try:
        if path.stat().st_size > MAX_KEY_BYTES:
            raise BuildError(f"{path} is too large to be a private key.")
        data = path.read_bytes()
    except OSError as error:
        raise BuildError(f"cannot read the key {path}: {error.strerror}") from None
    try:
        return load_private_key(data, comment=_comment_beside(path))
    except SignatureError as error:
        raise BuildError(f"{path}: {error.message} ({error.code})") from None


def _check_paths(root: Path, output: Path) -> None:
    if not root.is_dir():
        raise BuildError(f"{root} is not a folder.")
    if output.resolve().is_relative_to(root.resolve()):
        raise BuildError("Write the bundle outside the folder it is built from.")
    if not output.parent.is_dir():
        raise BuildError(f"The folder {output.parent} does not exist.")


def build_bundle(
    root: Path,
    *,
    key: SshPrivateKey,
    output: Path,
    rfp: str | None = None,
    vendor: str | None = None,
    created: datetime | None = None,
    environ: Mapping[str, str] | None = None,
) -> BuildResult:
    """Build, sign and write the bundle; ``BuildError`` lists what is wrong."""
    _check_paths(root, output)
    template = load_template(root)
    files = source_files(root, kind_rules(template))
    created, mtime = created_and_mtime(
        created, os.environ if environ is None else environ
    )
    manifest = manifest_bytes(template, files, rfp=rfp, vendor=vendor, created=created)
    _check_manifest(manifest)
    signature = sshsig.sign(manifest, key)
    sshsig.verify(manifest, signature, public_keys=[key.public])
    harness = template.get("harness")
    entrypoint = harness.get("entrypoint") if isinstance(harness, dict) else None
    write_archive(
        output,
        manifest=manifest,
        signature=signature.encode("ascii"),
        files=files,
        mtime=mtime,
        entrypoint=entrypoint,
    )
    size, digest = hash_file(output)
    return BuildResult(
        output, manifest, signature, tuple(files), size, digest, key.public.fingerprint
    )
