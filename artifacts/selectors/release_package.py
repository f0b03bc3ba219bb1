"""The released deposits as one streamed zip for the buyer organisation:
``certificate.json`` (the certificate's exact bytes), ``blobs/<sha256>`` for
every digest it lists (read through the escrow storage: on S3 by the recorded
version id) and a ``README.txt`` saying how to check one against the other."""

from __future__ import annotations

from collections.abc import Iterator

from artifacts.lib.evidence.layout import blob_name
from artifacts.lib.evidence.zipstream import Member, bytes_member, stream_zip
from artifacts.models import Blob, Release
from artifacts.selectors.release import release_items
from artifacts.storage.object_lock import deposit_blob_open

CERTIFICATE = "certificate.json"


def release_filename(release: Release) -> str:
    return f"release-{release.rfp.reference}-{release.organisation.slug}.zip"


def _readme(release: Release) -> bytes:
    return (
        f"Escrow release {release.public_id}\n"
        f"RFP {release.rfp.reference}, vendor {release.organisation.slug}\n\n"
        f"certificate.json lists every released deposit (its log index and leaf\n"
        f"hash) and every released blob by SHA-256 and size; its own SHA-256,\n"
        f"{release.certificate_sha256},\n"
        f"is in the leaf of the log's release.executed entry.\n\n"
        f"Check each blob by hand:  sha256sum blobs/*  (the file name is the\n"
        f"digest it must hash to).\n"
    ).encode()


def _blobs(release: Release) -> list[Blob]:
    unique: dict[str, Blob] = {}
    for item in release_items(release):
        unique.setdefault(item.blob.sha256, item.blob)
    return sorted(unique.values(), key=lambda blob: blob.sha256)


def release_package_members(release: Release) -> Iterator[Member]:
    yield bytes_member(CERTIFICATE, bytes(release.certificate))
    yield bytes_member("README.txt", _readme(release))
    for blob in _blobs(release):
        yield Member(
            blob_name(blob.sha256),
            lambda blob=blob: deposit_blob_open(blob),  # type: ignore[misc]
            blob.size,
            compress=False,
        )


def release_package_stream(release: Release) -> Iterator[bytes]:
    return stream_zip(release_package_members(release))
